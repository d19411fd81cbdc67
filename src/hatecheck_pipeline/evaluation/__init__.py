"""Evaluation layer: metrics, scoring of predictions files, the papers'
published figures and the aggregate tables."""
