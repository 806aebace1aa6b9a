"""TL4: train/eval mode and inference."""
