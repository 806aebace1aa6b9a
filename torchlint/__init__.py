"""torchlint: a linter and autofixer for PyTorch code."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# In a source checkout the rules live beside the package, in ../rules, and an install maps
# them to torchlint.rules. When torchlint is imported from the checkout itself (python -m
# torchlint run from the clone's root after a non-editable install, a worktree, a test run),
# the installed mapping is not the one in use: look for torchlint.rules beside the package
# too, so that the checkout's own rules are found whichever way the package was installed.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).resolve().parent / "rules").is_dir() and (
        _checkout / "rules" / "__init__.py").is_file() and (
        _checkout / "pyproject.toml").is_file():
    __path__.append(str(_checkout))  # type: ignore[name-defined]  # noqa: F821
