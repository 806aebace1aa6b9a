"""Which files are tests, for the module-definition rules: tests build modules to check
behaviour (no hooks on them, parameters missing on purpose)."""

from __future__ import annotations

import os

from torchlint.analysis.context import FileContext

_TEST_FOLDERS = ("test", "tests", "testing")


def in_test_suite(ctx: FileContext) -> bool:
    """``ctx.is_test_file``, and also a file of a package kept in a test folder
    (``tests/tests_pkg/helpers/models.py``): the folder above the outermost package is
    then the test folder itself, which ``is_test_file`` does not look at. That folder
    counts only inside the current directory, never as it or above it."""
    if ctx.is_test_file:
        return True
    if ctx.project is None or not ctx.project.roots:
        return False
    top = os.path.abspath(ctx.project.roots[0])
    here = os.path.abspath(os.getcwd())
    return os.path.basename(top) in _TEST_FOLDERS and top.startswith(os.path.join(here, ""))
