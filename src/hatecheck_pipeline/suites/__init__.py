"""Suites layer: every evaluation suite (held-out test splits, HateCheck,
MHC languages, expanded suites) with its kind and origin as data, and the
seeded case sample shared by prediction and scoring."""
