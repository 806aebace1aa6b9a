"""Bindings and straight-line data flow: which names a statement binds, and what a name
was last bound to."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import libcst as cst

from torchlint.analysis.imports import import_bindings
from torchlint.analysis.nodes import (
    children_of,
    node_memo,
    parameters,
    semantic_children,
    target_names,
)

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
    for bound, _, _ in import_bindings(stmt):
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
    return name in names_bound_anywhere(node)


def names_bound_anywhere(node: cst.CSTNode) -> frozenset[str]:
    """Every name ``node`` (a statement or block) binds anywhere inside, nested defs aside;
    found once per node while a file is analysed (rules ask it of one function body for
    name after name)."""
    memo = node_memo("names_bound_anywhere")
    if memo is not None:
        entry = memo.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]  # type: ignore[no-any-return]
    binders = _BINDERS
    scopes = _NEW_SCOPE_TYPES
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        binder = binders.get(kind)
        if binder is not None:
            names.update(binder(current))
        if kind not in scopes:
            stack.extend(children_of(current))
    found = frozenset(names)
    if memo is not None:
        memo[id(node)] = (node, found)
    return found


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


# ------------------------------------------------------------- bindings


# ------------------------------------------------------------ last binding
@dataclass(frozen=True)
class Binding:
    """A binding of a name found by looking back from a use, in straight-line code.

    kind ``assign``:    ``name = value`` (or ``name: T = value``); ``node`` is the statement
    kind ``unpack``:    ``a, name = value``: ``node`` is the ``Assign``, ``value`` its value
    kind ``augmented``: ``name += value``: the name keeps (part of) what it was before
    kind ``for``:       ``node`` is the ``For`` whose target binds the name, ``value`` its
                        iterable (the use is in its body)
    kind ``with``:      ``with value as name``: ``node`` is the ``With``
    kind ``param``:     ``node`` is the function's ``Param``, ``value`` its default
    kind ``unknown``:   bound in a way that cannot be followed (an ``if`` in between, an
                        import, a loop that rebinds it, a walrus...): ``node`` binds it
    """

    kind: str
    node: cst.CSTNode
    value: cst.BaseExpression | None = None


# After these, nothing earlier can be the value the name has at the use.
_FINAL_KINDS = frozenset({"for", "with", "param", "unknown"})
_BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
_LOOPS = (cst.For, cst.While)
WithPolicy = Callable[[cst.With], bool]


def bindings_before(ctx: FileContext, name: str, at: cst.CSTNode | None = None, *,
                    into_with: bool | WithPolicy = True) -> Iterator[Binding]:
    """The bindings of ``name`` before ``at`` (default: the node being visited), latest
    first, in straight-line code of the current scope; the last one yielded may be final
    (kinds ``for``, ``with``, ``param``, ``unknown``).

    ``at`` is on the walk stack, or is an earlier statement of a block on it (so that a
    chain ``a = b; b = ...`` can be followed back). The bodies of ``with`` statements run
    unconditionally, so bindings inside them count as straight-line code unless
    ``into_with`` (a flag, or a function of the ``With``) says no: then such a binding is
    ``unknown``. The search stops at the scope's start (yielding the parameter that binds
    the name, if any), at a loop whose body holds ``at`` and that binds the name, and at
    any binding it cannot follow.
    """
    ancestors = ctx.ancestors
    index = len(ancestors) - 1 if at is None else ctx.index_of(at)
    if index >= 0:
        yield from _up(ctx, name, index, into_with)
    elif at is not None:
        yield from _before_statement(ctx, name, at, into_with)


def last_binding(ctx: FileContext, name: str, at: cst.CSTNode | None = None) -> Binding | None:
    """What ``name`` was last bound to before ``at``, when that can be followed: an
    ``assign``, ``for``, ``with`` or ``param`` binding (else None)."""
    for found in bindings_before(ctx, name, at):
        return found if found.kind in ("assign", "for", "with", "param") else None
    return None


def _up(ctx: FileContext, name: str, index: int, into_with: bool | WithPolicy
        ) -> Generator[Binding, None, None]:
    ancestors = ctx.ancestors
    for i in range(index - 1, -1, -1):
        block = ancestors[i]
        child = ancestors[i + 1]
        kind = type(block)
        if kind is cst.FunctionDef or kind is cst.Lambda:
            for param in parameters(cast("cst.FunctionDef | cst.Lambda", block), stars=False):
                if param.name.value == name:
                    yield Binding("param", param, param.default)
            return
        if kind is cst.ClassDef:
            return
        if kind in _LOOPS and child is cast("cst.For | cst.While", block).body:
            loop = cast("cst.For | cst.While", block)
            if isinstance(loop, cst.For) and name in target_names(loop.target):
                yield Binding("for", loop, loop.iter)
                return
            if binds_anywhere(loop.body, name):  # carried over from the last iteration
                yield Binding("unknown", block)
                return
            continue
        if isinstance(block, _BLOCKS):
            if (yield from _in_statements(cast(Any, block).body, child, name, into_with)):
                return


def _before_statement(ctx: FileContext, name: str, stmt: cst.CSTNode,
                      into_with: bool | WithPolicy) -> Generator[Binding, None, None]:
    """:func:`bindings_before` for a statement of a block on the walk stack."""
    ancestors = ctx.ancestors
    for index in range(len(ancestors) - 1, -1, -1):
        block = ancestors[index]
        if not isinstance(block, (cst.Module, cst.IndentedBlock)):
            continue
        line = next((s for s in block.body if s is stmt or (
            isinstance(s, cst.SimpleStatementLine) and any(x is stmt for x in s.body))), None)
        if line is None:
            continue
        if line is not stmt:  # earlier small statements of the same line come first
            if (yield from _in_statements(cast(Any, line).body, stmt, name, into_with)):
                return
        if (yield from _in_statements(block.body, line, name, into_with)):
            return
        yield from _up(ctx, name, index, into_with)
        return


def _in_statements(body: Sequence[cst.CSTNode], child: cst.CSTNode | None, name: str,
                   into_with: bool | WithPolicy) -> Generator[Binding, None, bool]:
    """Bindings in the statements before ``child`` (all of them when None), last first.
    Returns True (as the generator's value) once a final binding was yielded."""
    position: int | None = len(body)
    if child is not None:
        position = next((k for k, s in enumerate(body) if s is child), None)
        if position is None:
            return False
    for stmt in reversed(body[:position]):
        if type(stmt) is cst.With and isinstance(stmt.body, cst.IndentedBlock) and not any(
                item.asname is not None and name in target_names(item.asname.name)
                for item in stmt.items):
            if not binds_anywhere(stmt.body, name):
                continue
            if not (into_with(stmt) if callable(into_with) else into_with):
                yield Binding("unknown", stmt)
                return True
            if (yield from _in_statements(stmt.body.body, None, name, into_with)):
                return True
            continue
        smalls = cast(Any, stmt).body if type(stmt) is cst.SimpleStatementLine else (stmt,)
        for small in reversed(smalls):
            found = _binding_by(small, name)
            if found is not None:
                yield found
                if found.kind in _FINAL_KINDS:
                    return True
    return False


def _binding_by(node: cst.CSTNode, name: str) -> Binding | None:
    """How the statement ``node`` binds ``name`` (None: it does not)."""
    kind = type(node)
    small = cast(Any, node)  # the exact-type checks below say which statement it is
    if kind is cst.Assign and len(small.targets) == 1:
        target = small.targets[0].target
        if type(target) is cst.Name:
            if target.value == name:
                return Binding("assign", small, small.value)
            return Binding("unknown", small) if binds_anywhere(small.value, name) else None
        if type(target) in (cst.Tuple, cst.List) and name in target_names(target):
            return Binding("unpack", small, small.value)
    elif kind is cst.AnnAssign and type(small.target) is cst.Name and small.target.value == name:
        if small.value is None:
            return Binding("unknown", small)
        return Binding("assign", small, small.value)
    elif kind is cst.AugAssign and type(small.target) is cst.Name and small.target.value == name:
        return Binding("augmented", small, small.value)
    elif kind is cst.With:
        for item in small.items:
            if item.asname is not None and type(item.asname.name) is cst.Name and (
                    item.asname.name.value == name) and not binds_anywhere(small.body, name):
                return Binding("with", small, item.item)
    return Binding("unknown", small) if binds_anywhere(small, name) else None


# ------------------------------------------------------ module-level values
def module_value(ctx: FileContext, name: str) -> tuple[cst.Assign, cst.BaseExpression] | None:
    """``name = value`` when that is the only binding of ``name`` at module level (blocks
    such as ``if __name__ == "__main__":`` included, functions and classes not) and the
    functions around the current node never bind ``name`` themselves: a global the code
    here reads."""
    for ancestor in ctx.ancestors:
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            if any(p.name.value == name for p in parameters(ancestor)):
                return None
            if isinstance(ancestor, cst.FunctionDef) and binds_anywhere(ancestor.body, name):
                return None
        elif isinstance(ancestor, cst.ClassDef):
            return None
    return global_value(ctx, name)


def global_value(ctx: FileContext, name: str) -> tuple[cst.Assign, cst.BaseExpression] | None:
    """``name = value`` when that is the only binding of ``name`` at module level, wherever
    the walk is (the caller checks that no function around its node rebinds ``name``)."""
    return ctx.cached(("module_value", name), lambda: _module_value(ctx.module, name))


def _module_value(module: cst.Module, name: str
                  ) -> tuple[cst.Assign, cst.BaseExpression] | None:
    found: list[cst.CSTNode] = []
    lines: list[cst.CSTNode] = list(module.body)
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
