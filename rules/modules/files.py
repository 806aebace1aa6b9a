"""Which files of a project are tests, for the module-definition rules: tests build modules
to check behaviour (no hooks on them, parameters missing on purpose)."""

from __future__ import annotations

import os


def is_test_file(path: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or any file under a ``tests`` folder."""
    base = os.path.basename(path)
    parts = os.path.normpath(path).replace(os.sep, "/").split("/")[:-1]
    return (base.startswith("test_") and base.endswith(".py") or base.endswith("_test.py")
            or base == "conftest.py" or any(p in ("test", "tests", "testing") for p in parts))
