"""What a run is asked to do with a file (:class:`Mode`) and what came of it
(:class:`FileOutcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchlint.diagnostic import Diagnostic, applicable

if TYPE_CHECKING:
    from torchlint.analysis.project import Dependency


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # write fixes to the file
    unsafe: bool = False  # include unsafe fixes
    diff: bool = False  # compute the diff of the fixes, write nothing


@dataclass
class FileOutcome:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)  # what remains
    fixed: int = 0
    diff: str = ""
    fixed_text: str | None = None  # for stdin: the fixed source
    error: str | None = None  # the file could not be (fully) checked: said on one line
    # the file was skipped (over max-file-size): said on one line, the exit status unchanged
    warning: str | None = None
    # the project's files the result learned from (a cached result depends on them)
    dependencies: list[Dependency] = field(default_factory=list)
    # with fixes: how many findings the first lint had (None: not known), and the codes fixed
    found: int | None = None
    fixed_codes: tuple[tuple[str, int], ...] = ()
    # fixes made but not written (the file could not be written: ``error`` says why)
    unwritten: int = 0
    # findings that --preview would add (preview rules and preview shapes of rules)
    preview_only: int = 0
    cached: bool = False  # answered from the cache
    seconds: float = 0.0  # time spent on the file (0 for a cache hit)


def cached_result_suffices(diagnostics: list[Diagnostic], mode: Mode) -> bool:
    """A cached lint result stands for the whole outcome unless there is a fix to apply."""
    if not (mode.fix or mode.diff):
        return True
    return not any(applicable(d, mode.unsafe) for d in diagnostics)


def cannot_fix(exc: OSError | UnicodeError) -> str:
    """The error of a file whose fixes could not be written."""
    if isinstance(exc, PermissionError) and exc.strerror == "read-only":
        why = "read-only"
    elif isinstance(exc, OSError):
        why = f"cannot write it: {exc.strerror or exc}"
    else:
        why = f"cannot encode the fixed text: {exc}"
    return f"{CANNOT_FIX}{why}"


CANNOT_FIX = "cannot fix: "  # how the error of a file whose fixes were not written begins
