"""TL8: multi-GPU."""
