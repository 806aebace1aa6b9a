"""Shapes unpacked from a tensor: ``b, c, h, w = x.shape`` (or ``x.size()``) names the sizes
of ``x``'s dimensions. Found once per scope and name, walking the scope's statements.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import iter_scope


@dataclass(frozen=True)
class ShapeUnpack:
    """One ``b, c, h, w = x.shape``: the statement and, per dimension, the name its size
    is bound to (None for anything else: ``_``... counts too, it is a name)."""

    node: cst.Assign
    names: tuple[str | None, ...]

    @property
    def rank(self) -> int:
        return len(self.names)


def shape_unpacks(ctx: FileContext, scope: cst.CSTNode, name: str) -> list[ShapeUnpack]:
    """Every unpacking of ``name.shape`` / ``name.size()`` in ``scope`` (a function or the
    module; nested functions excluded), in source order."""
    return ctx.cached(("shape_unpacks", id(scope), name), lambda: _shape_unpacks(scope, name))


def scope_order(ctx: FileContext, scope: cst.CSTNode) -> dict[int, int]:
    """The position of each node of ``scope`` in a walk of it (by ``id``), to tell which of
    two nodes of one scope comes first."""
    return ctx.cached(("preorder", id(scope)),
                      lambda: {id(n): i for i, n in enumerate(iter_scope(scope))})


def unpacked_shape(ctx: FileContext, name: str, at: cst.CSTNode,
                   bound_at: cst.CSTNode | None) -> ShapeUnpack | None:
    """The unpacking of ``name``'s shape in effect at ``at``: in the current scope, after
    ``bound_at`` (the binding of ``name`` in use there; None: a parameter) and before ``at``.
    The nearest one before ``at`` wins."""
    scope = ctx.current_function or ctx.module
    order = scope_order(ctx, scope)
    here = order.get(id(at))
    if here is None:
        return None
    since = order.get(id(bound_at), -1) if bound_at is not None else -1
    found: ShapeUnpack | None = None
    for unpack in shape_unpacks(ctx, scope, name):
        position = order.get(id(unpack.node))
        if position is not None and since < position < here:
            found = unpack
    return found


def _shape_unpacks(scope: cst.CSTNode, name: str) -> list[ShapeUnpack]:
    found = []
    for node in iter_scope(scope):
        if type(node) is not cst.Assign or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if not isinstance(target, (cst.Tuple, cst.List)) or any(
                isinstance(e, cst.StarredElement) for e in target.elements):
            continue
        value = node.value
        if isinstance(value, cst.Call) and not value.args:
            value = value.func
            if not (isinstance(value, cst.Attribute) and value.attr.value == "size"):
                continue
        elif not (isinstance(value, cst.Attribute) and value.attr.value == "shape"):
            continue
        if isinstance(value.value, cst.Name) and value.value.value == name:
            names = tuple(e.value.value if isinstance(e.value, cst.Name) else None
                          for e in target.elements)
            found.append(ShapeUnpack(node, names))
    return found
