"""torchlint's rules: one module per rule, found by :mod:`torchlint.registry`."""
