"""TL5: tensor operations."""
