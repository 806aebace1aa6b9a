"""Bindings and straight-line data flow: which names a statement binds, and what a name
was last bound to."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import libcst as cst

from torchlint.analysis.imports import import_bindings
from torchlint.analysis.nodes import parameters, semantic_children, target_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def _assign_names(stmt: cst.Assign) -> Iterator[str]:
    for t in stmt.targets:
        yield from target_names(t.target)


def _with_names(stmt: cst.With) -> Iterator[str]:
    for item in stmt.items:
        if item.asname is not None:
            yield from target_names(item.asname.name)


def _import_names(stmt: cst.Import | cst.ImportFrom) -> Iterator[str]:
    for bound, _ in import_bindings(stmt):
        yield bound


def _handler_names(stmt: cst.ExceptHandler) -> Iterator[str]:
    if stmt.name is not None:
        yield from target_names(stmt.name.name)


# What each binding statement binds, looked up by exact type (isinstance chains are slow).
_BINDERS: dict[type, Callable[[Any], Iterator[str]]] = {
    cst.Assign: _assign_names,
    cst.AnnAssign: lambda s: target_names(s.target),
    cst.AugAssign: lambda s: target_names(s.target),
    cst.Import: _import_names,
    cst.ImportFrom: _import_names,
    cst.FunctionDef: lambda s: iter((s.name.value,)),
    cst.ClassDef: lambda s: iter((s.name.value,)),
    cst.For: lambda s: target_names(s.target),
    cst.With: _with_names,
    cst.Del: lambda s: target_names(s.target),
    cst.Global: lambda s: (n.name.value for n in s.names),
    cst.Nonlocal: lambda s: (n.name.value for n in s.names),
    cst.NamedExpr: lambda s: target_names(s.target),
    cst.ExceptHandler: _handler_names,
}


_NEW_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


_NEW_SCOPE_TYPES = frozenset(_NEW_SCOPES)


def bound_names(stmt: cst.CSTNode) -> Iterator[str]:
    """Names a single (small or compound) statement binds at its own level."""
    binder = _BINDERS.get(type(stmt))
    return binder(stmt) if binder is not None else iter(())


def binds_anywhere(node: cst.CSTNode, name: str) -> bool:
    """Does ``node`` (a statement or block) bind ``name`` anywhere inside, nested defs aside?"""
    binders = _BINDERS
    stack = [node]
    while stack:
        current = stack.pop()
        binder = binders.get(type(current))
        if binder is not None and name in binder(current):
            return True
        if type(current) in _NEW_SCOPE_TYPES:
            continue
        stack.extend(semantic_children(current))
    return False


def module_statements(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Small and compound statements that run at module level, in order: those inside
    if/try/with/for/match blocks too, but not the bodies of functions and classes."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
            continue
        yield stmt
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for child in semantic_children(stmt):
            if isinstance(child, cst.BaseSuite):
                yield from module_statements(child.body)
            elif isinstance(child, (cst.ExceptHandler, cst.Else, cst.Finally, cst.If,
                                    cst.ExceptStarHandler)):
                yield from module_statements([child])
            elif isinstance(child, cst.MatchCase):
                yield from module_statements(child.body.body)


@dataclass(frozen=True)
class Binding:
    """What a name was last bound to before a use, in straight-line code.

    kind ``assign``: ``value`` is the right-hand side of ``name = value``.
    kind ``for``: ``value`` is the iterable of the ``for`` whose target is the name.
    kind ``with``: ``value`` is the context expression of ``with value as name``.
    kind ``param``: ``node`` is the function's ``Param``.
    """

    kind: str
    node: cst.CSTNode
    value: cst.BaseExpression | None = None


# ------------------------------------------------------------- bindings
def global_assignment(ctx: FileContext, name: str) -> tuple[cst.CSTNode, cst.BaseExpression] | None:
    """``name = value`` when that is the only binding of ``name`` at module level and the
    current function (and those around it) never bind ``name`` themselves."""

    for ancestor in ctx.ancestors:
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            if any(p.name.value == name for p in parameters(ancestor)):
                return None
            if isinstance(ancestor, cst.FunctionDef) and binds_anywhere(ancestor.body, name):
                return None
        elif isinstance(ancestor, cst.ClassDef):
            return None
    found: list[cst.CSTNode] = []
    lines: list[cst.CSTNode] = list(ctx.module.body)
    while lines:
        stmt = lines.pop()
        if isinstance(stmt, cst.SimpleStatementLine):
            found.extend(small for small in stmt.body if name in bound_names(small))
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            if stmt.name.value == name:
                return None
        else:
            if name in bound_names(stmt):
                return None
            for child in semantic_children(stmt):
                lines.extend(_statements_of(child))
    if len(found) != 1:
        return None
    only = found[0]
    if isinstance(only, cst.Assign) and len(only.targets) == 1 and isinstance(
            only.targets[0].target, cst.Name):
        return only, only.value
    return None


def _statements_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.BaseSuite):
        return list(node.body)
    if isinstance(node, (cst.If, cst.Else, cst.ExceptHandler, cst.Finally)):
        return [node]
    return []
