"""Reading TOML configuration files with tomllib, and pointing at the line of a problem.

tomllib gives no positions for keys, so a key is found again in the text (its table
header, then the key at the start of a line) only to draw the caret, and a bad value after
it (the string that holds a bad code, or the whole value); a key that cannot be found that
way is reported without one. Files are named relative to the current folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchlint.config.errors import ConfigError, caret_snippet, shown
from torchlint.source import read_file

if TYPE_CHECKING:
    from types import ModuleType

_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_END = re.compile(r"\s*\(at end of document\)\s*$")
_HEADER = re.compile(r"^\s*\[(?!\[)\s*([^\]]*?)\s*\]\s*(?:#.*)?$")
# a string of one line: basic ("...", with escapes) or literal ('...')
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')
# the start of the next key or table: where a value's text ends at the latest
_NEXT = re.compile(r'^[ \t]*(?:\[|(?:[A-Za-z0-9_-]+|"[^"\n]*"|\'[^\'\n]*\')[ \t]*=)', re.M)


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
        raise ConfigError(f"{shown(path)}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown(path)}: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start})") from None


TOO_DEEP = "values nested too deeply to read"


def loads(text: str) -> dict[str, Any]:
    """``text`` parsed; raises tomllib's ``TOMLDecodeError``, also for values nested so
    deeply that the parser would exhaust the stack."""
    toml = tomllib()
    try:
        return toml.loads(text)
    except RecursionError:
        raise toml.TOMLDecodeError(TOO_DEEP) from None


def parse_toml(text: str, path: Path | str) -> dict[str, Any]:
    """``text`` parsed, or a :class:`ConfigError` naming the line and column with a caret."""
    toml = tomllib()
    path = shown(path)
    try:
        return loads(text)
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        if message == TOO_DEEP:  # valid TOML perhaps, but no configuration nests so deep
            raise ConfigError(f"{path}: cannot be read as a configuration: {TOO_DEEP}") from None
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
                after = line.index(table[-1]) + len(table[-1]) if table else 0
                return number, line.index(key, after) + 1
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


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(lines[i]) for i in range(line - 1)) + column - 1


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _string_value(token: str) -> str | None:
    if token.startswith("'"):
        return token[1:-1]
    try:
        return str(loads(f"v = {token}")["v"])
    except tomllib().TOMLDecodeError:
        return None


def value_position(text: str, table: tuple[str, ...], key: str, *, item: str | None = None,
                   under: str | None = None) -> tuple[int, int, int] | None:
    """(line, column, width) of the value of ``key`` in ``table``: of the string ``item``
    in it (a code in a list) when given, else of the value's first line. ``under``: the
    entry of a table value (a glob of ``per-file-ignores``) whose value is meant."""
    if under is not None:
        return value_position(text, (*table, key), under, item=item)
    position = key_position(text, table, key)
    if position is None:
        return None
    start = _offset(text, *position)
    equals = text.find("=", start)
    header = text.find("\n", start)
    if equals < 0 or (0 <= header < equals):  # a [table] header, not `key = value`
        return None
    value = equals + 1
    while value < len(text) and text[value] in " \t":
        value += 1
    newline = text.find("\n", value)
    following = _NEXT.search(text, newline + 1) if newline >= 0 else None
    end = following.start() if following else len(text)
    if item is None:
        first = text[value:end].split("\n", 1)[0].split(" #", 1)[0].rstrip()
        return (*_line_column(text, value), max(1, len(first)))
    for token in _STRING.finditer(text, value, end):
        if _string_value(token.group()) == item:
            return (*_line_column(text, token.start()), len(token.group()))
    return None


def problem_at(text: str, path: Path | str, table: tuple[str, ...], key: str, message: str,
               section: str, *, value: bool = False, item: str | None = None,
               under: str | None = None) -> ConfigError:
    """A :class:`ConfigError` for ``key`` of ``table``, with its line when it can be found:
    the line of its value when ``value`` (at the string ``item`` in it when given; in the
    entry ``under`` of a table value when given), else of the key."""
    where = f" in {section}" if section else ""
    found = value_position(text, table, key, item=item, under=under) if value else None
    if found is None and value and under is not None:
        found = value_position(text, (*table, key), under)
    if found is None:
        position = key_position(text, table, key)
        found = (*position, len(key)) if position else None
    if found is None:
        return ConfigError(f"{shown(path)}: {message}{where}")
    line, column, width = found
    return ConfigError(f"{shown(path)}:{line}:{column}: {message}{where}",
                       caret_snippet(text, line, column, width=width))
