"""Bias and explainability audits (CrowS-Pairs, HateXplain, target-group AUCs)."""
