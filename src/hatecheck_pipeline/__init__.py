"""Reproducible functional testing of hate-speech detection models across languages."""

__version__ = "0.1.0"
