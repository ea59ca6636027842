"""The model-based check of the whole promise (issue 29): ``pytest tests/model``."""
