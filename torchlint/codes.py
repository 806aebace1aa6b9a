"""The codes the engine itself reports, and the one way to build a syntax-error finding.

TL001 (a file that cannot be read or parsed) and TL002 (a ``# noqa`` that suppresses
nothing) are not found by a rule's walk: the engine and the runner report them. Their
rule classes in ``torchlint.rules.tool`` only document them.
"""

from __future__ import annotations

from torchlint.diagnostic import Diagnostic

SYNTAX_ERROR = "TL001"
SYNTAX_ERROR_NAME = "syntax-error"
UNUSED_NOQA = "TL002"
UNUSED_NOQA_NAME = "unused-noqa"
ENGINE_CODES = frozenset({SYNTAX_ERROR, UNUSED_NOQA})


def syntax_error_at(path: str, line: int, column: int, message: str) -> Diagnostic:
    """A TL001 finding: ``path`` cannot be read or parsed, at ``line``:``column``."""
    return Diagnostic(path, line, column, line, column, SYNTAX_ERROR, SYNTAX_ERROR_NAME, message)
