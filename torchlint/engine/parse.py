"""Parse safety: parse with libcst only what it can parse safely, and describe failures
with CPython's own position and message."""

from __future__ import annotations

import ast
import warnings
from typing import TYPE_CHECKING

from torchlint.codes import syntax_error_at
from torchlint.diagnostic import Diagnostic

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.engine.reparse import Reparser

# libcst is imported by the functions that need it: telling whether a file parses
# (compiles, python_syntax_error) must not load it


_reparser: Reparser | None = None


def remember_parses(count: int) -> Reparser | None:
    """From now on, keep the last ``count`` texts parsed and their trees (0: none): a text that
    differs from one of them inside one top-level statement is parsed by parsing that
    statement alone (see :mod:`torchlint.engine.reparse`). For an editor's successive
    versions of a file."""
    from torchlint.engine.reparse import Reparser

    global _reparser
    _reparser = Reparser(count, _parse_whole) if count > 0 else None
    return _reparser


def remembers_parses() -> bool:
    """Whether :func:`remember_parses` is in force (an editor's process)."""
    return _reparser is not None


def parse(text: str) -> cst.Module:
    if _reparser is not None:
        return _reparser.parse(text)
    return _parse_whole(text)


def _parse_whole(text: str) -> cst.Module:
    import libcst as cst

    _check_nesting(text)
    # Every node libcst builds checks itself in ``__post_init__``; the parser's own output
    # is valid by construction, and those checks are a sixth of the parse. Skip them here.
    node_class = cst.CSTNode
    checks = node_class.__dict__.get("__post_init__")
    if checks is None:  # another libcst layout: parse as is
        return cst.parse_module(text)
    node_class.__post_init__ = _no_checks  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        node_class.__post_init__ = checks  # type: ignore[method-assign]


def _no_checks(self: cst.CSTNode) -> None:
    return None


# libcst's native parser takes time cubic in the nesting depth of an expression (a minute
# for 20 000 chained ``+``) and overflows its stack on a few thousand parentheses, killing
# the process. CPython refuses such code anyway ("too many nested parentheses"), so when a
# cheap scan sees deep brackets or very long lines, CPython's parser (a tenth of libcst's
# time) decides first, and refusals for depth become a syntax error.
_BRACKET_DEPTH = {ord("("): 1, ord("["): 1, ord("{"): 1, ord(")"): -1, ord("]"): -1,
                  ord("}"): -1}


_ONLY_BRACKETS = {c: None for c in range(128) if c not in _BRACKET_DEPTH}


_SUSPICIOUS_DEPTH = 90


_SUSPICIOUS_LINE = 4000


_DEPTH_MESSAGES = ("too many nested parentheses", "too many levels of indentation",
                   "too many statically nested blocks", "too complex", "nested too deeply")


def _looks_deep(text: str) -> bool:
    brackets = text.translate(_ONLY_BRACKETS)
    if brackets:
        depth = deepest = 0
        for char in brackets:
            step = _BRACKET_DEPTH.get(ord(char))
            if step is not None:
                depth += step
                if depth > deepest:
                    deepest = depth
        if deepest > _SUSPICIOUS_DEPTH:
            return True
    if len(text) > _SUSPICIOUS_LINE and max(map(len, text.splitlines()), default=0) > \
            _SUSPICIOUS_LINE:
        return True
    return text.count("\\\n") + text.count("\\\r") > 500


def _check_nesting(text: str) -> None:
    """Raise RecursionError for code nested too deeply for libcst to parse safely."""
    if not _looks_deep(text):
        return
    import ast

    try:
        compile(text, "<torchlint>", "exec", ast.PyCF_ONLY_AST)
    except (RecursionError, MemoryError):
        raise RecursionError("the file is nested too deeply to be analysed") from None
    except SyntaxError as exc:
        if any(m in str(exc.msg) for m in _DEPTH_MESSAGES):
            raise RecursionError("the file is nested too deeply to be analysed") from None
    except (ValueError, OverflowError):  # null bytes and the like: libcst reports those
        pass


def syntax_error(path: str, exc: BaseException, text: str) -> Diagnostic:
    import libcst as cst

    python_error = python_syntax_error(text) if not isinstance(exc, RecursionError) else None
    if python_error is not None:
        line, column, message = python_error
    elif isinstance(exc, cst.ParserSyntaxError):
        line, column = exc.raw_line, exc.raw_column + 1
        message = exc.message.strip().splitlines()[0] if exc.message.strip() else "invalid syntax"
    elif isinstance(exc, RecursionError):
        line, column, message = 1, 1, "the file is nested too deeply to be analysed"
    else:
        line, column = 1, 1
        message = " ".join(str(exc).split()) or type(exc).__name__
    lines = text.splitlines() or [""]
    line = max(1, min(line, len(lines)))
    column = max(1, min(column, len(lines[line - 1]) + 1))
    return syntax_error_at(path, line, column, f"cannot parse: {message}")


def compiles(text: str) -> bool:
    """True when CPython compiles ``text`` to bytecode: then it certainly parses.

    Twice as fast as building CPython's AST, which is only needed to describe an error
    (bytecode compilation also refuses some code that parses, e.g. a module-level
    ``return``; the AST check then decides).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "is" with a literal and the like: not ours to say
        try:
            compile(text, "<source>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return False
    return True


def python_syntax_error(text: str) -> tuple[int, int, str] | None:
    """CPython's own position and message, which are more precise than the CST parser's."""
    try:
        compile(text, "<source>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        return 1, 1, str(exc) or type(exc).__name__
    return None
