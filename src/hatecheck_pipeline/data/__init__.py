"""Data layer: raw sources (download/mirror with sha256), one spec per
dataset, harmonisation with quarantine, great-expectations validation and
text preprocessing schemes."""
