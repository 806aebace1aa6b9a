"""Reading TOML configuration files with tomllib, and pointing at the line of a problem.

tomllib gives no positions for keys, so a key is found again in the text (its table
header, then the key at the start of a line) only to draw the caret; a key that cannot be
found that way is reported without one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchlint.config.errors import ConfigError, caret_snippet
from torchlint.source import read_file

if TYPE_CHECKING:
    from types import ModuleType

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_END = re.compile(r"\s*\(at end of document\)\s*$")
_HEADER = re.compile(r"^\s*\[(?!\[)\s*([^\]]*?)\s*\]\s*(?:#.*)?$")


def tomllib() -> ModuleType:
    """tomllib (tomli before Python 3.11), imported when a file is actually read."""
    if sys.version_info >= (3, 11):
        import tomllib as module
    else:  # pragma: no cover
        import tomli as module
    return module


def read_text(path: Path) -> str:
    try:
        data = read_file(path)  # a FIFO or device is not waited on
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def parse_toml(text: str, path: Path | str) -> dict[str, Any]:
    """``text`` parsed, or a :class:`ConfigError` naming the line and column with a caret."""
    toml = tomllib()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        found = _AT.search(message)
        if found:
            line, column = int(found.group(1)), int(found.group(2))
            message = message[:found.start()]
        elif _END.search(message):
            lines = text.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
            message = _END.sub("", message) + " (at the end of the file)"
        if line is None or column is None:
            raise ConfigError(f"{path}: invalid TOML: {message}") from None
        raise ConfigError(f"{path}:{line}:{column}: invalid TOML: {message}",
                          caret_snippet(text, line, column)) from None


def _table_name(header: str) -> tuple[str, ...]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', header)
    return tuple(next(p for p in part if p) if any(part) else "" for part in parts)


def key_position(text: str, table: tuple[str, ...], key: str) -> tuple[int, int] | None:
    """(line, column) of ``key`` in ``table`` (``()``: the top level), both 1-based."""
    current: tuple[str, ...] = ()
    pattern = re.compile(r'^(\s*)(?:"' + re.escape(key) + r'"|\'' + re.escape(key) + r"'|"
                         + re.escape(key) + r")\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = _table_name(header.group(1))
            if current[:len(table) + 1] == (*table, key):  # [tool.torchlint.per-file-ignores]
                return number, line.index(key) + 1
            continue
        if current == table:
            match = pattern.match(line)
            if match:
                return number, len(match.group(1)) + 1
        elif current == table[:-1] and table:  # the table written inline: `name = { key = }`
            inline = re.match(r"^\s*" + re.escape(table[-1]) + r"\s*=\s*\{", line)
            if inline:
                at = line.find(key, inline.end())
                if at >= 0:
                    return number, at + 1
    return None


def problem_at(text: str, path: Path | str, table: tuple[str, ...], key: str, message: str,
               section: str) -> ConfigError:
    """A :class:`ConfigError` for ``key`` of ``table``, with its line when it can be found."""
    position = key_position(text, table, key)
    where = f" in {section}" if section else ""
    if position is None:
        return ConfigError(f"{path}: {message}{where}")
    line, column = position
    return ConfigError(f"{path}:{line}:{column}: {message}{where}",
                       caret_snippet(text, line, column, width=len(key)))
