"""Names and spans in CPython's ``ast`` (no libcst): what the triage's facts and the rules'
screening checks (``rules/<family>/screens.py``) read of a node."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Iterator


def chain(node: ast.AST | None) -> tuple[str, str] | None:
    """``("a", ".b.c")`` for ``a.b.c``; None for anything but a dotted name."""
    kind = type(node)
    if kind is ast.Name:
        return node.id, ""  # type: ignore[union-attr]
    if kind is not ast.Attribute:
        return None
    value = node.value  # type: ignore[union-attr]
    if type(value) is ast.Name:  # the commonest: a.b
        return value.id, "." + node.attr  # type: ignore[union-attr]
    parts = [node.attr]  # type: ignore[union-attr]
    while type(value) is ast.Attribute:
        parts.append(value.attr)  # type: ignore[attr-defined]
        value = value.value  # type: ignore[attr-defined]
    if type(value) is not ast.Name:
        return None
    parts.append("")
    parts.reverse()
    return value.id, ".".join(parts)  # type: ignore[attr-defined]


def dotted(node: ast.AST | None) -> str | None:
    """``"a.b.c"`` for the dotted name ``a.b.c``; None for anything else."""
    found = chain(node)
    return None if found is None else found[0] + found[1]


def last_name(node: ast.AST | None) -> str | None:
    """The last name of a callee: ``f`` of ``f`` and of ``x.f``; None for anything else."""
    kind = type(node)
    if kind is ast.Name:
        return node.id  # type: ignore[union-attr,no-any-return]
    if kind is ast.Attribute:
        return node.attr  # type: ignore[union-attr,no-any-return]
    return None


def inside(node: ast.AST, outer: ast.AST) -> bool:
    """``node`` lies within the span of ``outer`` (spans nest)."""
    return (outer.lineno, outer.col_offset) <= (  # type: ignore[attr-defined]
        node.lineno, node.col_offset) <= (  # type: ignore[attr-defined]
        outer.end_lineno, outer.end_col_offset)  # type: ignore[attr-defined]


def argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    """The argument passed as ``keyword=`` or at ``position`` (none after a ``*args``)."""
    given = [kw.value for kw in call.keywords if kw.arg == keyword]
    before = list(itertools.takewhile(lambda a: type(a) is not ast.Starred, call.args))
    return given[0] if given else before[position] if position is not None and (
        position < len(before)) else None


def target_names(target: ast.AST) -> Iterator[str]:
    """The names an assignment target binds (``x``, ``x, (y, *z)``), as libcst's
    ``nodes.target_names``."""
    kind = type(target)
    if kind is ast.Name:
        yield target.id  # type: ignore[attr-defined]
    elif kind in (ast.Tuple, ast.List):
        for element in target.elts:  # type: ignore[attr-defined]
            yield from target_names(element)
    elif kind is ast.Starred:
        yield from target_names(target.value)  # type: ignore[attr-defined]


def self_attribute(node: ast.AST | None) -> str | None:
    """``X`` for ``self.X``; None for anything else."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name and (  # type: ignore[union-attr]
            node.value.id == "self"):  # type: ignore[union-attr]
        return node.attr  # type: ignore[union-attr,no-any-return]
    return None


def start(node: ast.AST) -> tuple[int, int]:
    """Where ``node`` starts: (line, column)."""
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def first_start(node: ast.AST) -> tuple[int, int]:
    """Where ``node`` starts, its decorators included (libcst's def and class hold them;
    CPython's ``ast`` starts a def at ``def``)."""
    decorators = getattr(node, "decorator_list", None)
    return min(start(node), *(start(d) for d in decorators)) if decorators else start(node)


def end(node: ast.AST) -> tuple[int, int]:
    """Where ``node`` ends: (line, column)."""
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined,return-value]


# the nodes that open a scope of their own (as analysis.nodes.iter_scope leaves them)
NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def scope_nodes(roots: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """``roots`` and the nodes below them in pre-order, not entering nested functions,
    classes and lambdas (as libcst's ``analysis.nodes.iter_scope``)."""
    stack = list(roots)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, NEW_SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
