"""Learned fusion: the model that ranks a recall's candidates, and its training on feedback."""
