"""Linting one source: parse safety, the prefilter, one walk for every rule, positions and ``# noqa``."""
