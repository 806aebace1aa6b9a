"""The one diagnostic type, and fixes as data."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import libcst as cst


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (character offsets of the decoded source) by ``text``."""

    start: int
    end: int
    text: str


EditKind = Literal["replace", "insert_before", "insert_after", "insert_line_before", "delete_line"]


@dataclass(frozen=True, eq=False)
class NodeEdit:
    """An edit expressed against a CST node; the engine resolves it to an :class:`Edit`.

    ``replace``            the node's code becomes ``text``
    ``insert_before``      ``text`` goes right before the node's first token
    ``insert_after``       ``text`` goes right after the node's last token
    ``insert_line_before`` ``text`` becomes a new line above the statement, same indentation
    ``delete_line``        the statement's physical line(s) go away (comments above stay)
    """

    node: cst.CSTNode
    text: str = ""
    kind: EditKind = "replace"


@dataclass(frozen=True)
class ImportNeed:
    """A top-level import line the fix needs, e.g. ``from torch import nn``."""

    line: str


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    edits: tuple[Edit | NodeEdit, ...]
    imports: tuple[ImportNeed, ...] = ()

    @classmethod
    def safe(cls, *edits: Edit | NodeEdit, imports: tuple[ImportNeed, ...] = ()) -> Fix:
        return cls(Applicability.SAFE, tuple(edits), imports)

    @classmethod
    def unsafe(cls, *edits: Edit | NodeEdit, imports: tuple[ImportNeed, ...] = ()) -> Fix:
        return cls(Applicability.UNSAFE, tuple(edits), imports)

    @property
    def is_safe(self) -> bool:
        return self.applicability is Applicability.SAFE

    def resolved_edits(self) -> tuple[Edit, ...]:
        """Edits after the engine resolved them; only valid on a reported diagnostic's fix."""
        assert all(isinstance(e, Edit) for e in self.edits), "fix not resolved"
        return tuple(e for e in self.edits if isinstance(e, Edit))


@dataclass(frozen=True)
class FileSpan:
    """Where a finding is in the file as stored, when its ``line``/``column`` count
    within something else: a notebook finding's line is within its cell, and this is
    its place in the .ipynb file's own text (1-based lines and character columns)."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int  # 1-based
    column: int  # 1-based, in characters
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    fix: Fix | None = None
    cell: int | None = None  # notebooks: 1-based cell number
    extra: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # notebooks: the span in the .ipynb file's text, for formats that annotate the file
    in_file: FileSpan | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        # a notebook's findings in cell order, then by line within the cell
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    @property
    def file_region(self) -> tuple[int, int, int, int]:
        """(line, column, end line, end column) in the file as stored: for a notebook
        finding, in the .ipynb text (when known), else the finding's own position."""
        span = self.in_file
        if span is not None:
            return span.line, span.column, span.end_line, span.end_column
        return self.line, self.column, self.end_line, self.end_column


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Whether a fix run applies this diagnostic's fix (unsafe ones only with ``unsafe``)."""
    return diagnostic.fix is not None and (diagnostic.fix.is_safe or unsafe)
