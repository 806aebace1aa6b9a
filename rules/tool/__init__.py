"""TL0: the tool itself (syntax errors, unused ``# noqa``), implemented by the engine."""
