"""IPython syntax in notebook cells, recognised where IPython recognises it and set aside.

A line IPython would rewrite (``%magic``, ``!shell``, ``x = !cmd``, ``x = %magic``,
``obj?``, ``??obj``, ``/f a``, ``,f a``, ``;f a``) is replaced by a placeholder line that
keeps the cell's line count and indentation, so positions in the rest of the cell are
unchanged; :func:`restore` puts the original lines back after fixing.

The rules are IPython's own (``IPython.core.inputtransformer2``, which the tests use as
the oracle), applied to the tokens of Python's :mod:`tokenize`, the tokenizer IPython
itself groups lines with: special syntax counts only at the start of a logical line (or
right after its first ``=``, or as its last token for ``?``), never inside brackets,
strings or comments, so ``print("%d" \\n % n)`` and ``# why?`` stay Python.

A cell starting with a cell magic is opaque, except for the magics whose body IPython runs
as Python in the notebook's namespace (``%%time``, ``%%timeit``, ``%%capture``,
``%%prun``, ``%%debug``): there only the magic's line is set aside and the body is a cell
of its own.

Before all that, IPython removes the indentation of a cell's first non-blank line from
every line that starts with it (``leading_indent``): a cell whose every line starts with
the same spaces runs. :func:`leading_indent` finds that indentation when every non-blank
line has it (the only case where removing it and putting it back is exact), and
:func:`reindent` puts it back into a fixed text.
"""

from __future__ import annotations

import difflib
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass

MARK = "# torchlint: ipython"
PLACEHOLDER = f"pass  {MARK}"
# the value an assignment from a magic or a shell command gets (``x = %pwd``)
ASSIGNED = f"None  {MARK}"

# cell magics whose body is Python run in the notebook's own namespace
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_ESCAPES = frozenset("!?%,;/")
_CELL_MAGIC = re.compile(r"%%(\w*)")
# what may stand before a trailing ``?``: ``name``, ``a.b``, ``a[0]``, with ``*`` wildcards
_HELP_TARGET = re.compile(r"%{0,2}(?!\d)[\w*]+(\.(?!\d)[\w*]+|\[-?[0-9]+\])*\?\??$")
# a cheap look for what special syntax needs: an escape first on a line, '= %' or '= !',
# or a '?' last on a line
_MAYBE_SPECIAL = re.compile(r"^[ \t]*[!?%,;/]|=[\s\\]*[%!]|\?[ \t]*\r?$", re.M)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_BRACKET_OPEN = frozenset("([{")
_BRACKET_CLOSE = frozenset(")]}")
# every kind of special syntax tries to match each logical line; when several match at the
# same place, the lower rank wins (IPython's priorities: help before an escape)
_ASSIGN_FROM_MAGIC, _ASSIGN_FROM_SHELL, _ESCAPED, _HELP = "magic=", "shell=", "escape", "help"
_RANK = {_HELP: 5, _ASSIGN_FROM_MAGIC: 10, _ASSIGN_FROM_SHELL: 10, _ESCAPED: 10}


class RestoreError(ValueError):
    """The fixed text no longer has the placeholders where the IPython lines were."""


@dataclass(frozen=True)
class _Found:
    kind: str
    line: int  # 0-based line of the special syntax's first character
    column: int
    last_line: int  # 0-based, inclusive: the lines the syntax takes up
    logical_start: int  # 0-based first line of the logical line it belongs to

    @property
    def order(self) -> tuple[int, int, int]:
        return self.line, self.column, _RANK[self.kind]


# ----------------------------------------------------------------- tokens
def _logical_lines(lines: list[str], start: int
                   ) -> Iterator[tuple[list[tokenize.TokenInfo], bool]]:
    """The tokens of ``lines[start:]`` grouped by logical line (a bracketed expression or a
    backslash continuation is one group; a blank or comment line is a group of its own),
    each with whether a closing bracket without its opening one came before it (then
    Python's tokenizer counts brackets below zero, and what follows depends on it).

    Token positions are made absolute (``lines`` indices + 1). Tokenizing stops quietly
    where Python's tokenizer gives up (an unclosed string or bracket at the end)."""
    sunk = False
    while start < len(lines):
        group: list[tokenize.TokenInfo] = []
        depth = tokenizer_depth = 0
        reader = iter(lines[start:]).__next__
        restart = None
        try:
            for token in tokenize.generate_tokens(reader):
                if token.type == tokenize.ENDMARKER:
                    break
                token = token._replace(start=(token.start[0] + start, token.start[1]),
                                       end=(token.end[0] + start, token.end[1]))
                group.append(token)
                if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and depth <= 0):
                    yield group, sunk
                    group = []
                elif token.type == tokenize.OP and token.string in _BRACKET_OPEN:
                    depth += 1
                    tokenizer_depth += 1
                elif token.type == tokenize.OP and token.string in _BRACKET_CLOSE:
                    depth = max(0, depth - 1)
                    tokenizer_depth -= 1
                    sunk = sunk or tokenizer_depth < 0
        except tokenize.TokenError:
            pass  # the rest is inside an unclosed string or bracket
        except SyntaxError as exc:  # a dedent to an unknown level: go on from that line
            if group:
                yield group, sunk
                group = []
            if exc.lineno is not None and exc.lineno - 1 > 0:
                restart = start + exc.lineno - 1
        if group:
            yield group, sunk
        if restart is None:
            return
        start = restart


def _first_token(group: list[tokenize.TokenInfo]) -> int | None:
    for index, token in enumerate(group):
        if token.type not in (tokenize.INDENT, tokenize.DEDENT):
            return index
    return None


def _assignment(group: list[tokenize.TokenInfo]) -> int | None:
    """Index of the first ``=`` outside brackets (IPython supports one target only)."""
    depth = 0
    for index, token in enumerate(group):
        if token.string == "=" and depth == 0:
            return index
        if token.string in _BRACKET_OPEN:
            depth += 1
        elif token.string in _BRACKET_CLOSE and depth:
            depth -= 1
    return None


def _continued_until(lines: list[str], line: int) -> int:
    """The last line of a line continued with backslashes (as IPython reads it)."""
    while line + 1 < len(lines) and lines[line].endswith("\\\n"):
        line += 1
    return line


def _candidates(group: list[tokenize.TokenInfo], lines: list[str]) -> list[_Found]:
    """Every kind of IPython syntax this logical line holds, at most one of each kind."""
    found: list[_Found] = []
    first = _first_token(group)
    if first is None:
        return found
    logical_start = group[0].start[0] - 1
    assign = _assignment(group)
    if assign is not None and assign + 2 < len(group):
        after = group[assign + 1]
        if after.string == "%" and group[assign + 2].type == tokenize.NAME:
            line = after.start[0] - 1
            found.append(_Found(_ASSIGN_FROM_MAGIC, line, after.start[1],
                                _continued_until(lines, line), logical_start))
    if assign is not None and assign + 1 < len(group) and \
            not group[assign].line.strip().startswith("="):
        index = assign + 1
        while index < len(group) and group[index].type == tokenize.ERRORTOKEN \
                and group[index].string.isspace():
            index += 1
        if index < len(group) and group[index].string == "!":
            line = group[index].start[0] - 1
            found.append(_Found(_ASSIGN_FROM_SHELL, line, group[index].start[1],
                                _continued_until(lines, line), logical_start))
    head = group[first]
    if head.string in _ESCAPES:
        line = head.start[0] - 1
        found.append(_Found(_ESCAPED, line, head.start[1], _continued_until(lines, line),
                            logical_start))
    if len(group) > 2 and group[-2].string == "?":
        found.append(_Found(_HELP, head.start[0] - 1, head.start[1], group[-2].start[0] - 1,
                            logical_start))
    return found


def _applies(found: _Found, lines: list[str]) -> bool:
    """Whether IPython's rewriting succeeds (otherwise it leaves the line as it is)."""
    if found.kind == _HELP:
        piece = "".join(lines[found.line:found.last_line + 1])[found.column:]
        return _HELP_TARGET.search(piece.rstrip("\r\n")) is not None
    if found.kind == _ESCAPED and lines[found.line][found.column] == "/":
        body = lines[found.line][found.column + 1:].rstrip()
        return bool(body) and not body.startswith(" ")  # '/' needs a callable's name
    return True


# ----------------------------------------------------------------- placeholders
def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _indent(line: str) -> str:
    body = line.rstrip("\r\n")
    return body[: len(body) - len(body.lstrip(" \t"))]


def _set_aside(lines: list[str], found: _Found) -> None:
    """Replace the lines of ``found`` by placeholders, in place."""
    indent = _indent(lines[found.logical_start])
    first = lines[found.line]
    if found.kind in (_ASSIGN_FROM_MAGIC, _ASSIGN_FROM_SHELL):
        lines[found.line] = first[: found.column] + ASSIGNED + _ending(first)
    elif found.kind == _ESCAPED:
        lines[found.line] = first[: found.column] + PLACEHOLDER + _ending(first)
    else:
        lines[found.line] = indent + PLACEHOLDER + _ending(first)
    for index in range(found.line + 1, found.last_line + 1):
        lines[index] = indent + PLACEHOLDER + _ending(lines[index])


def _token_syntax(lines: list[str]) -> list[int]:
    """Set aside every line-level IPython syntax in ``lines`` (in place); the 0-based
    indices of the lines set aside."""
    unterminated = not lines[-1].endswith(("\n", "\r"))
    if unterminated:  # IPython reads a cell as if it ended with a newline
        lines[-1] += "\n"
    done: list[int] = []
    # a kind whose match IPython failed to rewrite: IPython finds the same match first
    # again, so that kind is stuck there until another kind rewrites the logical line
    blocked: set[str] = set()
    start = 0
    while start < len(lines):
        chosen = None
        sunk = False
        for group, sunk in _logical_lines(lines, start):
            failed: set[str] = set()
            found = [f for f in _candidates(group, lines) if f.kind not in blocked]
            for candidate in sorted(found, key=lambda f: f.order):
                if _applies(candidate, lines):
                    chosen = candidate
                    break
                failed.add(candidate.kind)
            if chosen is not None:
                break
            blocked |= failed
        if chosen is None:
            break
        _set_aside(lines, chosen)
        done.extend(range(chosen.line, chosen.last_line + 1))
        start = chosen.last_line + 1
        if sunk:  # the tokenizer's view of what follows depends on the lines before
            start, blocked = 0, set()
    if unterminated:
        lines[-1] = lines[-1][:-1]
    return done


def neutralise(cell_text: str) -> tuple[str, list[str]]:
    """The cell with its IPython lines replaced by placeholders, and the replaced lines in
    order (for :func:`restore`)."""
    lines = split_lines(cell_text)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return cell_text, []
    magic = _CELL_MAGIC.match(lines[first])
    if magic and not re.match(r"%%\w+\?", lines[first]):
        if magic.group(1) in PYTHON_CELL_MAGICS:
            body, replaced = neutralise("".join(lines[first + 1:]))
            head = [*lines[:first], PLACEHOLDER + _ending(lines[first])]
            return "".join(head) + body, [lines[first], *replaced]
        opaque = lines[first:]
        return "".join(lines[:first] + [PLACEHOLDER + _ending(line) for line in opaque]), opaque
    if not _MAYBE_SPECIAL.search(cell_text):
        return cell_text, []  # nothing IPython could rewrite
    original = list(lines)
    done = _token_syntax(lines)
    if not done:
        return cell_text, []
    return "".join(lines), [original[i] for i in sorted(set(done))]


def leading_indent(cell_text: str) -> str:
    """The indentation IPython removes from ``cell_text`` (the spaces and tabs its first
    non-blank line starts with), when every non-blank line starts with it; '' otherwise."""
    lines = split_lines(cell_text)
    first = next((line for line in lines if line.strip()), "")
    indent = _indent(first)
    if not indent or not all(line.startswith(indent) for line in lines if line.strip()):
        return ""
    return indent


def dedent(cell_text: str, indent: str) -> str:
    """``cell_text`` with ``indent`` removed from the lines that start with it."""
    if not indent:
        return cell_text
    return "".join(line[len(indent):] if line.startswith(indent) else line
                   for line in split_lines(cell_text))


def reindent(original: str, indent: str, new_text: str) -> str:
    """``new_text`` (a fixed version of ``dedent(original, indent)``) with the indentation
    put back: lines the fix kept are the original's, every other non-blank line gets
    ``indent``."""
    if not indent:
        return new_text
    old_lines = split_lines(original)
    new_lines = split_lines(new_text)
    matcher = difflib.SequenceMatcher(None, split_lines(dedent(original, indent)), new_lines,
                                      autojunk=False)
    out: list[str] = []
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            out.extend(old_lines[old_start:old_end])
        else:
            out.extend(indent + line if line.strip() else line
                       for line in new_lines[new_start:new_end])
    return "".join(out)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings (only \\n, \\r\\n and \\r end a line)."""
    return _LINE.findall(text)


def is_placeholder(line: str) -> bool:
    return line.rstrip("\r\n").endswith(MARK)


def restore(neutral_text: str, replaced: list[str]) -> str:
    """Put the IPython lines back in place of the placeholders, in order.

    Raises :class:`RestoreError` when the placeholders do not match the lines set aside
    (a fix removed or duplicated one): then nothing must be written."""
    if not replaced:
        return neutral_text
    pending = iter(replaced)
    out: list[str] = []
    count = 0
    for line in split_lines(neutral_text):
        if is_placeholder(line):
            original = next(pending, None)
            if original is None:
                raise RestoreError("more placeholders than IPython lines")
            count += 1
            out.append(original.rstrip("\r\n") + _ending(line))
        else:
            out.append(line)
    if count != len(replaced):
        raise RestoreError("an IPython line's placeholder is missing")
    return "".join(out)
