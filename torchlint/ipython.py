"""IPython syntax in notebook cells: lines that are not Python (``%magic``, ``%%cell magic``,
``!shell``, ``obj?``) are replaced by placeholders of the same line count, and put back
after fixing."""

from __future__ import annotations

import re

PLACEHOLDER = "pass  # torchlint: ipython"


_MAGIC_ASSIGN = re.compile(r"^\s*[\w.\[\]\s,()*]+=\s*[%!]")


# ----------------------------------------------------------------- IPython syntax
def _string_state(line: str, state: str | None) -> str | None:
    """The triple-quote string open at the end of ``line`` (None: not inside one)."""
    i = 0
    while i < len(line):
        if state is not None:
            if line.startswith(state, i):
                state = None
                i += 3
                continue
            if line[i] == "\\":
                i += 2
                continue
            i += 1
            continue
        ch = line[i]
        if ch == "#":
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            state = line[i:i + 3]
            i += 3
            continue
        if ch in "\"'":
            end = i + 1
            while end < len(line) and line[end] != ch:
                end += 2 if line[end] == "\\" else 1
            i = end + 1
            continue
        i += 1
    return state


def _is_ipython_line(stripped: str) -> bool:
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!?":
        return True
    if stripped.endswith("?") and not stripped.endswith("\\?"):
        return True  # obj? / obj??
    return bool(_MAGIC_ASSIGN.match(stripped)) and "==" not in stripped.split("=", 1)[0]


def neutralise(cell_text: str) -> tuple[str, list[str]]:
    """The cell with IPython lines replaced by placeholders, and the replaced lines in order.

    A cell magic (``%%bash``, ``%%time`` …) makes the whole cell opaque.
    """
    lines = cell_text.splitlines(keepends=True)
    if not lines:
        return cell_text, []
    if lines[0].lstrip().startswith("%%"):
        return "".join(_placeholder(line, "") for line in lines), list(lines)
    out: list[str] = []
    replaced: list[str] = []
    state: str | None = None
    continuing = False
    indent = ""
    for line in lines:
        body = line.rstrip("\r\n")
        stripped = body.strip()
        if state is None and (continuing or _is_ipython_line(stripped)):
            if not continuing:  # a continued magic keeps the indentation of its first line
                indent = body[: len(body) - len(body.lstrip())]
            out.append(_placeholder(line, indent))
            replaced.append(line)
            continuing = body.endswith("\\")
            continue
        continuing = False
        out.append(line)
        state = _string_state(body, state)
    return "".join(out), replaced


def _placeholder(line: str, indent: str) -> str:
    ending = line[len(line.rstrip("\r\n")):]
    return f"{indent}{PLACEHOLDER}{ending}"


def restore(neutral_text: str, replaced: list[str]) -> str:
    """Put the IPython lines back in place of the placeholders, in order."""
    if not replaced:
        return neutral_text
    pending = list(replaced)
    out: list[str] = []
    for line in neutral_text.splitlines(keepends=True):
        if pending and line.strip() == PLACEHOLDER:
            original = pending.pop(0)
            ending = line[len(line.rstrip("\r\n")):]
            out.append(original.rstrip("\r\n") + ending)
        else:
            out.append(line)
    return "".join(out)
