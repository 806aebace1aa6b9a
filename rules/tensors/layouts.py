"""Memory layouts of tensors for TL501: which dimensions of a permuted, transposed, expanded
or narrowed tensor can still be merged by ``.view()``.

A layout lists, for each dimension of a tensor, the dimension of a contiguous base tensor it
walks in memory (``None``: a broadcast dimension of stride 0 made by ``expand``), plus the
base dimensions that ``narrow`` shortened. Two neighbouring dimensions can be merged by a
view when they walk consecutive base dimensions in order (and the second one was not
narrowed), or when both are broadcast. Merging any other pair fails unless one of them has
size 1. A view to fewer dimensions than there are mergeable runs ("chunks") must merge two
dimensions that cannot be merged: that is the one failure that can be shown without knowing
the sizes. Splitting a dimension, or adding and dropping size-1 dimensions, always works.

Sizes are never known here: the analysis assumes a tensor of unknown origin is contiguous
(the usual case) and that its dimensions are larger than 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.bindings import bindings_before
from torchlint.analysis.context import FileContext
from torchlint.analysis.memory_layout import STEPS, Argument, Layout, mergeable, step, view_groups
from torchlint.analysis.nodes import method_call
from torchlint.analysis.shapes import ShapeUnpack, unpacked_shape
from torchlint.analysis.torch_facts import DTYPE_NAMES

# Calls whose result is laid out like a fresh contiguous tensor of the rank their shape
# arguments give.
_SHAPED_METHODS = frozenset({"view", "reshape", "new_zeros", "new_ones", "new_empty"})
_SHAPED_FACTORIES = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "rand", "randn"))
_MATMULS = frozenset({"torch.matmul", "torch.bmm"})
_CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
_SAME_LAYOUT_METHODS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "bool",
                                  "detach", "clone", "contiguous"})
_DEPTH = 10


@dataclass(frozen=True)
class Shape:
    """What is known of a producer's result: its layout, or at least how many chunks any
    layout it can have holds."""

    layout: Layout | None
    least_chunks: int

    def chunks(self) -> int:
        return self.layout.chunks() if self.layout is not None else self.least_chunks


def produced(ctx: FileContext, producer: cst.BaseExpression, at: cst.CSTNode) -> Shape | None:
    """The layout of ``producer`` (a ``.permute``/``.transpose``/``.T``/``.expand``/
    ``.narrow``... expression already known to be a tensor's), None when it cannot be told."""
    return _transformed(ctx, producer, at, _DEPTH)


def _transformed(ctx: FileContext, node: cst.BaseExpression, at: cst.CSTNode,
                 depth: int) -> Shape | None:
    if isinstance(node, cst.NamedExpr):
        node = node.value
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        base = _base_layout(ctx, node.value, at, depth)
        if node.attr.value == "T":
            if base is None or base.open:
                return Shape(None, 2)  # rank >= 2 reversed (a no-op only in 1-D)
            return Shape(Layout(tuple(reversed(base.dims)), base.narrowed), 0)
        if base is None or base.open or len(base.dims) < 2:
            return Shape(None, 2)
        dims = list(base.dims)
        dims[-1], dims[-2] = dims[-2], dims[-1]
        return Shape(Layout(tuple(dims), base.narrowed), 0)
    if not isinstance(node, cst.Call):
        return None
    qual = ctx.qualified_name(node.func)
    if qual is not None:  # torch.transpose(x, 0, 1), torch.movedim(x, 1, 3)...
        if not qual.startswith("torch.") or qual.count(".") != 1:
            return None
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return None
        receiver: cst.BaseExpression = node.args[0].value
        name = qual.rsplit(".", 1)[1]
        args = node.args[1:]
    else:
        attribute = method_call(node)
        if attribute is None:
            return None
        receiver, name, args = attribute.value, attribute.attr.value, node.args
    if any(arg.star or arg.keyword is not None for arg in args):
        return None
    values = [arg.value for arg in args]
    base = _base_layout(ctx, receiver, at, depth)
    if name not in STEPS:
        return None
    stepped = step(name, base, [_argument(v) for v in values])
    return Shape(*stepped) if stepped is not None else None


def _argument(node: cst.BaseExpression) -> Argument:
    """An argument of a layout step as ``memory_layout.step`` reads it."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return [_int(e.value) if isinstance(e, cst.Element) else None for e in node.elements]
    return _int(node)


def _base_layout(ctx: FileContext, node: cst.BaseExpression, at: cst.CSTNode,
                 depth: int) -> Layout | None:
    """The layout of a tensor a producer is applied to, when it can be told: a fresh
    contiguous tensor of known rank (``x.view(b, n, c)``, ``x.flatten(2)``, a name unpacked
    as ``b, n, c = x.shape``), or the result of another producer (layouts compose)."""
    if depth <= 0:
        return None
    if isinstance(node, cst.Name):
        bound = ctx.binding(node.value, at)
        if bound is None:
            return None
        if bound.kind == "assign" and bound.value is not None:
            found = _base_layout(ctx, bound.value, bound.node, depth - 1)
            if found is not None:
                return found
        rank = _unpacked_rank(ctx, node.value, at,
                              None if bound.kind == "param" else bound.node)
        return Layout.contiguous(rank) if rank is not None else None
    shape = _transformed(ctx, node, at, depth - 1)
    if shape is not None:
        return shape.layout
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return _product_layout(ctx, (node.left, node.right), at, depth)
    if not isinstance(node, cst.Call):
        return None
    qual = ctx.qualified_name(node.func)
    if qual in _MATMULS:
        return _product_layout(ctx, [a.value for a in node.args[:2] if a.keyword is None],
                               at, depth)
    if qual == "torch.nn.functional.scaled_dot_product_attention":
        # the output broadcasts the batch dimensions of query, key and value
        return _product_layout(ctx, [a.value for a in node.args[:3] if a.keyword is None],
                               at, depth)
    if qual in _CONCATENATIONS and node.args and isinstance(
            node.args[0].value, (cst.List, cst.Tuple)):
        for element in node.args[0].value.elements:
            if not isinstance(element, cst.StarredElement):
                found = _base_layout(ctx, element.value, at, depth - 1)
                if found is not None:
                    return Layout.contiguous(len(found.dims), open=found.open)
        return None
    if qual in _SHAPED_FACTORIES:
        rank = _shape_rank([a for a in node.args if a.keyword is None])
        return Layout.contiguous(rank) if rank is not None else None
    attribute = method_call(node)
    if attribute is None or qual is not None:
        return None
    name = attribute.attr.value
    if name in _SHAPED_METHODS:
        if name == "view" and len(node.args) == 1 and _looks_like_dtype(node.args[0].value):
            return None
        rank = _shape_rank(list(node.args))
        return Layout.contiguous(rank) if rank is not None else None
    if name == "flatten":
        if not node.args:
            return Layout.contiguous(1)
        first = _ints([node.args[0].value]) if len(node.args) == 1 and (
            node.args[0].keyword in (None,) or node.args[0].keyword.value == "start_dim") else None
        return Layout.contiguous(first[0] + 1) if first is not None and first[0] >= 0 else None
    if name in _SAME_LAYOUT_METHODS and not node.args:
        inner = _base_layout(ctx, attribute.value, at, depth - 1)
        if name == "contiguous":  # (clone and casts keep the strides of a dense tensor)
            return Layout.contiguous(len(inner.dims)) if inner is not None and not inner.open \
                else None
        return inner
    return None


def _product_layout(ctx: FileContext, operands: Sequence[cst.BaseExpression],
                    at: cst.CSTNode, depth: int) -> Layout | None:
    """``a @ b`` (or attention over query, key and value): a fresh contiguous tensor with at
    least the rank of each operand (batch dimensions broadcast)."""
    ranks = [len(layout.dims) for layout in (
        _base_layout(ctx, operand, at, depth - 1) for operand in operands) if layout]
    return Layout.contiguous(max(ranks), open=True) if ranks else None


def _unpacked_rank(ctx: FileContext, name: str, at: cst.CSTNode,
                   bound_at: cst.CSTNode | None) -> int | None:
    """``3`` when ``b, n, c = name.shape`` (or ``name.size()``) comes, in the same scope,
    after the binding of ``name`` in use at ``at`` and before ``at``."""
    unpack = unpacked_shape(ctx, name, at, bound_at)
    return unpack.rank if unpack is not None else None


def merges_apart(ctx: FileContext, view: cst.Call, producer: cst.BaseExpression,
                 at: cst.CSTNode, shape: Shape) -> bool:
    """Does ``view`` (``.view(b, h, w * c)``) provably merge two dimensions that cannot be
    merged, its sizes being spelled with the names of an unpacking of the permuted
    tensor's shape (``b, c, h, w = x.shape`` then ``x.permute(0, 2, 3, 1)``)? Each argument
    must be a product of those names (or one ``-1`` for what is left) covering the
    permuted dimensions in order; anything else is not told apart and gives False."""
    layout = shape.layout
    if layout is None or layout.open or any(d is None for d in layout.dims):
        return False
    unpack = _size_names(ctx, producer, at, len(layout.dims))
    if unpack is None:
        return False
    names = [name for name in unpack.names if name is not None]
    order = [names[d] for d in layout.dims]  # type: ignore[index]
    groups = _view_groups(view, order)
    if groups is None:
        return False
    for name in names:  # still the sizes at the view: no ``h = h // 2`` in between
        found = next(bindings_before(ctx, name, view), None)
        if found is None or found.node is not unpack.node:
            return False
    for start, stop in groups:
        for left, right in zip(layout.dims[start:stop - 1], layout.dims[start + 1:stop]):
            if not mergeable(left, right, layout.narrowed):
                return True
    return False


def flattens_leading_apart(view: cst.Call, shape: Shape) -> bool:
    """Does ``x.view(-1, x.size(-1))`` (or ``x.shape[-1]``), on a tensor ``x`` of unknown rank,
    merge dimensions its layout put apart? That view keeps the last dimension and merges all
    the others: a no-op on a 2-D tensor, so it is meant for three dimensions or more, and
    there it merges every leading dimension (``x.transpose(0, 1)``: the swapped two)."""
    layout = shape.layout
    attribute = method_call(view, "view")
    if layout is None or not layout.open or attribute is None:
        return False
    receiver = attribute.value
    if not isinstance(receiver, cst.Name) or len(view.args) != 2 or any(
            arg.star or arg.keyword is not None for arg in view.args):
        return False
    first, last = view.args[0].value, view.args[1].value
    if not _is_minus_one(first) or not _last_size_of(last, receiver.value):
        return False
    rank = max(len(layout.dims), 3)
    dims = layout.dims + tuple(range(len(layout.dims), rank))
    leading = dims[:-1]  # more trailing dimensions only lengthen this run
    return any(not mergeable(left, right, layout.narrowed)
               for left, right in zip(leading, leading[1:]))


def _last_size_of(node: cst.BaseExpression, name: str) -> bool:
    """``name.size(-1)`` or ``name.shape[-1]``."""
    if isinstance(node, cst.Call):
        attribute = method_call(node, "size")
        return attribute is not None and isinstance(attribute.value, cst.Name) and (
            attribute.value.value == name) and len(node.args) == 1 and (
            node.args[0].keyword is None) and _is_minus_one(node.args[0].value)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and len(
            node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        owner = node.value
        return owner.attr.value == "shape" and isinstance(owner.value, cst.Name) and (
            owner.value.value == name) and _is_minus_one(node.slice[0].slice.value)
    return False


def _size_names(ctx: FileContext, producer: cst.BaseExpression, at: cst.CSTNode,
                rank: int) -> ShapeUnpack | None:
    """The names a shape unpacking gave the sizes of the (contiguous) tensor ``producer``
    permutes, when they are distinct names still bound to those sizes."""
    receiver = _receiver(ctx, producer)
    if not isinstance(receiver, cst.Name):
        return None
    bound = ctx.binding(receiver.value, at)
    if bound is None:
        return None
    base = _base_layout(ctx, receiver, at, _DEPTH)
    if base is None or base.open or base.narrowed or base.dims != tuple(range(rank)):
        return None
    unpack = unpacked_shape(ctx, receiver.value, at,
                            None if bound.kind == "param" else bound.node)
    if unpack is None or unpack.rank != rank or None in unpack.names or len(
            set(unpack.names)) != rank:
        return None
    return unpack


def _receiver(ctx: FileContext, producer: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor a single ``.permute``/``.transpose``/``torch.movedim(x, ...)`` is applied to."""
    if not isinstance(producer, cst.Call):
        return None
    qual = ctx.qualified_name(producer.func)
    if qual is not None:
        return producer.args[0].value if producer.args and qual.startswith("torch.") else None
    attribute = method_call(producer)
    return attribute.value if attribute is not None else None


def _view_groups(view: cst.Call, order: list[str]) -> list[tuple[int, int]] | None:
    """The run of permuted dimensions (start, stop) each argument of ``view`` covers, when
    every argument is a product of the size names (one ``-1`` may take what is left)."""
    if any(arg.star or arg.keyword is not None for arg in view.args):
        return None
    values = [arg.value for arg in view.args]
    if len(values) == 1 and isinstance(values[0], (cst.Tuple, cst.List)):
        values = [e.value for e in values[0].elements]
    rest = [i for i, v in enumerate(values) if _is_minus_one(v)]
    if len(rest) > 1:
        return None
    return view_groups([None if i in rest else _factors(v) for i, v in enumerate(values)],
                       rest[0] if rest else None, order)

def _factors(value: cst.BaseExpression) -> set[str] | None:
    """``{"w", "c"}`` for ``w * c``; None for anything but a product of distinct names."""
    if isinstance(value, cst.Name) and not value.lpar:
        return {value.value}
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        left, right = _factors(value.left), _factors(value.right)
        if left is None or right is None or left & right:
            return None
        return left | right
    return None


def view_rank(call: cst.Call) -> int | None:
    """How many dimensions ``x.view(...)`` asks for (None: a shape held in a variable)."""
    return _shape_rank(list(call.args))


def _shape_rank(args: Sequence[cst.Arg]) -> int | None:
    if any(arg.star or arg.keyword is not None for arg in args):
        return None
    if len(args) == 1:
        value = args[0].value
        if isinstance(value, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in value.elements):
                return None
            return len(value.elements)
        if isinstance(value, (cst.Integer, cst.UnaryOperation)) or (
                isinstance(value, cst.BinaryOperation) and _is_product(value)):
            return 1
        return None  # view(shape), view((b, -1) + x.shape[2:]): any rank
    return len(args)


def _is_product(node: cst.BaseExpression) -> bool:
    """``n * m`` / ``n // 2``: a number, not a tuple built with ``+`` or ``*``."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, (cst.Multiply, cst.FloorDivide)) and all(
            _is_product(side) for side in (node.left, node.right))
    return isinstance(node, (cst.Name, cst.Integer, cst.Attribute, cst.Subscript)) or (
        isinstance(node, cst.Call) and not isinstance(node.func, cst.Attribute)) or (
        isinstance(node, cst.Call) and node.func.attr.value in ("size", "numel") and bool(
            node.args))


def _looks_like_dtype(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value in DTYPE_NAMES


def _ints(values: Sequence[cst.BaseExpression]) -> list[int] | None:
    found = []
    for value in values:
        if isinstance(value, cst.Element):
            value = value.value
        number = _int(value)
        if number is None:
            return None
        found.append(number)
    return found


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int(node.expression)
        return -inner if inner is not None else None
    return None


def _is_minus_one(node: cst.BaseExpression) -> bool:
    return _int(node) == -1
