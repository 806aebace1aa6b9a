"""TL9: data loading."""
