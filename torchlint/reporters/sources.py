"""Source text for reporters that show code or turn fix offsets into positions."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.diagnostic import Diagnostic, Edit

_NEWLINE = re.compile(r"\r\n|\r|\n")


def relative_path(path: str) -> str:
    """``path`` relative to the current folder (posix), or as given when outside it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).as_posix()


@dataclass(frozen=True)
class Position:
    line: int  # 1-based (within the cell for notebooks)
    column: int  # 1-based, in characters
    cell: int | None = None


class _Text:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def position(self, offset: int) -> Position:
        index = bisect.bisect_right(self.starts, offset) - 1
        return Position(index + 1, offset - self.starts[index] + 1)


@dataclass
class Sources:
    """Reads each file (or notebook program) at most once; ``overrides`` for stdin."""

    overrides: dict[str, str] = field(default_factory=dict)
    _texts: dict[str, object] = field(default_factory=dict)

    def _load(self, path: str) -> object:
        if path in self._texts:
            return self._texts[path]
        loaded: object = None
        if path.endswith(".ipynb"):
            from torchlint.notebook import Notebook, NotebookError

            try:
                loaded = (Notebook.from_text(path, self.overrides[path])
                          if path in self.overrides else Notebook.read(path))
            except (NotebookError, RecursionError, ValueError):
                loaded = None
        elif path in self.overrides:
            loaded = _Text(self.overrides[path])
        else:
            from torchlint.source import DecodeError, SourceFile

            try:
                loaded = _Text(SourceFile.read(path).text)
            except (OSError, DecodeError):
                loaded = None
        self._texts[path] = loaded
        return loaded

    def text(self, path: str) -> str | None:
        """The text fix offsets refer to (for a notebook: its code cells as one program)."""
        loaded = self._load(path)
        if loaded is None:
            return None
        return loaded.text if isinstance(loaded, _Text) else loaded.program  # type: ignore

    def lines(self, diagnostic: Diagnostic) -> list[str]:
        """The lines of the file, or of the diagnostic's cell, without line endings."""
        loaded = self._load(diagnostic.path)
        if loaded is None:
            return []
        if isinstance(loaded, _Text):
            return _NEWLINE.split(loaded.text)
        source = loaded.cell_source(diagnostic.cell or 0)  # type: ignore[attr-defined]
        return _NEWLINE.split(source) if source is not None else []

    def stored_lines(self, path: str) -> list[str]:
        """The lines of the file as stored (a notebook's .ipynb text), without line endings;
        empty when it cannot be read."""
        if not path.endswith(".ipynb"):
            text = self.text(path)
            return _NEWLINE.split(text) if text is not None else []
        key = f"\0stored\0{path}"
        if key not in self._texts:
            try:
                stored = self.overrides.get(path)
                if stored is None:
                    with open(path, encoding="utf-8") as handle:
                        stored = handle.read()
                self._texts[key] = _NEWLINE.split(stored)
            except (OSError, UnicodeDecodeError):
                self._texts[key] = []
        return self._texts[key]  # type: ignore[return-value]

    def position(self, path: str, offset: int) -> Position | None:
        loaded = self._load(path)
        if loaded is None:
            return None
        if isinstance(loaded, _Text):
            return loaded.position(offset)
        cell, line, column = loaded.position(offset)  # type: ignore[attr-defined]
        return Position(line, column, cell)

    def edit_range(self, path: str, edit: Edit) -> tuple[Position, Position] | None:
        start = self.position(path, edit.start)
        end = self.position(path, edit.end)
        if start is None or end is None:
            return None
        return start, end
