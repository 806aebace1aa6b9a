"""Is a file test code? Decided from its path alone (no libcst: the screen asks it too)."""

from __future__ import annotations

import os


def is_test_file(path: str, project_root: str | None) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or a file under a ``test``, ``tests``
    or ``testing`` folder: code that exercises behaviour on purpose. Folders count from the
    directory of the run when the file is inside it (so a package kept in ``tests/``, such
    as ``tests/tests_pkg/helpers/models.py``, is tests), otherwise from the folder above
    the file's outermost package (``project_root``; None: the run's directory)."""
    here = os.getcwd()
    inside_run = os.path.abspath(path).startswith(os.path.join(here, ""))
    root = here if inside_run or project_root is None else project_root
    return _is_test_path(path, root)


def _is_test_path(path: str, root: str) -> bool:
    """Folders count only inside the project (``root``), never above it: a project kept
    under ``~/tests/`` is not a test suite."""
    base = os.path.basename(path)
    absolute = os.path.abspath(path)
    inside = absolute.startswith(os.path.join(os.path.abspath(root), ""))
    relative = os.path.relpath(absolute, root) if inside else base
    folders = relative.replace(os.sep, "/").split("/")[:-1]
    return (base.startswith("test_") and base.endswith(".py") or base.endswith("_test.py")
            or base == "conftest.py" or any(f in ("test", "tests", "testing") for f in folders))
