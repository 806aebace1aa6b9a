"""torchlint: a linter and autofixer for PyTorch code."""

__version__ = "0.1.0"
