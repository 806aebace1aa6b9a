"""The ``ast`` checks of the tensor rules: before libcst parses a file, is there a place
where the rule can really report? Each check mirrors its rule's decision on CPython's tree
and errs only towards True (see :func:`torchlint.engine.triage.check`).

TL510-TL512 share one mirror of the size analysis (``torchlint.analysis.sizes``), run once
per file: the same chains (``nn.Sequential`` elements, the value flowing through
``forward``), the same evaluation of sizes, the same places where a chain stops. What the
analysis may learn from other files (constructor arguments, imported constants, dummy
inputs) is a size known here only by its spelling (:class:`_Sym`): two sizes of one
spelling are equal, any other pair may disagree.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from torchlint.analysis.ast_names import (
    argument as _argument,
)
from torchlint.analysis.ast_names import (
    end as _end,
)
from torchlint.analysis.ast_names import (
    self_attribute as _self_attribute,
)
from torchlint.analysis.ast_names import (
    start as _start,
)
from torchlint.analysis.ast_names import (
    target_names as _target_names,
)
from torchlint.analysis.layer_table import (
    AVG_POOL,
    CROPS,
    DATASETS,
    INPUT_FACTORIES,
    INSTANCE_METHODS,
    KEEP,
    KEEP_FUNCTIONS,
    KEEP_METHODS,
    KEEP_TRANSFORMS,
    LAYERS,
    MAX_POOL,
    NON_CONTIGUOUS_ATTRIBUTES,
    NON_CONTIGUOUS_FUNCTIONS,
    NON_CONTIGUOUS_METHODS,
    RESHAPES,
    SPATIAL_FUNCTIONS,
    accepted_ranks,
)
from torchlint.analysis.memory_layout import Layout, mergeable
from torchlint.analysis.options import Options
from torchlint.engine.triage import FileFacts

__all__ = ["may_flag_tl501", "may_flag_tl502", "may_flag_tl510", "may_flag_tl511",
           "may_flag_tl512"]


def _foreign(qual: str) -> bool:
    """A name from another module than torch or the builtins: project knowledge may make
    it anything (a torch name re-exported, a constant)."""
    return not qual.startswith(("torch.", "builtins."))


# ------------------------------------------------------------------ TL502
_SOFTMAX = {f"torch.nn.functional.{name}": 1 for name in ("softmax", "log_softmax", "softmin")}
_SOFTMAX.update({f"torch.nn.{name}": 0 for name in ("Softmax", "LogSoftmax", "Softmin")})


def may_flag_tl502(facts: FileFacts, options: Options) -> bool:
    """A call of ``F.softmax``/``nn.Softmax``... (through any import or module-level alias)
    with no ``*`` argument and no ``dim`` (or ``dim=None``)."""
    for call in facts.nodes(ast.Call):
        positions = {_SOFTMAX[q] for q in facts.qualnames_of(call.func)  # type: ignore[attr-defined]
                     if q in _SOFTMAX}
        if not positions or any(type(a) is ast.Starred for a in call.args) or any(  # type: ignore[attr-defined]
                k.arg is None for k in call.keywords):  # type: ignore[attr-defined]
            continue
        dim = next((k.value for k in call.keywords if k.arg == "dim"), None)  # type: ignore[attr-defined]
        if dim is not None:
            if _is_none(dim):
                return True
            continue
        if any(len(call.args) <= p or _is_none(call.args[p])  # type: ignore[attr-defined]
               for p in positions):
            return True
    return False


def _is_none(node: ast.expr) -> bool:
    return type(node) is ast.Constant and node.value is None  # type: ignore[attr-defined]


# ------------------------------------------------------------------ TL501
def may_flag_tl501(facts: FileFacts, options: Options) -> bool:
    """``<producer>.view(shape)`` (a ``.permute``, ``.transpose``, ``.T`` ... chained directly
    or the value the name the view is called on was last bound to) where the view may
    merge dimensions the producer put apart: the rule's layouts (``layouts.py``) followed
    on the ``ast`` tree, the bindings as ``bindings_before`` finds them, holding wherever
    a step cannot be told here."""
    views = [c for c in facts.nodes(ast.Call) if type(c.func) is ast.Attribute  # type: ignore[attr-defined]
             and c.func.attr == "view" and c.args and _view_rank(c) is not None]  # type: ignore[attr-defined]
    if not views:
        return False
    for view in views:
        try:
            if _Views(facts, view).may_report():
                return True
        except (_Unsure, RecursionError):
            return True
    return False


class _Unsure(Exception):
    """A step of the rule this check cannot follow: it holds."""


_DEPTH = 10
_SHAPED_METHODS = frozenset({"view", "reshape", "new_zeros", "new_ones", "new_empty"})
_SHAPED_FACTORIES = frozenset(f"torch.{name}" for name in ("zeros", "ones", "empty", "rand",
                                                          "randn"))
_MATMULS = frozenset({"torch.matmul", "torch.bmm"})
_CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
_SAME_LAYOUT = frozenset({"float", "double", "half", "bfloat16", "long", "int", "bool",
                          "detach", "clone", "contiguous"})
_SWAPS = ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis")
# the method names whose meaning a foreign qualified name would change in a base
_LAYOUT_NAMES = frozenset({"t", "permute", "narrow", "expand", "flatten", *_SWAPS,
                           *_SHAPED_METHODS, *_SAME_LAYOUT})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


_Shape = tuple[Layout | None, int]


class _Views:
    """The rule's decision on one ``.view(...)`` call."""

    def __init__(self, facts: FileFacts, view: ast.Call) -> None:
        self.facts = facts
        self.view = view
        self._levels: list[_Level] | None = None

    @property
    def levels(self) -> list[_Level]:
        if self._levels is None:
            self._levels = _levels(self.facts, self.view)
        return self._levels

    def may_report(self) -> bool:
        view = self.view
        found = self.producer(view.func.value)  # type: ignore[attr-defined]
        if found is None:
            return False
        producer, at = found
        shape = self.transformed(producer, at, _DEPTH, top=True)
        if shape is None:
            return False
        layout, least = shape
        target = _view_rank(view)
        assert target is not None
        if target < (layout.chunks() if layout is not None else least):
            return True
        if layout is None:
            return False
        return self.may_merge_apart(producer, at, layout) or _flattens_apart(
            view, layout)

    # --- which producer the view is applied to (the rule's _producer)
    def producer(self, value: ast.expr) -> tuple[ast.expr, ast.AST] | None:
        if _may_produce(self.facts, value):
            return value, self.view
        if type(value) is not ast.Name or value.id not in _producer_names(self.facts):
            return None
        bound = self.binding(value.id, self.view, last=False)
        if bound is not None and bound[0] == "unknown":
            bound = _rebound_in_branch(bound[1], value.id)
        if bound is not None and bound[0] == "assign" and bound[2] is not None and (
                _may_produce(self.facts, bound[2])):
            return bound[2], bound[1]
        return None

    # --- bindings (bindings_before, on the statements around the view)
    def binding(self, name: str, at: ast.AST, *, last: bool = True
                ) -> tuple[str, ast.AST, ast.expr | None] | None:
        """The first binding ``bindings_before`` yields (``last``: only those
        ``last_binding`` returns)."""
        found = self._first_binding(name, at)
        if last and found is not None and found[0] not in ("assign", "for", "with", "param"):
            return None
        return found

    def _first_binding(self, name: str, at: ast.AST
                       ) -> tuple[str, ast.AST, ast.expr | None] | None:
        levels = self.levels
        depth = len(levels) - 1
        stop = levels[depth][3]
        if at is not self.view:  # a statement of a block around the view (else: none)
            depth = next((k for k in range(depth, -1, -1)
                          if any(s is at for s in levels[k][2])), -1)
            if depth < 0:
                return None
            if levels[depth][4]:
                raise _Unsure  # a one-line block: libcst holds no IndentedBlock there
            stop = next(i for i, s in enumerate(levels[depth][2]) if s is at)
        for k in range(depth, -1, -1):
            owner, kind, body, position, _ = levels[k]
            found = _in_statements(body[:stop if k == depth else position], name)
            if found is not None:
                return found
            owner_kind = type(owner)
            if owner_kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                args = owner.args  # type: ignore[attr-defined]
                for param in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                    if param.arg == name:
                        return "param", param, None
                return None
            if owner_kind is ast.ClassDef:
                return None
            if owner_kind in (ast.For, ast.AsyncFor, ast.While) and kind == "body":
                if owner_kind is not ast.While and name in _target_names(owner.target):  # type: ignore[attr-defined]
                    return "for", owner, owner.iter  # type: ignore[attr-defined]
                if any(name in _bound(s) for s in owner.body):  # type: ignore[attr-defined]
                    return "unknown", owner, None
        return None

    # --- layouts (layouts._transformed and _base_layout)
    def transformed(self, node: ast.expr, at: ast.AST, depth: int, *, top: bool = False
                    ) -> _Shape | None:
        if type(node) is ast.NamedExpr:
            node = node.value  # type: ignore[attr-defined]
        if type(node) is ast.Attribute and node.attr in ("T", "mT"):  # type: ignore[attr-defined]
            base = self.base(node.value, at, depth)  # type: ignore[attr-defined]
            if node.attr == "T":  # type: ignore[attr-defined]
                if base is None or base.open:
                    return None, 2
                return Layout(tuple(reversed(base.dims)), base.narrowed), 0
            if base is None or base.open or len(base.dims) < 2:
                return None, 2
            dims = list(base.dims)
            dims[-1], dims[-2] = dims[-2], dims[-1]
            return Layout(tuple(dims), base.narrowed), 0
        if type(node) is not ast.Call:
            return None
        call: ast.Call = node  # type: ignore[assignment]
        qual = _qual(self.facts, call.func)
        if qual is _FOREIGN:  # the rule gives None unless the name is rebound here
            if type(call.func) is not ast.Attribute or call.func.attr not in _LAYOUT_NAMES:
                return None
            if not top:
                raise _Unsure
            qual = None
        if qual is not None:
            if not qual.startswith("torch.") or qual.count(".") != 1:  # type: ignore[union-attr]
                return None
            if not call.args or type(call.args[0]) is ast.Starred:
                return None
            receiver, name, args = call.args[0], qual.rsplit(".", 1)[1], call.args[1:]  # type: ignore[union-attr]
        elif type(call.func) is ast.Attribute:
            receiver, name, args = call.func.value, call.func.attr, call.args
        else:
            return None
        if call.keywords or any(type(a) is ast.Starred for a in args):
            return None
        if name not in ("t", "permute", "narrow", "expand", *_SWAPS):
            return None
        base = self.base(receiver, at, depth)
        return _apply(name, list(args), base)

    def base(self, node: ast.expr, at: ast.AST, depth: int) -> Layout | None:
        if depth <= 0:
            return None
        if type(node) is ast.Name:
            name = node.id  # type: ignore[attr-defined]
            bound = self.binding(name, at)
            if bound is None:
                return None
            kind, where, value = bound
            if kind == "assign" and value is not None:
                found = self.base(value, where, depth - 1)
                if found is not None:
                    return found
            names = self.unpacked(name, at, None if kind == "param" else where)
            return Layout.contiguous(len(names)) if names is not None else None
        shape = self.transformed(node, at, depth - 1)
        if shape is not None:
            return shape[0]
        if type(node) is ast.BinOp and type(node.op) is ast.MatMult:  # type: ignore[attr-defined]
            return self.product((node.left, node.right), at, depth)  # type: ignore[attr-defined]
        if type(node) is not ast.Call:
            return None
        call: ast.Call = node  # type: ignore[assignment]
        qual = _qual(self.facts, call.func)
        if qual is _FOREIGN:
            if type(call.func) is ast.Attribute and call.func.attr in _LAYOUT_NAMES:
                raise _Unsure
            return None
        operands = [a.value if type(a) is ast.Starred else a for a in call.args]
        if qual in _MATMULS:
            return self.product(operands[:2], at, depth)
        if qual == "torch.nn.functional.scaled_dot_product_attention":
            return self.product(operands[:3], at, depth)
        first = call.args[0] if call.args else call.keywords[0].value if call.keywords else None
        if qual in _CONCATENATIONS and type(first) in (ast.List, ast.Tuple):
            for element in first.elts:  # type: ignore[union-attr]
                if type(element) is not ast.Starred:
                    found = self.base(element, at, depth - 1)
                    if found is not None:
                        return Layout.contiguous(len(found.dims), open=found.open)
            return None
        if qual in _SHAPED_FACTORIES:
            rank = _shape_rank(call.args, [])
            return Layout.contiguous(rank) if rank is not None else None
        if type(call.func) is not ast.Attribute or qual is not None:
            return None
        name = call.func.attr
        if name in _SHAPED_METHODS:
            rank = _shape_rank(call.args, call.keywords)
            return Layout.contiguous(rank) if rank is not None else None
        if name == "flatten":
            given = [*call.args, *call.keywords]
            if not given:
                return Layout.contiguous(1)
            if len(given) != 1 or type(given[0]) is ast.keyword and (
                    given[0].arg != "start_dim"):  # type: ignore[union-attr]
                return None
            dim = _literal(given[0].value if type(given[0]) is ast.keyword else given[0])  # type: ignore[union-attr,arg-type]
            return Layout.contiguous(dim + 1) if dim is not None and dim >= 0 else None
        if name in _SAME_LAYOUT and not call.args and not call.keywords:
            inner = self.base(call.func.value, at, depth - 1)
            if name == "contiguous":
                return Layout.contiguous(len(inner.dims)) if inner is not None and (
                    not inner.open) else None
            return inner
        return None

    def product(self, operands: Iterable[ast.expr], at: ast.AST, depth: int
                ) -> Layout | None:
        ranks = [len(found.dims) for found in (
            self.base(operand, at, depth - 1) for operand in operands) if found]
        return Layout.contiguous(max(ranks), open=True) if ranks else None

    def unpacked(self, name: str, at: ast.AST, bound_at: ast.AST | None
                 ) -> tuple[str | None, ...] | None:
        """Mirrors ``unpacked_shape``: the names of the nearest ``a, b = name.shape`` of the
        view's scope after ``bound_at`` and before ``at``."""
        scope = _scope(self.levels)
        if scope is _NO_SCOPE:
            return None
        here = _start(at)
        since = _start(bound_at) if bound_at is not None else (0, -1)
        found: tuple[ast.Assign, tuple[str | None, ...]] | None = None
        for unpack, names in _unpacks(self.facts).get(name, ()):
            if since < _start(unpack) < here and _innermost_scope(self.facts, unpack) is scope:
                if found is None or _start(unpack) > _start(found[0]):
                    found = unpack, names
        return found[1] if found is not None else None

    def may_merge_apart(self, producer: ast.expr, at: ast.AST, layout: Layout) -> bool:
        """Mirrors ``merges_apart``: the view's sizes are products of the names a shape
        unpacking gave the permuted tensor's sizes (one ``-1`` for what is left), and one
        of them covers dimensions that cannot merge (whether those names still hold the
        sizes at the view is not asked: that errs towards holding)."""
        if layout.open or any(d is None for d in layout.dims):
            return False
        names = self.size_names(producer, at, len(layout.dims))
        if names is None:
            return False
        groups = _view_groups(self.view, [names[d] for d in layout.dims])  # type: ignore[index]
        return groups is not None and any(
            not mergeable(left, right, layout.narrowed) for start, stop in groups
            for left, right in zip(layout.dims[start:stop - 1], layout.dims[start + 1:stop]))

    def size_names(self, producer: ast.expr, at: ast.AST, rank: int
                   ) -> tuple[str, ...] | None:
        """Mirrors ``_size_names``: the distinct names ``b, c, h, w = x.shape`` gave the
        sizes of the contiguous tensor ``x`` the producer permutes."""
        if type(producer) is ast.NamedExpr:
            producer = producer.value  # type: ignore[attr-defined]
        if type(producer) is not ast.Call:
            return None
        func, args = producer.func, producer.args  # type: ignore[attr-defined]
        qual = _qual(self.facts, func)
        receiver = func.value if qual in (None, _FOREIGN) and type(func) is ast.Attribute else (
            args[0] if qual not in (None, _FOREIGN) and args else None)
        if type(receiver) is ast.Starred:
            receiver = receiver.value  # type: ignore[attr-defined]
        if type(receiver) is not ast.Name:
            return None
        bound = self.binding(receiver.id, at)  # type: ignore[attr-defined]
        if bound is None:
            return None
        base = self.base(receiver, at, _DEPTH)
        if base is None or base.open or base.narrowed or base.dims != tuple(range(rank)):
            return None
        names = self.unpacked(receiver.id, at, None if bound[0] == "param" else bound[1])  # type: ignore[attr-defined]
        if names is None or len(names) != rank or None in names or len(set(names)) != rank:
            return None
        return names  # type: ignore[return-value]


def _view_groups(view: ast.Call, order: list[str]) -> list[tuple[int, int]] | None:
    """Mirrors ``layouts._view_groups``: the run of permuted dimensions each argument of
    the view covers."""
    if view.keywords or any(type(a) is ast.Starred for a in view.args):
        return None
    values = list(view.args)
    if len(values) == 1 and type(values[0]) in (ast.Tuple, ast.List):
        values = [e.value if type(e) is ast.Starred else e  # type: ignore[attr-defined]
                  for e in values[0].elts]  # type: ignore[attr-defined]
    rest = [i for i, v in enumerate(values) if _literal(v) == -1]
    if len(rest) > 1:
        return None
    split = rest[0] if rest else len(values)
    groups: list[tuple[int, int]] = []
    position = 0
    for value in values[:split]:
        factors = _factors(value)
        if factors is None:
            return None
        stop = position + len(factors)
        if set(order[position:stop]) != factors or stop > len(order):
            return None
        groups.append((position, stop))
        position = stop
    end = len(order)
    tail: list[tuple[int, int]] = []
    for value in reversed(values[split + 1:]):
        factors = _factors(value)
        if factors is None:
            return None
        start = end - len(factors)
        if start < position or set(order[start:end]) != factors:
            return None
        tail.insert(0, (start, end))
        end = start
    if rest:
        if end <= position:
            return None
        groups.append((position, end))
    elif end != position:
        return None
    return groups + tail


def _factors(value: ast.expr) -> set[str] | None:
    """``{"w", "c"}`` for ``w * c``; None for anything but a product of distinct names."""
    if type(value) is ast.Name:
        return {value.id}  # type: ignore[attr-defined]
    if type(value) is ast.BinOp and type(value.op) is ast.Mult:  # type: ignore[attr-defined]
        left, right = _factors(value.left), _factors(value.right)  # type: ignore[attr-defined]
        if left is None or right is None or left & right:
            return None
        return left | right
    return None


def _producer_names(facts: FileFacts) -> frozenset[str]:
    """The names some ``name = <producer>`` binds: the only ones a view of a name can
    reach a producer through."""
    return facts.once("tl501 producer names", lambda: frozenset(
        node.targets[0].id if type(node) is ast.Assign else node.target.id  # type: ignore[attr-defined]
        for node in facts.nodes(ast.Assign, ast.AnnAssign)
        if (type(node) is ast.AnnAssign or len(node.targets) == 1) and type(  # type: ignore[attr-defined]
            node.targets[0] if type(node) is ast.Assign else node.target) is ast.Name  # type: ignore[attr-defined]
        and node.value is not None and _may_produce(facts, node.value)))  # type: ignore[attr-defined]


def _apply(name: str, args: list[ast.expr], base: Layout | None) -> _Shape | None:
    """Mirrors the producers' layouts in ``layouts._transformed``."""
    if name == "t":
        if base is not None and not base.open and len(base.dims) == 2:
            return Layout((base.dims[1], base.dims[0]), base.narrowed), 0
        return None, 2
    if name == "permute":
        order = _ints(list(args[0].elts) if len(args) == 1 and type(args[0]) in (  # type: ignore[attr-defined]
            ast.Tuple, ast.List) else args)
        if order is None or sorted(order) != list(range(len(order))):
            return None
        start = base.at_least(len(order)) if base is not None else Layout.contiguous(len(order))
        if start is None or len(start.dims) != len(order):
            return None
        return Layout(tuple(start.dims[i] for i in order), start.narrowed), 0
    if name in _SWAPS:
        pair = _ints(args)
        if pair is None or len(pair) != 2:
            return None
        first, second = pair
        if first < 0 or second < 0:
            both = first < 0 and second < 0 and first != second
            return None, 2 if both and name not in ("movedim", "moveaxis") else 1
        start = (base or Layout.contiguous(0, open=True)).at_least(max(first, second) + 1)
        if start is None:
            return None
        dims = list(start.dims)
        if name in ("movedim", "moveaxis"):
            dims.insert(second, dims.pop(first))
        else:
            dims[first], dims[second] = dims[second], dims[first]
        return Layout(tuple(dims), start.narrowed, start.open), 0
    if name == "narrow":
        dim = _ints(args[:1])
        if dim is None or dim[0] < 0:
            return None
        start = (base or Layout.contiguous(0, open=True)).at_least(dim[0] + 1)
        if start is None:
            return None
        origin = start.dims[dim[0]]
        narrowed = start.narrowed | {origin} if origin is not None and dim[0] > 0 else (
            start.narrowed)
        return Layout(start.dims, narrowed, start.open), 0
    # expand
    if len(args) == 1 and type(args[0]) not in (ast.Tuple, ast.List) and _literal(args[0]) is None:
        return None
    sizes = list(args[0].elts) if len(args) == 1 and type(args[0]) in (  # type: ignore[attr-defined]
        ast.Tuple, ast.List) else args
    kept = len(base.dims) if base is not None and not base.open else None
    dims: list[int | None] = []
    for index, size in enumerate(sizes):
        offset = index - (len(sizes) - kept) if kept is not None else None
        if _literal(size) == -1:
            if offset is not None and offset >= 0 and base is not None:
                dims.append(base.dims[offset])
            elif kept is None:
                dims.append(index)
            else:
                return None
        else:
            dims.append(None)
    if kept is None:
        counter = iter(range(len(dims)))
        dims = [None if d is None else next(counter) for d in dims]
    return Layout(tuple(dims), base.narrowed if base is not None else frozenset()), 0


def _flattens_apart(view: ast.Call, layout: Layout) -> bool:
    """Mirrors ``flattens_leading_apart``: ``x.view(-1, x.size(-1))`` on an open layout
    whose leading dimensions cannot merge."""
    receiver = view.func.value  # type: ignore[attr-defined]
    if not layout.open or type(receiver) is not ast.Name or len(view.args) != 2 or (
            view.keywords or any(type(a) is ast.Starred for a in view.args)):
        return False
    first, last = view.args
    if _literal(first) != -1 or not _last_size_of(last, receiver.id):  # type: ignore[attr-defined]
        return False
    rank = max(len(layout.dims), 3)
    dims = layout.dims + tuple(range(len(layout.dims), rank))
    leading = dims[:-1]
    return any(not mergeable(a, b, layout.narrowed) for a, b in zip(leading, leading[1:]))


def _last_size_of(node: ast.expr, name: str) -> bool:
    if type(node) is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        return type(func) is ast.Attribute and func.attr == "size" and type(
            func.value) is ast.Name and func.value.id == name and len(node.args) == 1 and (  # type: ignore[attr-defined]
            not node.keywords) and _literal(node.args[0]) == -1  # type: ignore[attr-defined]
    if type(node) is ast.Subscript:
        owner = node.value  # type: ignore[attr-defined]
        return type(owner) is ast.Attribute and owner.attr == "shape" and type(  # type: ignore[attr-defined]
            owner.value) is ast.Name and owner.value.id == name and _literal(  # type: ignore[attr-defined]
            node.slice) == -1  # type: ignore[attr-defined]
    return False


_FOREIGN = "<foreign>"


def _qual(facts: FileFacts, func: ast.expr) -> str | None:
    """The rule's ``qualified_name`` of a callee: one torch name, None, or _FOREIGN (a
    name of another module, or several: the rule may see None where it is rebound)."""
    quals = facts.qualnames_of(func)
    if not quals:
        return None
    if len(quals) == 1:
        qual = next(iter(quals))
        if qual.startswith("torch."):
            return qual
    return _FOREIGN


def _may_produce(facts: FileFacts, node: ast.expr) -> bool:
    """Mirrors ``non_contiguous_producer``: may ``node`` lay a tensor out of order?"""
    if type(node) is ast.NamedExpr:
        node = node.value  # type: ignore[attr-defined]
    if type(node) is ast.Attribute:
        return node.attr in NON_CONTIGUOUS_ATTRIBUTES and not _is_self(node.value) and (  # type: ignore[attr-defined]
            not facts.qualnames_of(node) or any(_foreign(q) for q in facts.qualnames_of(node)))
    if type(node) is not ast.Call or type(node.func) is not ast.Attribute:  # type: ignore[attr-defined]
        return False
    call: ast.Call = node  # type: ignore[assignment]
    func = call.func
    method = func.attr  # type: ignore[attr-defined]
    if method not in NON_CONTIGUOUS_METHODS:
        return False
    quals = facts.qualnames_of(func)
    if any(q in NON_CONTIGUOUS_FUNCTIONS and not (
            q == "torch.narrow" and _outermost(_argument(call, "dim", 1))) for q in quals):
        return True
    if quals and not any(_foreign(q) for q in quals):
        return False
    if _is_self(func.value):  # type: ignore[attr-defined]
        return False
    if method == "t" and (call.args or call.keywords):
        return False
    if method in ("permute", *_SWAPS):
        return bool(call.args or call.keywords)
    return not (method == "narrow" and _outermost(_argument(call, "dim", 0)))


def _outermost(dim: ast.expr | None) -> bool:
    return type(dim) is ast.Constant and type(dim.value) is int and dim.value == 0  # type: ignore[attr-defined]


def _is_self(node: ast.expr) -> bool:
    return type(node) is ast.Name and node.id in ("self", "cls")  # type: ignore[attr-defined]


# --- the statements around a view
# (owner, field, statements, index of the one holding the view, a one-line block)
_Level = tuple[ast.AST, str, list[ast.stmt], int, bool]


def _levels(facts: FileFacts, node: ast.AST) -> list[_Level]:
    """The blocks from the module down to the innermost statement holding ``node``:
    positions, no parent map."""
    assert facts.tree is not None
    levels: list[_Level] = []
    owner: ast.AST = facts.tree
    at = _start(node)
    while True:
        for field, body in _blocks(owner):
            starts = [_stmt_start(s) for s in body]
            index = bisect.bisect_right(starts, at) - 1
            if index >= 0 and at <= _end(body[index]) and _start(node) >= starts[index]:
                inline = owner is not facts.tree and body[0].lineno == getattr(
                    owner, "lineno", 0) and type(owner) is not ast.Try
                levels.append((owner, field, body, index, inline))
                owner = body[index]
                break
        else:
            break
        if owner is node:
            break
    if not levels:
        raise _Unsure
    statement = levels[-1][2][levels[-1][3]]
    if type(statement) in _SCOPES:
        raise _Unsure  # in a decorator, a default or an annotation
    if any(type(n) is ast.Lambda and _start(n) <= at <= _end(n)
           for field in _header(statement) for n in ast.walk(field)):
        raise _Unsure  # a lambda's own scope
    return levels


def _blocks(owner: ast.AST) -> Iterator[tuple[str, list[ast.stmt]]]:
    kind = type(owner)
    if kind is ast.Try or kind is getattr(ast, "TryStar", None):
        yield "body", owner.body  # type: ignore[attr-defined]
        for handler in owner.handlers:  # type: ignore[attr-defined]
            yield "handler", handler.body
        yield "orelse", owner.orelse  # type: ignore[attr-defined]
        yield "finalbody", owner.finalbody  # type: ignore[attr-defined]
    elif kind is ast.Match:
        for case in owner.cases:  # type: ignore[attr-defined]
            yield "case", case.body
    else:
        for field in ("body", "orelse"):
            body = getattr(owner, field, None)
            if type(body) is list and body and isinstance(body[0], ast.stmt):
                yield field, body


def _header(statement: ast.AST) -> Iterator[ast.AST]:
    """The expressions of a statement outside its blocks."""
    for field, value in ast.iter_fields(statement):
        if field in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for item in value if type(value) is list else [value]:
            if isinstance(item, ast.AST):
                yield item


def _stmt_start(statement: ast.stmt) -> tuple[int, int]:
    decorators = getattr(statement, "decorator_list", None)
    return min(_start(statement), *(_start(d) for d in decorators)) if decorators else (
        _start(statement))


def _in_statements(body: list[ast.stmt], name: str) -> tuple[str, ast.AST, ast.expr | None] | None:
    """Mirrors ``_in_statements``: the latest binding of ``name`` in ``body``."""
    for statement in reversed(body):
        kind = type(statement)
        if kind in (ast.With, ast.AsyncWith) and statement.body[0].lineno != statement.lineno \
                and not any(name in _target_names(item.optional_vars)  # type: ignore[attr-defined]
                            for item in statement.items):  # type: ignore[attr-defined]
            if any(name in _bound(s) for s in statement.body):  # type: ignore[attr-defined]
                found = _in_statements(statement.body, name)  # type: ignore[attr-defined]
                if found is not None:
                    return found
            continue
        found = _binding_by(statement, name)
        if found is not None:
            return found
    return None


def _binding_by(statement: ast.stmt, name: str) -> tuple[str, ast.AST, ast.expr | None] | None:
    kind = type(statement)
    node: Any = statement
    if kind is ast.Assign and len(node.targets) == 1:
        target = node.targets[0]
        if type(target) is ast.Name:
            if target.id == name:
                return "assign", node, node.value
            return ("unknown", node, None) if name in _bound(node.value) else None
        if type(target) in (ast.Tuple, ast.List) and name in _target_names(target):
            return "unpack", node, node.value
    elif kind is ast.AnnAssign and type(node.target) is ast.Name and node.target.id == name:
        return ("unknown", node, None) if node.value is None else ("assign", node, node.value)
    elif kind is ast.AugAssign and type(node.target) is ast.Name and node.target.id == name:
        return "augmented", node, node.value
    elif kind in (ast.With, ast.AsyncWith):
        for item in node.items:
            if type(item.optional_vars) is ast.Name and item.optional_vars.id == name and not any(
                    name in _bound(s) for s in node.body):
                return "with", node, item.context_expr
    return ("unknown", node, None) if name in _bound(node) else None


def _rebound_in_branch(statement: ast.AST, name: str
                       ) -> tuple[str, ast.AST, ast.expr | None] | None:
    """Mirrors the rule's ``_rebound_in_branch``: ``if c: name = ...`` with no other branch."""
    if type(statement) is not ast.If or statement.orelse or (  # type: ignore[attr-defined]
            statement.body[0].lineno == statement.lineno):  # type: ignore[attr-defined]
        return None
    last = next((s for s in reversed(statement.body) if name in _bound(s)), None)  # type: ignore[attr-defined]
    if type(last) is not ast.Assign or len(last.targets) != 1 or type(  # type: ignore[union-attr]
            last.targets[0]) is not ast.Name or last.targets[0].id != name:  # type: ignore[union-attr]
        return None
    return "assign", last, last.value  # type: ignore[union-attr]


def _bound(node: ast.AST) -> set[str]:
    """Mirrors ``names_bound_anywhere``: the names ``node`` binds, nested scopes aside."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current: Any = stack.pop()
        kind = type(current)
        if kind is ast.Assign or kind is ast.Delete:
            for target in current.targets:
                names.update(_target_names(target))
        elif kind in (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor):
            names.update(_target_names(current.target))
        elif kind in (ast.Import, ast.ImportFrom):
            names.update(a.asname or a.name.split(".")[0] for a in current.names if a.name != "*")
        elif kind in _SCOPES:
            names.add(current.name)
            continue
        elif kind is ast.Lambda:
            continue
        elif kind in (ast.With, ast.AsyncWith):
            for item in current.items:
                names.update(_target_names(item.optional_vars))
        elif kind in (ast.Global, ast.Nonlocal):
            names.update(current.names)
        elif kind is ast.ExceptHandler and current.name:
            names.add(current.name)
        stack.extend(ast.iter_child_nodes(current))
    return names


# --- shape unpackings (analysis/shapes.py)
_NO_SCOPE = object()


def _scope(levels: list[_Level]) -> object:
    """The rule's ``current_function or module`` at the view (_NO_SCOPE: a class body
    nearer, where no unpacking is looked for)."""
    for owner, *_ in reversed(levels):
        if type(owner) in (ast.FunctionDef, ast.AsyncFunctionDef):
            return owner
        if type(owner) is ast.ClassDef:
            return _NO_SCOPE
    return None


def _unpacks(facts: FileFacts) -> dict[str, list[tuple[ast.Assign, tuple[str | None, ...]]]]:
    """Name -> the ``a, b, c = name.shape`` (or ``name.size()``) of the file, with the
    names they give the sizes (None: no plain name)."""
    return facts.once("tl501 unpacks", lambda: _find_unpacks(facts))


def _find_unpacks(facts: FileFacts
                  ) -> dict[str, list[tuple[ast.Assign, tuple[str | None, ...]]]]:
    found: dict[str, list[tuple[ast.Assign, tuple[str | None, ...]]]] = {}
    for node in facts.nodes(ast.Assign):
        assign: Any = node
        if len(assign.targets) != 1 or type(assign.targets[0]) not in (ast.Tuple, ast.List) or any(
                type(e) is ast.Starred for e in assign.targets[0].elts):
            continue
        value = assign.value
        if type(value) is ast.Call and not value.args and not value.keywords:
            value = value.func
            if not (type(value) is ast.Attribute and value.attr == "size"):
                continue
        elif not (type(value) is ast.Attribute and value.attr == "shape"):
            continue
        if type(value.value) is ast.Name:
            names = tuple(e.id if type(e) is ast.Name else None for e in assign.targets[0].elts)
            found.setdefault(value.value.id, []).append((assign, names))
    return found


def _innermost_scope(facts: FileFacts, node: ast.AST) -> object:
    """The function whose scope holds ``node`` (None: the module's; _NO_SCOPE: a class or
    a lambda nearer)."""
    at = _start(node)
    around = [s for s in facts.nodes(*_SCOPES, ast.Lambda)
              if _start(s) < at <= _end(s)]
    if not around:
        return None
    inner = max(around, key=_start)
    return inner if type(inner) in (ast.FunctionDef, ast.AsyncFunctionDef) else _NO_SCOPE


def _ints(values: list[ast.expr]) -> list[int] | None:
    found = [_literal(v) for v in values]
    return None if any(v is None for v in found) else found  # type: ignore[return-value]


def _literal(node: ast.expr | None) -> int | None:
    """An integer literal (``-1`` too); None for anything else."""
    if type(node) is ast.Constant and type(node.value) is int:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    if type(node) is ast.UnaryOp and type(node.op) is ast.USub:  # type: ignore[attr-defined]
        inner = _literal(node.operand)  # type: ignore[attr-defined]
        return -inner if inner is not None else None
    return None


def _shape_rank(args: list[ast.expr], keywords: list[ast.keyword]) -> int | None:
    """Mirrors ``layouts._shape_rank``."""
    if keywords or any(type(a) is ast.Starred for a in args):
        return None
    if len(args) != 1:
        return len(args)
    value = args[0]
    if type(value) in (ast.Tuple, ast.List):
        elements = value.elts  # type: ignore[attr-defined]
        return None if any(type(e) is ast.Starred for e in elements) else len(elements)
    if type(value) is ast.Constant:
        return 1 if type(value.value) is int else None  # type: ignore[attr-defined]
    if type(value) is ast.UnaryOp or type(value) is ast.BinOp and _is_product(value):
        return 1
    return None


def _view_rank(call: ast.Call) -> int | None:
    """Mirrors ``view_rank``: how many dimensions the view asks for (None: unknown), and
    nothing for a dtype view (a keyword argument)."""
    return _shape_rank(call.args, call.keywords)


def _is_product(node: ast.expr) -> bool:
    if type(node) is ast.BinOp:
        return type(node.op) in (ast.Mult, ast.FloorDiv) and _is_product(  # type: ignore[attr-defined]
            node.left) and _is_product(node.right)  # type: ignore[attr-defined]
    if type(node) is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        return type(func) is not ast.Attribute or func.attr in ("size", "numel") and bool(
            node.args)  # type: ignore[attr-defined]
    if type(node) is ast.Constant:
        return type(node.value) in (int, bool) or node.value is None  # type: ignore[attr-defined]
    return type(node) in (ast.Name, ast.Attribute, ast.Subscript)


# ------------------------------------------------------------------ TL510-TL512
def may_flag_tl510(facts: FileFacts, options: Options) -> bool:
    return "size" in _size_kinds(facts, options)


def may_flag_tl511(facts: FileFacts, options: Options) -> bool:
    return "flatten" in _size_kinds(facts, options)


def may_flag_tl512(facts: FileFacts, options: Options) -> bool:
    return "rank" in _size_kinds(facts, options)


def _size_kinds(facts: FileFacts, options: Options) -> frozenset[str]:
    """The kinds of mismatch ("size", "flatten", "rank") the size analysis may find
    (computed once per file and options: the three rules ask in turn)."""
    return facts.once(("size kinds", options), lambda: _find_size_kinds(facts, options))


def _find_size_kinds(facts: FileFacts, options: Options) -> frozenset[str]:
    kinds: set[str] = set()
    if facts.tree is not None and "torch" in facts.top_modules:
        try:
            _Mirror(facts, options, kinds).run()
        except _AllFound:
            pass
        except Exception:  # noqa: BLE001 - a shape this mirror cannot read: the rules may fire
            kinds.update(_ALL)
    return frozenset(kinds)


_ALL = frozenset({"size", "flatten", "rank"})


class _AllFound(Exception):
    """Every kind is found: nothing more to learn from the file."""


# --- the values: a size known here, one known only by its spelling, or surely unknown
class _Unknown:
    """What the analysis can never prove here (its ``Unknown``)."""

    def __repr__(self) -> str:
        return "UNK"


UNK = _Unknown()


class _NamingUnknown(_Unknown):
    """An unknown value of a ``forward`` chain whose reason (the label of the step that
    stops on it) may name a flatten, a view or a reshape: such a step makes the analysis
    ask the project for an input (``_flattens_images``)."""


UNK_NAMING = _NamingUnknown()


def _names_flatten(text: str) -> bool:
    return any(word in text for word in _FLATTENS)


@dataclass(frozen=True)
class _Sym:
    """A value the analysis may know (from a construction, an imported constant, a stated
    input) but this check does not: ``key`` its spelling (None: anything). A product of
    named factors is kept as a coefficient and the sorted factors, so that ``4 * c`` and
    ``c * 4`` are one size."""

    key: object = None

    def __repr__(self) -> str:
        return f"Sym({self.key!r})"


WILD = _Sym()


def _int(value: object) -> bool:
    return type(value) is int


def _maybe(value: object) -> bool:
    """May the analysis know ``value`` as a size?"""
    return type(value) is int or type(value) is _Sym


def _may_differ(left: object, right: object) -> bool:
    if not (_maybe(left) and _maybe(right)):
        return False
    if type(left) is int and type(right) is int:
        return left != right
    return not (type(left) is _Sym and left == right and left.key is not None)  # type: ignore[union-attr]


def _join(left: object, right: object) -> object:
    """One value covering both (the analysis may reach either)."""
    if left == right and (type(left) is not _Sym or left.key is not None):  # type: ignore[union-attr]
        return left
    return WILD


def _if_rank2(rank: object, two: object, other: object) -> object:
    """``two if rank == 2 else other``, both when the rank is known only by spelling."""
    if type(rank) is _Sym:
        return _join(two, other)
    return two if rank == 2 else other


def _monomial(value: object) -> tuple[object, tuple[str, ...]] | None:
    if type(value) is int:
        return value, ()
    if type(value) is _Sym and type(value.key) is tuple and value.key[0] == "*":  # type: ignore[union-attr,index]
        return value.key[1], value.key[2]  # type: ignore[union-attr,index]
    if type(value) is _Sym and value.key is not None:  # type: ignore[union-attr]
        return 1, (repr(value.key),)  # type: ignore[union-attr]
    return None


def _symbolic(op: type, left: object, right: object) -> object:
    """Arithmetic where one side is a :class:`_Sym`."""
    if left is UNK or right is UNK or type(left) is bool or type(right) is bool:
        return UNK
    if not all(type(v) in (int, float, _Sym) for v in (left, right)):
        return UNK
    if op is ast.Mult:
        a, b = _monomial(left), _monomial(right)
        if a is not None and b is not None:
            coefficient = a[0] * b[0]  # type: ignore[operator]
            factors = tuple(sorted(a[1] + b[1]))
            if not factors:
                return coefficient
            if coefficient == 1 and len(factors) == 1 and type(left) is _Sym and (
                    _monomial(left) == (1, factors)):
                return left
            if coefficient == 1 and len(factors) == 1 and type(right) is _Sym and (
                    _monomial(right) == (1, factors)):
                return right
            return _Sym(("*", coefficient, factors))
    if WILD in (left, right):
        return WILD
    return _Sym((op.__name__, left, right))


# --- layers and sequences, as the analysis builds them
@dataclass(frozen=True)
class _Layer:
    name: str
    family: str
    dims: int
    in_size: object
    out_size: object
    args: tuple[tuple[str, object], ...] = ()

    def arg(self, name: str, default: object = None) -> object:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.args)


@dataclass(frozen=True)
class _Seq:
    elements: tuple[object, ...]


@dataclass
class _Builder:
    """``nn.Sequential()`` filled by ``add_module``."""

    elements: list[object]


@dataclass
class _Ordered:
    elements: list[object]


_KEEPERS = frozenset({"keep", "dropnd", "pool", "adaptive", "pad", "upsample"})
_SIZED = frozenset({"linear", "conv", "convT", "bn", "in", "gn", "ln", "rnn", "cell", "mha",
                    "same", "block"})
_MAX_DEPTH = 4
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class _Value:
    """A tensor flowing through a chain (the analysis's ``Value``); ``spatial`` a tuple,
    None (unknown) or WILD (any); ``flattened`` True, False or None (either)."""

    rank: object = UNK
    channels: object = UNK
    features: object = UNK
    spatial: object = None
    flattened: bool | None = False


_FLATTENS = ("flatten", "Flatten", "view", "reshape")
_FLATTENING = re.compile(r"^.*(?:flatten|Flatten|view|reshape).*$", re.M)
_FACTORIES = INPUT_FACTORIES | {"torch.randint"}
_SUMMARIES = frozenset({"torchsummary.summary", "torchinfo.summary"})
_FRESH = _Value()
_ANY = _Value(WILD, WILD, WILD, WILD, None)


class _Mirror:
    """The size analysis of one file, on the ``ast`` tree (see the module's docstring)."""

    def __init__(self, facts: FileFacts, options: Options, kinds: set[str]) -> None:
        self.facts = facts
        self.kinds = kinds
        self.tree: ast.Module = facts.tree  # type: ignore[assignment]
        self.module_classes = facts.module_classes(options)
        self.classes = [c for c in facts.nodes(ast.ClassDef)
                        if c.name in self.module_classes]  # type: ignore[attr-defined]
        # the models this file may state an input size for (classes, and whether a
        # Sequential assigned to a name)
        # model -> its stated input: a class by name, a Sequential by id() of its call
        self.stated: dict[object, _Value] = {}
        self.interfaces: dict[tuple[int, str], object] = {}
        self.quiet = 0
        # words in the steps' labels and reasons the analysis reads: a flatten, a view or
        # reshape; a first step on images (a layer, a class or a reason naming one)
        words = "\n" + "\n".join(facts.names)
        self._flattening = set(_FLATTENING.findall(words))
        self._class_flattens: dict[int, bool] = {}
        self._flatten_marks: list[tuple[int, int]] | None = None
        self._module_flattens: bool | None = None
        self.conv_words = any(w in words for w in ("\nConv", "\nMaxPool", "\nAvgPool"))
        self.constants: dict[str, object] = {}
        self._module_values: dict[str, object] | None = None
        self._functions: list[tuple[tuple[int, int], tuple[int, int], ast.AST]] | None = None
        self._bound: dict[int, frozenset[str]] = {}
        self._stores: dict[int, list[str]] = {}
        self._sequentials: list[ast.Call] | None = None
        self._nested: set[int] | None = None

    @property
    def module_values(self) -> dict[str, object]:
        if self._module_values is None:
            self._module_values = _module_values(self.tree)
        return self._module_values

    @property
    def functions(self) -> list[tuple[tuple[int, int], tuple[int, int], ast.AST]]:
        if self._functions is None:
            self._functions = sorted(
                ((_start(f), _end(f), f) for f in self.facts.nodes(*_FUNCTIONS)),
                key=lambda item: item[0])
        return self._functions

    @property
    def function_starts(self) -> list[tuple[int, int]]:
        memo = getattr(self, "_function_starts", None)
        if memo is None:
            memo = self._function_starts = [start for start, _, _ in self.functions]
        return memo  # type: ignore[no-any-return]

    @property
    def nested(self) -> set[int]:
        """The calls inside a Sequential call."""
        if self._nested is None:
            self._nested = {id(inner) for call in self.sequentials()
                            for arg in (*call.args, *(k.value for k in call.keywords))
                            for inner in ast.walk(arg) if type(inner) is ast.Call}
        return self._nested

    @property
    def flattening_imports(self) -> bool:
        """Does an import of the file name a flatten, view or reshape (a qualified name the
        analysis may quote in a reason)?"""
        memo = getattr(self, "_flattening_imports", None)
        if memo is None:
            memo = self._flattening_imports = bool(self._flattening) and any(
                _names_flatten(q) for quals in self.facts.bindings.values() for q in quals)
        return memo  # type: ignore[no-any-return]

    def flatten_marks(self) -> list[tuple[int, int]]:
        """Where an identifier of the file names a flatten, view or reshape."""
        if self._flatten_marks is None:
            hits, nodes = self._flattening, self.facts.nodes
            marks: list[tuple[int, int]] = []
            if hits:
                marks = [(n.lineno, n.col_offset) for n in nodes(ast.Attribute) if n.attr in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(ast.Name) if n.id in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(ast.arg) if n.arg in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(*_FUNCTIONS, ast.ClassDef)
                          if n.name in hits]  # type: ignore[attr-defined]
            self._flatten_marks = sorted(marks)
        return self._flatten_marks

    def marked(self, start: tuple[int, int], end: tuple[int, int]) -> int:
        """How many identifiers naming a flatten lie between ``start`` and ``end``."""
        marks = self.flatten_marks()
        return bisect.bisect_right(marks, end) - bisect.bisect_left(marks, start)

    def unknown_module_flattens(self, cls: ast.ClassDef | None, forward: ast.AST | None,
                                attr: str) -> bool:
        """May the reason the analysis gives for ``self.<attr>``, an unknown module, name a
        flatten, view or reshape? It quotes the attribute, or what ``__init__``, a helper, a
        class attribute or a module-level constant built it from: an identifier of the
        class outside ``forward``, of the module's own code, or an import."""
        if _names_flatten(attr) or self.flattening_imports:
            return True
        if cls is None or not self._flattening:
            return False
        memo = self._class_flattens.get(id(cls))
        if memo is None:
            inside = self.marked(_start(cls), _end(cls))
            if forward is not None:
                inside -= self.marked(_start(forward), _end(forward))
            memo = inside > 0
            if not memo:
                if self._module_flattens is None:
                    in_defs = sum(self.marked(_start(d), _end(d)) for d in self.tree.body
                                  if type(d) in _FUNCTIONS or type(d) is ast.ClassDef)
                    self._module_flattens = len(self.flatten_marks()) > in_defs
                memo = self._module_flattens
            self._class_flattens[id(cls)] = memo
        return memo

    def stated_inputs(self) -> None:
        """Mirrors ``_stated_inputs``: a model called on a tensor factory's result (or a
        name assigned one in the same function), exported to ONNX or summarised; every
        model built here when the file loads a torchvision dataset. A model gets the one
        shape stated for it; none for several; any for sizes known only by spelling."""
        facts = self.facts
        assigns = [a for a in facts.nodes(ast.Assign)]
        scope = {id(a): id(self.enclosing(a)) for a in assigns}
        counts: dict[tuple[int, str], int] = {}
        for node in assigns:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    key = (scope[id(node)], target.id)
                    counts[key] = counts.get(key, 0) + 1
        instances: dict[tuple[int, str], set[object]] = {}
        tensors: dict[tuple[int, str], ast.Call] = {}
        for node in assigns:
            targets = node.targets  # type: ignore[attr-defined]
            if len(targets) != 1 or type(targets[0]) is not ast.Name:
                continue
            key = (scope[id(node)], targets[0].id)
            value = node.value  # type: ignore[attr-defined]
            while type(value) is ast.Call and type(value.func) is ast.Attribute and (
                    value.func.attr in INSTANCE_METHODS):
                value = value.func.value
            if counts[key] != 1 or type(value) is not ast.Call:
                continue
            func = value.func
            quals = facts.qualnames_of(func)
            built: set[object] = {func.id} if type(func) is ast.Name and (
                func.id in self.module_classes) else set()
            if "torch.nn.Sequential" in quals:
                built.add(id(value))
            if built:
                instances[key] = built
            if quals & _FACTORIES:
                tensors[key] = value

        def shapes(arg: ast.expr, where: int) -> list[object]:
            if type(arg) is ast.Name:
                found = tensors.get((where, arg.id))
                return [self.factory_shape(found)] if found is not None else []
            if type(arg) is ast.Call and facts.qualnames_of(arg.func) & _FACTORIES:  # type: ignore[attr-defined]
                return [self.factory_shape(arg)]  # type: ignore[arg-type]
            return []

        names = {name for _, name in instances}
        found: dict[object, list[object]] = {}
        for call in facts.nodes(ast.Call):
            args = call.args  # type: ignore[attr-defined]
            if not args:
                continue
            func = call.func  # type: ignore[attr-defined]
            models: set[object] = set()
            given: list[object] = []
            if type(func) is ast.Name and func.id in names:
                where = id(self.enclosing(call))
                models = instances.get((where, func.id), set())
                given = shapes(args[0], where)
            elif type(func) is ast.Call and type(func.func) is ast.Name and (
                    func.func.id in self.module_classes):
                models, given = {func.func.id}, shapes(args[0], id(self.enclosing(call)))
            elif type(args[0]) is ast.Name and args[0].id in names:
                quals = facts.qualnames_of(func)
                where = id(self.enclosing(call))
                if "torch.onnx.export" in quals and len(args) > 1:
                    models = instances.get((where, args[0].id), set())
                    given = shapes(args[1], where)
                elif quals & _SUMMARIES:
                    models, given = instances.get((where, args[0].id), set()), [WILD]
            given = [g for g in given if g is not None]
            for model in models if given else ():
                found.setdefault(model, []).extend(given)
        # no shape stated: a torchvision dataset's images are the input of the one model
        classes = {m for built in instances.values() for m in built if type(m) is str}
        dataset: tuple[str, _Value] | None = None
        if len(classes) == 1 and any(q.startswith("torchvision.datasets.") for q in facts.calls) \
                and all(g is WILD for given in found.values() for g in given):
            image = self.dataset_image() if not found else WILD
            if isinstance(image, tuple):
                channels, height, width = image
                dataset = classes.pop(), _Value(4, channels, width, (height, width), False)
            elif image is WILD:
                found.setdefault(classes.pop(), []).append(WILD)
        for model, given in found.items():
            distinct = set(given)
            if WILD in distinct:
                self.stated[model] = _ANY
            elif len(distinct) == 1:
                value = _input_value(distinct.pop())  # type: ignore[arg-type]
                if value is not None:
                    self.stated[model] = value
        if dataset is not None:
            self.stated[dataset[0]] = dataset[1]

    def dataset_image(self) -> object:
        """Mirrors ``_dataset_image``: (channels, height, width) of the images of every
        torchvision dataset the file loads through a ``DataLoader``, when they agree (the
        channels may be UNK); None where the analysis proves none; WILD where a size is
        known here only by its spelling or a callee may mean several things."""
        facts = self.facts
        calls = list(facts.nodes(ast.Call))
        if not any(_last_name(c.func) == "DataLoader" and "torch.utils.data.DataLoader" in (  # type: ignore[attr-defined]
                facts.qualnames_of(c.func)) for c in calls):  # type: ignore[attr-defined]
            return None
        leaves = {q.rsplit(".", 1)[1] for q in DATASETS} | {"ImageFolder"}
        sizes: set[object] = set()
        for call in calls:
            if _last_name(call.func) not in leaves:  # type: ignore[attr-defined]
                continue
            quals = facts.qualnames_of(call.func)  # type: ignore[attr-defined]
            if not any(q.startswith("torchvision.datasets.") for q in quals):
                continue
            if len(quals) != 1:
                return WILD
            qual = next(iter(quals))
            base: tuple[object, object, object] = (3, UNK, UNK) if qual.endswith(
                ".ImageFolder") else DATASETS.get(qual, (UNK, UNK, UNK))
            image = self.transformed(base, _arg(call, "transform", None))  # type: ignore[arg-type]
            if image is None or image is WILD:
                return image
            sizes.add(image)
        return sizes.pop() if len(sizes) == 1 else None

    def transformed(self, image: tuple[object, object, object], transform: ast.expr | None
                    ) -> object:
        """Mirrors ``_transformed``: the image after ``transform`` (None: unknown)."""
        facts = self.facts
        if type(transform) is ast.Name:
            bound = [a.value for a in facts.nodes(ast.Assign)  # type: ignore[attr-defined]
                     if len(a.targets) == 1 and type(a.targets[0]) is ast.Name  # type: ignore[attr-defined]
                     and a.targets[0].id == transform.id]  # type: ignore[attr-defined]
            if len(bound) != 1:
                return None
            transform = bound[0]
        steps: list[ast.expr] = []
        if type(transform) is ast.Call:
            quals = facts.qualnames_of(transform.func)  # type: ignore[attr-defined]
            if "torchvision.transforms.Compose" in quals:
                if len(quals) != 1:
                    return WILD
                given = [*transform.args, *(k.value for k in transform.keywords)]  # type: ignore[attr-defined]
                if not given or type(given[0]) not in (ast.List, ast.Tuple):
                    return None
                steps = list(given[0].elts)  # type: ignore[attr-defined]
            else:
                steps = [transform]
        elif transform is not None:
            steps = [transform]
        channels, height, width = image
        scope = _Scope(self, {}, None)
        for step in steps:
            if type(step) is not ast.Call:
                return None
            quals = facts.qualnames_of(step.func)  # type: ignore[attr-defined]
            if len(quals) > 1 and quals & (KEEP_TRANSFORMS | CROPS | {
                    "torchvision.transforms.Grayscale"}):
                return WILD
            qual = next(iter(quals), None)
            if qual in KEEP_TRANSFORMS:
                continue
            if qual == "torchvision.transforms.Grayscale":
                arg = _arg(step, "num_output_channels", 0)  # type: ignore[arg-type]
                channels = scope.eval(arg, 0) if arg is not None else 1
                if type(channels) is _Sym:
                    return WILD
                channels = channels if type(channels) is int else UNK
                continue
            if qual not in CROPS:
                return None
            arg = _arg(step, "size", 0)  # type: ignore[arg-type]
            size = scope.eval(arg, 0) if arg is not None else UNK
            if isinstance(size, (list, tuple)) and len(size) == 1:
                size = size[0]
            if type(size) is _Sym or isinstance(size, (list, tuple)) and any(
                    type(v) is _Sym for v in size):
                return WILD
            if type(size) is int:
                if qual.endswith(".Resize") and not (type(height) is int and height == width):
                    height = width = UNK  # the shorter side: the other depends on the image
                else:
                    height = width = size
            elif isinstance(size, (list, tuple)) and len(size) == 2 and all(
                    type(v) is int for v in size):
                height, width = size
            else:
                return None
        if type(height) is int and type(width) is int:
            return channels, height, width
        return None

    def factory_shape(self, call: ast.Call) -> object:
        """Mirrors ``_factory_shape``: the literal shape a tensor factory is given (WILD:
        sizes known only by their spelling; None: none the analysis knows)."""
        args = [a for a in call.args]
        if "torch.randint" in self.facts.qualnames_of(call.func):
            size = _arg(call, "size", 2)
            if size is None:
                return None
            args = [size]
        if any(type(a) is ast.Starred for a in args):
            return None
        scope = _Scope(self, {}, None)
        if len(args) == 1 and type(args[0]) in (ast.Tuple, ast.List):
            values = scope.eval(args[0], 0)
            values = tuple(values) if isinstance(values, list) else values
        else:
            values = tuple(scope.eval(a, 0) for a in args)
        if not isinstance(values, tuple) or not values or not all(_maybe(v) for v in values):
            return None
        return values if all(type(v) is int for v in values) else WILD

    def found(self, kind: str) -> None:
        if self.quiet:
            return
        self.kinds.add(kind)
        if self.kinds >= _ALL:
            raise _AllFound

    # ------------------------------------------------------------ names
    def sequentials(self) -> list[ast.Call]:
        """The calls that may build an ``nn.Sequential``."""
        if self._sequentials is None:
            found: list[ast.Call] = []
            if "Sequential" in self.facts.call_words:
                for call in self.facts.nodes(ast.Call):
                    func = call.func  # type: ignore[attr-defined]
                    kind = type(func)
                    if (kind is ast.Attribute and func.attr == "Sequential" or kind is ast.Name
                            and func.id == "Sequential") and "torch.nn.Sequential" in (
                            self.facts.qualnames_of(func)):
                        found.append(call)  # type: ignore[arg-type]
            self._sequentials = found
        return self._sequentials

    def bound_in(self, function: ast.AST | None, name: str) -> bool:
        """Does ``function`` bind ``name``: a parameter, or a statement anywhere inside
        (nested functions too; comprehension and ``:=`` targets aside)?"""
        if function is None:
            return False
        names = self._bound.get(id(function))
        if names is None:
            names = self._bound[id(function)] = frozenset(
                _parameters(function)).union(*(_binds(s) for s in _statements(function)))
        return name in names

    def self_stores(self, function: ast.AST) -> list[str]:
        """The ``self`` attributes assigned inside ``function`` (nested blocks too, as the
        analysis walks them: not into ``match`` cases nor ``except*`` clauses)."""
        found = self._stores.get(id(function))
        if found is None:
            found = self._stores[id(function)] = [
                attr for stmt in _statements(function, libcst_blocks=True)
                if type(stmt) in (ast.Assign, ast.AugAssign, ast.AnnAssign)
                for target in (stmt.targets if type(stmt) is ast.Assign else [stmt.target])  # type: ignore[attr-defined]
                for element in (target.elts if type(target) in (ast.Tuple, ast.List) else [target])
                for attr in [_self_attribute(element)] if attr is not None]
        return found

    def enclosing(self, node: ast.AST) -> ast.AST | None:
        """The innermost function around ``node`` (None: module level)."""
        at = _start(node)
        functions = self.functions
        # the latest function starting before ``node`` that ends after it is the innermost
        index = bisect.bisect_left(self.function_starts, at) - 1
        while index >= 0:
            _, end, function = functions[index]
            if at <= end:
                return function
            index -= 1
        return None

    def quals(self, expr: ast.expr, function: ast.AST | None) -> set[str]:
        root = expr
        while type(root) is ast.Attribute:
            root = root.value  # type: ignore[attr-defined]
        if type(root) is not ast.Name or self.bound_in(function, root.id):  # type: ignore[attr-defined]
            return set()
        return self.facts.qualnames_of(expr)

    def module_constant(self, name: str) -> object:
        if name in self.constants:
            return self.constants[name]
        self.constants[name] = WILD  # a constant defined through itself
        values = self.module_values.get(name)
        if values is not None:
            value = _Scope(self, {}, None).eval(values, 0) if isinstance(
                values, ast.expr) else WILD
        else:
            quals = self.facts.qualnames_of(ast.Name(name, ast.Load()))
            value = self.imported(quals)
        self.constants[name] = value
        return value

    def imported(self, quals: set[str]) -> object:
        foreign = sorted(q for q in quals if _foreign(q))
        if not foreign:
            return UNK
        return _Sym(("import", foreign[0])) if len(foreign) == 1 else WILD

    # ------------------------------------------------------------ the file
    def run(self) -> None:
        if "input" in self.facts.size_sites:
            self.stated_inputs()
        for cls in self.classes:
            self.analyse_class(cls)  # type: ignore[arg-type]
        spans = [(_start(c), _end(c)) for c in self.classes]
        in_classes = {id(f) for start, end, f in self.functions
                      if any(a <= start and end <= b for a, b in spans)}
        for scope, calls in self.outer_sequentials().items():
            if scope is None:
                function = None
            else:
                function = scope
                if id(function) in in_classes:
                    continue
            for call in calls:
                value = _Scope(self, {}, None, function).eval(call, 0)
                if isinstance(value, _Seq):
                    for start in self.starts(call):
                        self.walk_sequence(value, start)

    def starts(self, call: ast.Call) -> tuple[_Value, ...]:
        """What a Sequential outside a class's attributes is walked from: nothing known,
        and the input stated for it (the analysis walks the one it has)."""
        stated = self.stated.get(id(call))
        return (_FRESH,) if stated is None else (_FRESH, stated)

    def outer_sequentials(self) -> dict[ast.AST | None, list[ast.Call]]:
        """Sequential calls not nested in another, by the function they are in."""
        memo = getattr(self, "_outer", None)
        if memo is not None:
            return memo  # type: ignore[no-any-return]
        found: dict[ast.AST | None, list[ast.Call]] = {}
        for call in self.sequentials():
            if id(call) in self.nested:
                continue
            function = self.enclosing(call)
            if "torch.nn.Sequential" in self.quals(call.func, function):
                found.setdefault(function, []).append(call)
        self._outer = found
        return found

    # ------------------------------------------------------------ classes
    def analyse_class(self, cls: ast.ClassDef) -> None:
        init = _method(cls, "__init__")
        env: dict[str, object] = {}
        if init is not None:
            params = _parameters(init)[1:]
            # a decorated class built nowhere in this file: a registry builds it out of
            # sight (the analysis reads it so too for a class this file names otherwise,
            # read here as built with any sizes)
            if cls.decorator_list and cls.name not in self.called_names():
                env = {p: UNK for p in params}
            else:
                env = {p: _Sym(("param", cls.name, p)) for p in params}
        scope = self.class_scope(cls, env, 0)
        walked: set[int] = set()
        for attr, value in list(scope.attrs.items()):
            if isinstance(value, _Builder):
                value = scope.attrs[attr] = _element(value)
            if isinstance(value, _Seq):
                walked.add(id(value))
                self.walk_sequence(value, _FRESH)
        if init is not None:  # Sequentials not bound to an attribute
            for call in self.outer_sequentials().get(init, ()):
                value = _Scope(self, dict(env), cls, init).eval(call, 0)
                if isinstance(value, _Seq) and id(value) not in walked:
                    for start in self.starts(call):
                        self.walk_sequence(value, start)
        forward = _method(cls, "forward")
        if forward is not None and _parameters(forward, stars=False)[1:]:
            local = _Scope(self, {}, cls, forward)
            local.attrs = scope.attrs
            # an input stated in this file, or in another file of the project for a chain
            # that starts on images and flattens them
            stated = self.stated.get(cls.name)
            flow = _Flow(self, local, _FRESH, asks=stated is None)
            flow.run(forward.body)
            if stated is not None:
                _Flow(self, local, stated).run(forward.body)
            elif flow.first_images and flow.flattens:
                _Flow(self, local, _ANY).run(forward.body)

    def called_names(self) -> frozenset[str]:
        """The bare names called in the file (``Net(...)``)."""
        memo = getattr(self, "_called", None)
        if memo is None:
            memo = self._called = frozenset(
                c.func.id for c in self.facts.nodes(ast.Call)  # type: ignore[attr-defined]
                if type(c.func) is ast.Name)  # type: ignore[attr-defined]
        return memo  # type: ignore[no-any-return]

    def class_scope(self, cls: ast.ClassDef, env: dict[str, object], depth: int) -> _Scope:
        """``__init__`` of ``cls`` run with ``env``: the layers and sizes on ``self``."""
        init = _method(cls, "__init__")
        scope = _Scope(self, dict(env), cls, init)
        scope.attrs.update(self.class_attributes(cls))
        if init is not None:
            scope.run(init.body, depth)
        for stmt in cls.body:
            if type(stmt) in _FUNCTIONS and stmt.name != "__init__":  # type: ignore[attr-defined]
                for name in self.self_stores(stmt):
                    scope.attrs[name] = UNK
        return scope

    def interface(self, cls: ast.ClassDef, env: dict[str, object], depth: int) -> object:
        """Mirrors ``interface``: a class of the file used as a layer takes its first
        layer's input size and gives what its ``forward`` returns. UNK where the analysis
        surely proves nothing (no ``forward``), a block layer where this mirror follows it
        exactly, else a layer taking and giving anything."""
        forward = _method(cls, "forward")
        if forward is None:
            return UNK
        params = _parameters(forward, stars=False)[1:]
        defaults = len(forward.args.defaults) + sum(
            d is not None for d in forward.args.kw_defaults)
        if not params or len(params) - 1 > defaults:
            return UNK
        wild = _Layer(cls.name, "wild", 0, WILD, WILD)
        key = (id(cls), repr(sorted(env.items())))
        if key in self.interfaces:
            return self.interfaces[key] or wild
        self.interfaces[key] = None  # a class built inside itself
        self.quiet += 1  # the analysis reports nothing of an interface's chain
        try:
            local = _Scope(self, {}, cls, forward)
            local.attrs = self.class_scope(cls, env, depth).attrs
            flow = _Flow(self, local, _FRESH)
            flow.run(forward.body)
        finally:
            self.quiet -= 1
        # a chain the analysis surely stops: no interface (the block is an unknown module)
        found: object = UNK if flow.surely_stopped else wild
        entry = flow.entry
        out = flow.returned[0] if len(flow.returned) == 1 else None
        if not flow.stopped and entry is not None and type(entry.in_size) is int and not (
                flow.entry_spatial and _takes(entry) == "features") and isinstance(
                out, _Value) and out.rank is not WILD and type(out.rank) is not _Sym:
            gives = "features" if out.rank == 2 or out.rank is UNK and _maybe(
                out.features) else "channels"
            size = out.features if gives == "features" else out.channels
            if _maybe(size):
                found = _Layer(cls.name, "block", 0, entry.in_size, size,
                               (("takes", _takes(entry)), ("gives", gives)))
        self.interfaces[key] = found
        return found

    def class_attributes(self, cls: ast.ClassDef) -> dict[str, object]:
        found: dict[str, object] = {}
        for stmt in cls.body:
            if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(  # type: ignore[attr-defined]
                    stmt.targets[0]) is ast.Name:  # type: ignore[attr-defined]
                name = stmt.targets[0].id  # type: ignore[attr-defined]
                found[name] = UNK if name in found else _Scope(self, {}, None).eval(
                    stmt.value, 0)  # type: ignore[attr-defined]
        if found and any(type(b) is ast.Name and b.id == cls.name  # type: ignore[attr-defined]
                         for c in self.facts.nodes(ast.ClassDef) for b in c.bases):  # type: ignore[attr-defined]
            return {name: UNK for name in found}
        # another file of the project may name the class (a subclass): then unknown
        return {name: _Sym(("class", cls.name, name)) if type(value) in (int, float) else value
                for name, value in found.items()}

    # ------------------------------------------------------------ chains
    def walk_sequence(self, seq: _Seq, value: _Value | None,
                      flow: _Flow | None = None) -> _Value | None:
        current = value
        for element in seq.elements:
            if current is None:
                current = _FRESH
            if isinstance(element, _Layer):
                current = self.apply(element, current, flow)
            elif isinstance(element, _Seq):
                current = self.walk_sequence(element, current, flow)
            else:
                if flow is not None:
                    flow.stopped = flow.surely_stopped = True
                current = _FRESH
        return current

    def apply(self, layer: _Layer, value: _Value, flow: _Flow | None = None
              ) -> _Value | None:
        if flow is not None and (_names_flatten(layer.name) or layer.family == "wild" and (
                self.flattening_imports)):
            flow.flattens = True  # (a class of another file is labelled by its own name)
        if flow is not None and not flow.entry_closed:  # the first layer with a size
            if layer.family in _SIZED:
                flow.entry, flow.entry_closed = layer, True
            elif layer.family == "wild":
                flow.stopped = True  # (its interface is not known here)
            elif layer.family not in _KEEPERS:
                flow.entry_closed = True
            elif layer.family not in ("keep", "dropnd"):
                flow.entry_spatial = True
        self.check(layer, value)
        out = _output(layer, value)
        if out is None and flow is not None:
            flow.stopped = flow.surely_stopped = True
        return out

    def check(self, layer: _Layer, value: _Value) -> None:
        if layer.family == "wild":  # a class used as a layer: its sizes are not read here
            if _maybe(value.channels) or _maybe(value.features):
                self.found("size")
            return
        ranks = accepted_ranks(layer.family, layer.dims)
        if ranks is not None and _maybe(value.rank):
            if type(value.rank) is int:
                if value.rank not in ranks:
                    self.found("rank")
                    return
            else:
                self.found("rank")
        expected = layer.in_size
        if not _maybe(expected):
            return
        family = layer.family
        if family == "block" and layer.arg("takes") == "features" or family in (
                "linear", "ln", "rnn", "cell", "mha", "same"):
            got = value.features
        elif family == "block":
            if value.rank == 2:
                return
            got = value.channels
        elif family in ("conv", "convT", "bn", "gn") or family == "in" and (
                _maybe_true(layer.arg("affine")) or _maybe_true(
                layer.arg("track_running_stats"))):
            if value.rank == 2 and family not in ("bn", "gn"):
                return
            got = value.channels
        else:
            return
        if not _may_differ(got, expected):
            return
        if family == "linear" and value.flattened is not False:
            self.found("flatten")
        if family != "linear" or value.flattened is not True:
            self.found("size")


def _takes(layer: _Layer) -> str:
    """The unit of the size a layer takes (the analysis's ``Layer.unit``)."""
    if layer.family == "block":
        return str(layer.arg("gives"))
    return "channels" if layer.family in ("conv", "convT", "bn", "in", "gn") else "features"


def _maybe_true(value: object) -> bool:
    return value is True or type(value) is _Sym


def _output(layer: _Layer, value: _Value) -> _Value | None:
    family = layer.family
    if family == "wild":
        return _Value(UNK, WILD, WILD, None, False)
    if family == "block":
        features = layer.arg("gives") == "features"
        return _Value(UNK, UNK if features else layer.out_size,
                      layer.out_size if features else UNK, None, False)
    if family in ("linear", "bilinear", "same"):
        rank = value.rank if _maybe(value.rank) else 2
        out = layer.out_size if family != "same" else layer.in_size
        channels = _if_rank2(rank, out, value.channels)
        return _Value(rank, channels, out, None, False)
    if family in ("conv", "convT", "pool", "adaptive", "upsample", "pad"):
        n = layer.dims
        rank = value.rank if _maybe(value.rank) else (n + 2 if n else UNK)
        channels = layer.out_size if family in ("conv", "convT") else value.channels
        spatial = _spatial(layer, value, rank)
        if spatial is WILD:
            features: object = WILD
        else:
            features = spatial[-1] if spatial else UNK  # type: ignore[index]
        return _Value(rank, channels, features, spatial, False)
    if family in ("bn", "in", "gn") and _maybe(layer.in_size):
        channels = layer.in_size
        if type(channels) is int:
            features = _if_rank2(value.rank, channels, value.features)
            return replace(value, channels=channels, features=features, flattened=False)
        return _Value(value.rank, _join(channels, value.channels),
                      _join(channels, value.features), value.spatial,
                      None if value.flattened is not False else False)
    if family == "ln" and _maybe(layer.in_size):
        size = layer.in_size
        if type(size) is int:
            channels = _if_rank2(value.rank, size, value.channels)
            return replace(value, features=size, channels=channels, flattened=False)
        return _Value(value.rank, _join(size, value.channels), _join(size, value.features),
                      value.spatial, None if value.flattened is not False else False)
    if family in ("bn", "in", "gn", "ln", "dropnd", "keep"):
        return value
    if family == "flatten":
        start, end = layer.arg("start_dim", 1), layer.arg("end_dim", -1)
        if type(start) is _Sym or type(end) is _Sym:
            return _Value(2, WILD, WILD, None, None)
        if start != 1 or end != -1:
            return _FRESH
        return _flatten(value)
    if family == "embed":
        if layer.name == "EmbeddingBag":
            rank: object = 2
        elif type(value.rank) is int:
            rank = value.rank + 1  # type: ignore[operator]
        else:
            rank = WILD if type(value.rank) is _Sym else UNK
        return _Value(rank, _if_rank2(rank, layer.out_size, UNK), layer.out_size, None, False)
    if family in ("rnn", "mha"):
        return None
    if family == "cell":
        return _Value(2, layer.out_size, layer.out_size, None, False)
    return _FRESH


def _input_value(shape: tuple[int, ...]) -> _Value | None:
    """What a dummy input of ``shape`` says of a model's input."""
    if len(shape) >= 3:
        return _Value(len(shape), shape[1], shape[-1], tuple(shape[2:]), False)
    if len(shape) == 2:
        return _Value(2, shape[1], shape[1], None, False)
    return None


def _flatten(value: _Value) -> _Value:
    if value.rank == 2:
        return replace(value, flattened=True)
    if type(value.rank) is _Sym or value.spatial is WILD:
        return _Value(2, WILD, WILD, None, True if value.rank != 2 else None)
    if _maybe(value.channels) and value.spatial is not None:
        sizes = [value.channels, *value.spatial]  # type: ignore[misc]
        if all(type(s) is int for s in sizes):
            total = 1
            for s in sizes:
                total *= s  # type: ignore[operator]
            return _Value(2, total, total, None, True)
        if all(_maybe(s) for s in sizes):
            total = sizes[0]
            for s in sizes[1:]:
                total = _symbolic(ast.Mult, total, s) if type(total) is _Sym or type(
                    s) is _Sym else total * s  # type: ignore[operator]
            return _Value(2, total, total, None, True)
    return _Value(2, UNK, UNK, None, True)


def _per_dim(value: object, n: int) -> tuple[object, ...] | None:
    if value is None:
        return None
    if type(value) is int:
        return (value,) * n
    if type(value) is _Sym:
        return (WILD,) * n
    if isinstance(value, tuple) and len(value) == n:
        return tuple(v if type(v) in (int, _Sym) or v is None else UNK for v in value)
    return None


def _spatial(layer: _Layer, value: _Value, rank: object) -> object:
    """The spatial sizes after ``layer`` (None: unknown, WILD: any)."""
    n = layer.dims or (len(value.spatial) if isinstance(value.spatial, tuple) else 0)
    if value.spatial is WILD and not layer.dims:
        return WILD
    if not n:
        return None
    if layer.family == "adaptive":
        output = layer.arg("output_size")
        size = _per_dim(output, n)
        if size is None:
            return None
        current = value.spatial if isinstance(value.spatial, tuple) and len(
            value.spatial) == n else (WILD if value.spatial is WILD else UNK,) * n
        return tuple(current[i] if s is None else s for i, s in enumerate(size))
    if value.spatial is WILD:
        return WILD
    if not isinstance(value.spatial, tuple) or len(value.spatial) != n or not _maybe(rank):
        return None
    if any(type(v) is _Sym for _, v in layer.args) or any(
            isinstance(v, tuple) and any(type(e) is _Sym for e in v) for _, v in layer.args):
        return WILD
    return _exact_spatial(layer, value.spatial, n)


def _exact_spatial(layer: _Layer, spatial: tuple[object, ...], n: int) -> object:
    """The analysis's arithmetic, where every argument is known here; a size known only by
    its spelling gives WILD."""
    if any(type(s) is _Sym for s in spatial):
        return WILD
    if layer.family == "upsample":
        size = _per_dim(layer.arg("size"), n)
        if size is not None and all(type(s) is int for s in size):
            return size
        factor = _per_dim(layer.arg("scale_factor"), n)
        if factor is None:
            return None
        return tuple(s * f if type(s) is int and type(f) is int else UNK  # type: ignore[operator]
                     for s, f in zip(spatial, factor))
    if layer.family == "pad":
        padding = layer.arg("padding")
        if type(padding) is int:
            return tuple(s + 2 * padding if type(s) is int else UNK for s in spatial)  # type: ignore[operator]
        if isinstance(padding, tuple) and len(padding) == 2 * n and all(
                type(p) is int for p in padding):
            extra = [padding[2 * i] + padding[2 * i + 1] for i in range(n)][::-1]
            return tuple(s + e if type(s) is int else UNK for s, e in zip(spatial, extra))  # type: ignore[operator]
        return None
    kernel = _per_dim(layer.arg("kernel_size"), n)
    if kernel is None:
        return None
    default_stride = kernel if layer.family == "pool" else 1
    stride = _per_dim(layer.arg("stride", default_stride), n)
    if layer.arg("stride") is None and layer.has("stride"):
        stride = kernel if layer.family == "pool" else None
    padding_arg = layer.arg("padding", 0)
    if padding_arg == "valid":
        padding_arg = 0
    if padding_arg == "same":
        return spatial if layer.family == "conv" else None
    padding = _per_dim(padding_arg, n)
    dilation = _per_dim(layer.arg("dilation", 1), n)
    extra = _per_dim(layer.arg("output_padding", 0), n)
    ceil = layer.arg("ceil_mode", False)
    if None in (stride, padding, dilation, extra) or not isinstance(ceil, bool):
        return None
    out: list[object] = []
    for i, size in enumerate(spatial):
        k, s, p, d, o = kernel[i], stride[i], padding[i], dilation[i], extra[i]  # type: ignore[index]
        if not all(type(v) is int for v in (size, k, s, p, d, o)) or s == 0:
            out.append(UNK)
            continue
        if layer.family == "convT":
            out.append((size - 1) * s - 2 * p + d * (k - 1) + o + 1)  # type: ignore[operator]
            continue
        span = size + 2 * p - d * (k - 1) - 1  # type: ignore[operator]
        result = (-(-span // s) if ceil else span // s) + 1  # type: ignore[operator]
        if ceil and (result - 1) * s >= size + p:  # type: ignore[operator]
            result -= 1
        out.append(result if result > 0 else UNK)
    return tuple(out)


def _element(value: object) -> object:
    if isinstance(value, (_Layer, _Seq)):
        return value
    if isinstance(value, _Builder):
        return _Seq(tuple(_element(e) for e in value.elements))
    return UNK


# ------------------------------------------------------------------ the tree
def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    found = None
    for stmt in cls.body:
        if type(stmt) in _FUNCTIONS and stmt.name == name:  # type: ignore[attr-defined]
            if found is not None:
                return None
            found = stmt
    return found  # type: ignore[return-value]


def _parameters(function: ast.AST, *, stars: bool = True) -> list[str]:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    found = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if stars:
        found += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return found


_BINDERS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
            ast.AsyncWith, ast.Import, ast.ImportFrom, *_FUNCTIONS, ast.ClassDef,
            ast.ExceptHandler)


def _statements(function: ast.AST, *, libcst_blocks: bool = False) -> Iterator[ast.AST]:
    """The statements (and except clauses) inside ``function``, at any depth, nested
    functions and classes too, without walking into expressions; with ``libcst_blocks``
    only those the analysis's walk of blocks reaches (no ``match`` case, no ``except*``
    clause)."""
    stack: list[ast.AST] = []
    for field in _block_fields(type(function)):
        stack.extend(getattr(function, field))
    skipped = (getattr(ast, "Match", None), getattr(ast, "TryStar", None))
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in _block_fields(type(stmt)):
            if libcst_blocks and type(stmt) in skipped and field in ("cases", "handlers"):
                continue
            stack.extend(getattr(stmt, field))


_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


def _block_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that hold statements (or except clauses, cases)."""
    fields = _BLOCK_FIELDS.get(kind)
    if fields is None:
        fields = _BLOCK_FIELDS[kind] = tuple(
            f for f in ("body", "orelse", "finalbody", "handlers", "cases")
            if f in kind._fields and kind is not ast.Lambda and kind is not ast.IfExp)  # type: ignore[attr-defined]
    return fields


def _binds(node: ast.AST) -> Iterator[str]:
    """The names a statement (or except clause) binds at its own level."""
    kind = type(node)
    if kind is ast.Assign:
        targets: list[ast.AST] = list(node.targets)  # type: ignore[attr-defined]
    elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
        targets = [node.target]  # type: ignore[attr-defined]
    elif kind in (ast.With, ast.AsyncWith):
        targets = [i.optional_vars for i in node.items if i.optional_vars]  # type: ignore[attr-defined]
    elif kind in (ast.Import, ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            yield alias.asname or alias.name.split(".", 1)[0]
        return
    else:
        if getattr(node, "name", None):
            yield node.name  # type: ignore[attr-defined]
        return
    for target in targets:
        yield from _target_names(target)


def _module_values(tree: ast.Module) -> dict[str, object]:
    """Name -> its value when a single ``name = value`` is its only module-level binding,
    else None (bound otherwise or more than once); absent when never bound."""
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        stmt = stack.pop()
        kind = type(stmt)
        if kind in _FUNCTIONS or kind is ast.ClassDef:
            counts[stmt.name] = counts.get(stmt.name, 0) + 2  # type: ignore[attr-defined]
            continue
        if kind is ast.Assign and len(stmt.targets) == 1 and type(  # type: ignore[attr-defined]
                stmt.targets[0]) is ast.Name:  # type: ignore[attr-defined]
            name = stmt.targets[0].id  # type: ignore[attr-defined]
            counts[name] = counts.get(name, 0) + 1
            values[name] = stmt.value  # type: ignore[attr-defined]
            continue
        if kind in _BINDERS:
            for name in _binds(stmt):
                counts[name] = counts.get(name, 0) + (1 if kind in (ast.Import, ast.ImportFrom)
                                                     else 2)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, field, ()) or ():
                if isinstance(child, ast.stmt):
                    stack.append(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    if type(child) is ast.ExceptHandler and child.name:
                        counts[child.name] = counts.get(child.name, 0) + 2
                    stack.extend(child.body)
    found: dict[str, object] = {}
    for name, count in counts.items():
        found[name] = values.get(name) if count == 1 else None
    return found


def _last_name(func: ast.expr) -> str | None:
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined,no-any-return]
    if type(func) is ast.Attribute:
        return func.attr  # type: ignore[attr-defined,no-any-return]
    return None


def _string(node: ast.expr | None) -> str | None:
    if type(node) is ast.Constant and type(node.value) is str:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    return None


def _arg(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    """Mirrors ``get_arg`` (a ``*args`` before the position hides it)."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is None:
        return None
    for index, arg in enumerate(call.args):
        if type(arg) is ast.Starred:
            return None
        if index == position:
            return arg
    return None


def _contains_return(stmt: ast.AST) -> bool:
    return any(type(n) is ast.Return for n in ast.walk(stmt))


def _number(node: ast.expr) -> bool:
    if type(node) is ast.UnaryOp:
        node = node.operand  # type: ignore[attr-defined]
    return type(node) is ast.Constant and type(node.value) in (int, float)  # type: ignore[attr-defined]


def _int_literal(node: ast.expr) -> int | None:
    if type(node) is ast.Constant and type(node.value) is int:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    return None


_AUG = {ast.Add, ast.Sub, ast.Mult, ast.FloorDiv}


# ------------------------------------------------------------------ scopes
class _Scope:
    """Mirrors the analysis's straight-line evaluation (``_Scope``)."""

    def __init__(self, mirror: _Mirror, names: dict[str, object], cls: ast.ClassDef | None,
                 function: ast.AST | None = None) -> None:
        self.mirror = mirror
        self.names = names
        self.cls = cls
        self.function = function
        self.attrs: dict[str, object] = {}
        self.returned: object = UNK
        self.locals_unknown = False  # inside a function, only literals are read

    def run(self, body: Iterable[ast.stmt], depth: int) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind in (ast.With, ast.AsyncWith):
                self.run(stmt.body, depth)  # type: ignore[attr-defined]
            elif kind in _FUNCTIONS or kind is ast.ClassDef:
                self.names[stmt.name] = UNK  # type: ignore[attr-defined]
            elif kind in (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try,
                          getattr(ast, "TryStar", ast.Try), getattr(ast, "Match", ast.Try)):
                self.forget(stmt)
            else:
                self.small(stmt, depth)

    def forget(self, stmt: ast.AST) -> None:
        """What ``stmt`` may rebind becomes unknown: the targets of its statements (and of
        itself), the receivers of the method calls they are. Calls and ``:=`` deeper in
        expressions, which the analysis forgets too, are left known here (known is the
        side that errs towards a finding)."""
        for node in (stmt, *_statements(stmt)):
            if type(node) is ast.Expr:
                node = node.value  # type: ignore[attr-defined]
            kind = type(node)
            targets: list[ast.expr] = []
            if kind is ast.Assign:
                targets = list(node.targets)  # type: ignore[attr-defined]
            elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
                targets = [node.target]  # type: ignore[attr-defined]
            elif kind is ast.Call and type(node.func) is ast.Attribute:  # type: ignore[attr-defined]
                target = node.func.value  # type: ignore[attr-defined]
                if type(target) is ast.Name and target.id == "self":
                    self.forget_self_call(node)  # type: ignore[arg-type]
                    continue
                targets = [target]
            for target in targets:
                if type(target) in (ast.Tuple, ast.List):
                    for sub in ast.walk(target):
                        if type(sub) is ast.Name:
                            self.names[sub.id] = UNK  # type: ignore[attr-defined]
                elif type(target) is ast.Name:
                    self.names[target.id] = UNK  # type: ignore[attr-defined]
                attr = _self_attribute(target)
                if attr is not None:
                    self.attrs[attr] = UNK

    def forget_self_call(self, call: ast.Call) -> None:
        method = call.func.attr  # type: ignore[attr-defined]
        if method == "add_module":
            key = _string(_arg(call, "name", 0))
            if key is not None:
                self.attrs[key] = UNK
        elif self.cls is not None:
            helper = _method(self.cls, method)
            if helper is not None:
                for attr in self.mirror.self_stores(helper):
                    self.attrs[attr] = UNK

    def small(self, stmt: ast.stmt, depth: int) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            value = self.eval(stmt.value, depth)  # type: ignore[attr-defined]
            for target in stmt.targets:  # type: ignore[attr-defined]
                self.bind(target, value)
        elif kind is ast.AnnAssign and stmt.value is not None:  # type: ignore[attr-defined]
            self.bind(stmt.target, self.eval(stmt.value, depth))  # type: ignore[attr-defined]
        elif kind is ast.AugAssign:
            self.augment(stmt, depth)  # type: ignore[arg-type]
        elif kind is ast.Expr and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
            self.statement_call(stmt.value, depth)  # type: ignore[attr-defined]
        elif kind is ast.Return and stmt.value is not None:  # type: ignore[attr-defined]
            self.returned = self.eval(stmt.value, depth)  # type: ignore[attr-defined]
        else:
            self.forget(stmt)

    def bind(self, target: ast.expr, value: object) -> None:
        if type(target) is ast.Name:
            self.names[target.id] = value  # type: ignore[attr-defined]
            return
        attr = _self_attribute(target)
        if attr is not None:
            self.attrs[attr] = value
            return
        if type(target) in (ast.Tuple, ast.List):
            for sub in ast.walk(target):
                if type(sub) is ast.Name:
                    self.names[sub.id] = UNK  # type: ignore[attr-defined]

    def augment(self, stmt: ast.AugAssign, depth: int) -> None:
        target = stmt.target
        if type(target) is ast.Name:
            current = self.names.get(target.id)
            if type(stmt.op) is ast.Add:
                extra = self.eval(stmt.value, depth)
                if isinstance(current, list) and isinstance(extra, list):
                    self.names[target.id] = current + extra
                    return
            if type(stmt.op) in _AUG and not isinstance(current, list):
                self.names[target.id] = self.eval(
                    ast.BinOp(target, stmt.op, stmt.value), depth)
            else:
                self.names[target.id] = UNK
            return
        self.forget(stmt)

    def statement_call(self, call: ast.Call, depth: int) -> None:
        func = call.func
        if type(func) is not ast.Attribute:
            self.forget(call)
            return
        owner = self.lookup(func.value)
        method = func.attr
        given = [a.value if type(a) is ast.Starred else a for a in call.args] + [
            k.value for k in call.keywords]
        if isinstance(owner, list) and method == "append" and len(given) == 1:
            owner.append(self.eval(given[0], depth))
            return
        if isinstance(owner, list) and method == "extend" and len(given) == 1:
            extra = self.eval(given[0], depth)
            if isinstance(extra, list):
                owner.extend(extra)
                return
        if method == "add_module" and len(given) == 2:
            key = _string(given[0])
            module = self.eval(given[1], depth)
            if isinstance(owner, _Builder):
                owner.elements.append(module)
                return
            if type(func.value) is ast.Name and func.value.id == "self" and key:
                self.attrs[key] = module
                return
        if type(func.value) is ast.Name and func.value.id == "super":
            return
        if type(func.value) is ast.Call and type(func.value.func) is ast.Name and (
                func.value.func.id == "super"):
            return
        self.forget(call)

    def lookup(self, node: ast.expr) -> object:
        if type(node) is ast.Name:
            return self.names.get(node.id)  # type: ignore[attr-defined]
        attr = _self_attribute(node)
        return self.attrs.get(attr) if attr is not None else None

    # ------------------------------------------------------------ expressions
    def eval(self, node: ast.expr, depth: int) -> object:
        kind = type(node)
        if kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            return value if type(value) in (int, float, str, bool) or value is None else UNK
        if kind is ast.Name:
            return self.name(node.id)  # type: ignore[attr-defined]
        if kind is ast.UnaryOp and type(node.op) is ast.USub:  # type: ignore[attr-defined]
            inner = self.eval(node.operand, depth)  # type: ignore[attr-defined]
            if type(inner) in (int, float):
                return -inner  # type: ignore[operator]
            return _symbolic(ast.Sub, 0, inner) if type(inner) is _Sym else UNK
        if kind is ast.BinOp:
            return self.arithmetic(node, depth)  # type: ignore[arg-type]
        if kind is ast.Tuple:
            return tuple(UNK if type(e) is ast.Starred else self.eval(e, depth)
                         for e in node.elts)  # type: ignore[attr-defined]
        if kind is ast.List:
            if any(type(e) is ast.Starred for e in node.elts):  # type: ignore[attr-defined]
                return UNK
            return [self.eval(e, depth) for e in node.elts]  # type: ignore[attr-defined]
        if kind is ast.Attribute:
            attr = _self_attribute(node)
            if attr is not None:
                return self.attrs.get(attr, UNK)
            if self.locals_unknown:
                return UNK
            return self.mirror.imported(self.mirror.quals(node, self.function))
        if kind is ast.Call:
            return self.call(node, depth)  # type: ignore[arg-type]
        return UNK

    def arithmetic(self, node: ast.BinOp, depth: int) -> object:
        left, right = self.eval(node.left, depth), self.eval(node.right, depth)
        op = type(node.op)
        if type(left) is _Sym or type(right) is _Sym:
            return _symbolic(op, left, right)
        if type(left) not in (int, float) or type(right) not in (int, float):
            return UNK
        try:
            if op is ast.Add:
                return left + right  # type: ignore[operator]
            if op is ast.Sub:
                return left - right  # type: ignore[operator]
            if op is ast.Mult:
                return left * right  # type: ignore[operator]
            if op is ast.FloorDiv:
                return left // right  # type: ignore[operator]
            if op is ast.Div:
                return left / right  # type: ignore[operator]
            if op is ast.Pow and type(right) is int and 0 <= right < 64:
                return left ** right  # type: ignore[operator]
        except (ZeroDivisionError, OverflowError):
            pass
        return UNK

    def name(self, name: str) -> object:
        if name in self.names:
            return self.names[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        if self.locals_unknown or self.mirror.bound_in(self.function, name):
            return UNK
        return self.mirror.module_constant(name)

    def call(self, call: ast.Call, depth: int) -> object:
        func = call.func
        quals = self.mirror.quals(func, self.function)
        leaves = sorted(q[len("torch.nn."):] for q in quals
                        if q.startswith("torch.nn.") and q.count(".") == 2)
        if leaves:
            leaf = leaves[0]
            if leaf == "Sequential":
                return self.sequential(call, depth)
            if leaf in LAYERS or leaf in KEEP:
                return self.layer(leaf, call, depth)
            return UNK
        if quals & {"collections.OrderedDict", "builtins.dict"} or (
                type(func) is ast.Name and func.id in ("OrderedDict", "dict") and not quals):
            return self.ordered_dict(call, depth)
        if type(func) is ast.Name and func.id == "int" and len(call.args) == 1:
            inner = self.eval(call.args[0], depth)
            if type(inner) in (int, float):
                return int(inner)  # type: ignore[call-overload]
            return _Sym(("int", inner)) if type(inner) is _Sym and inner != WILD else (
                WILD if inner == WILD else UNK)
        if type(func) is ast.Attribute and type(func.value) is ast.Name and (
                func.value.id == "self") and self.cls is not None:
            helper = _method(self.cls, func.attr)
            if helper is not None and depth < _MAX_DEPTH:
                return self.helper(helper, call, depth + 1)
        if depth < _MAX_DEPTH and type(func) is ast.Name and (
                self.cls is not None or id(call) in self.mirror.nested):
            return self.block(call, depth)
        return UNK

    def block(self, call: ast.Call, depth: int) -> object:
        """A module class used as a layer (``Block(64, 128)``): one of this file is
        followed as the analysis follows it; one of another file may take and give
        anything."""
        func: ast.Name = call.func  # type: ignore[assignment]
        if not func.id[:1].isupper():
            return UNK
        if any(type(a) is ast.Starred for a in call.args) or not all(
                self.fixed(a) for a in (*call.args, *(k.value for k in call.keywords))):
            return UNK
        if self.mirror.bound_in(self.function, func.id):
            return UNK
        local = [c for c in self.mirror.classes if c.name == func.id]  # type: ignore[attr-defined]
        if len(local) == 1 and not self.mirror.facts.qualnames_of(func):
            return self.mirror.interface(local[0], self.arguments(local[0], call), depth)  # type: ignore[arg-type]
        if local or any(_foreign(q) for q in self.mirror.facts.qualnames_of(func)):
            return _Layer(func.id, "wild", 0, WILD, WILD)
        return UNK

    def arguments(self, cls: ast.ClassDef, call: ast.Call) -> dict[str, object]:
        """Mirrors ``bind_arguments``: ``__init__``'s parameters for ``call``; inside a
        function only literals are read, the defaults at module level."""
        init = _method(cls, "__init__")
        if init is None:
            return {}
        env: dict[str, object] = {p: UNK for p in _parameters(init, stars=False)[1:]}
        module = _Scope(self.mirror, {}, None)
        positional = [*init.args.posonlyargs, *init.args.args]
        for param, default in zip(positional[len(positional) - len(init.args.defaults):],
                                  init.args.defaults):
            env[param.arg] = module.eval(default, 0)
        for param, default in zip(init.args.kwonlyargs, init.args.kw_defaults):
            if default is not None:
                env[param.arg] = module.eval(default, 0)
        scope = _Scope(self.mirror, {}, None)
        scope.locals_unknown = self.function is not None
        for param, arg in zip(init.args.args[1:], call.args):
            env[param.arg] = scope.eval(arg, 0)
        for kw in call.keywords:
            if kw.arg is not None and kw.arg in env:
                env[kw.arg] = scope.eval(kw.value, 0)
        return env

    def fixed(self, node: ast.expr) -> bool:
        """Literals, module-level names no local shadows, and their attributes."""
        kind = type(node)
        if kind is ast.Constant:
            return True
        if kind is ast.Name:
            name = node.id  # type: ignore[attr-defined]
            if name in ("True", "False", "None"):
                return True
            if self.mirror.bound_in(self.function, name):
                return False
            return name in self.mirror.module_values or bool(
                self.mirror.facts.qualnames_of(node))
        if kind is ast.Attribute:
            return type(node.value) in (ast.Name, ast.Attribute) and self.fixed(node.value)  # type: ignore[attr-defined]
        if kind is ast.BinOp:
            return self.fixed(node.left) and self.fixed(node.right)  # type: ignore[attr-defined]
        if kind is ast.UnaryOp:
            return self.fixed(node.operand)  # type: ignore[attr-defined]
        if kind in (ast.Tuple, ast.List):
            return all(type(e) is not ast.Starred and self.fixed(e) for e in node.elts)  # type: ignore[attr-defined]
        return False

    def layer(self, leaf: str, call: ast.Call, depth: int) -> object:
        if leaf in KEEP:
            return _Layer(leaf, "keep", 0, UNK, UNK)
        family, dims, names = LAYERS[leaf]
        if any(type(a) is ast.Starred for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return _Layer(leaf, family, dims, UNK, UNK)
        args: dict[str, object] = {}
        for position, name in enumerate(names):
            arg = _arg(call, name, position)
            if arg is not None:
                args[name] = self.eval(arg, depth)
        for kw in call.keywords:
            if kw.arg is not None and kw.arg not in args:
                args[kw.arg] = self.eval(kw.value, depth)
        first = names[0] if names else ""
        in_size: object = UNK
        out_size: object = UNK
        lazy = leaf.startswith("Lazy")
        if family in ("linear", "conv", "convT"):
            in_size = UNK if lazy else args.get(first, UNK)
            out_size = args.get(names[0] if lazy else names[1], UNK)
        elif family == "bilinear":
            out_size = args.get("out_features", UNK)
        elif family in ("bn", "in"):
            in_size = out_size = args.get("num_features", UNK)
        elif family == "gn":
            in_size = out_size = args.get("num_channels", UNK)
        elif family == "ln":
            shape = args.get("normalized_shape", UNK)
            if isinstance(shape, (tuple, list)) and len(shape) == 1:
                shape = shape[0]
            in_size = out_size = shape if _maybe(shape) else UNK
        elif family == "embed":
            out_size = args.get("embedding_dim", UNK)
        elif family in ("rnn", "cell"):
            in_size = args.get("input_size", UNK)
            proj = args.get("proj_size")
            hidden = args.get("hidden_size", UNK)
            if type(proj) is _Sym:
                hidden = WILD
            elif proj:
                hidden = proj
            positional = [a for a in call.args if type(a) is not ast.Starred]
            directions = args.get("bidirectional", False)
            if len(positional) > 3:
                hidden = UNK
            elif type(directions) is _Sym:
                hidden = WILD if _maybe(hidden) else UNK
            elif type(directions) is not bool:
                hidden = UNK
            elif directions:
                hidden = hidden * 2 if type(hidden) is int else (
                    _symbolic(ast.Mult, hidden, 2) if type(hidden) is _Sym else UNK)
            out_size = hidden
        elif family in ("mha", "same"):
            in_size = out_size = args.get(first, UNK)
            if family == "mha" and ("kdim" in args or "vdim" in args):
                in_size = WILD if any(type(args.get(k)) is _Sym for k in ("kdim", "vdim")) \
                    and _maybe(in_size) else UNK
        return _Layer(leaf, family, dims, _size(in_size), _size(out_size),
                      tuple((k, _frozen(v)) for k, v in args.items()))

    def sequential(self, call: ast.Call, depth: int) -> object:
        if call.keywords:
            return UNK
        elements: list[object] = []
        for arg in call.args:
            if type(arg) is ast.Starred:
                value = self.eval(arg.value, depth)
                if not isinstance(value, list):
                    return UNK
                elements.extend(value)
                continue
            value = self.eval(arg, depth)
            if isinstance(value, _Ordered):
                elements.extend(value.elements)
            else:
                elements.append(value)
        if not call.args:
            return _Builder([])
        return _Seq(tuple(_element(e) for e in elements))

    def ordered_dict(self, call: ast.Call, depth: int) -> object:
        if len(call.args) != 1 or call.keywords or type(call.args[0]) is ast.Starred:
            return UNK
        items = call.args[0]
        if type(items) not in (ast.List, ast.Tuple):
            return UNK
        elements = []
        for item in items.elts:  # type: ignore[attr-defined]
            if type(item) is not ast.Tuple or len(item.elts) != 2:  # type: ignore[attr-defined]
                return UNK
            elements.append(self.eval(item.elts[1], depth))  # type: ignore[attr-defined]
        return _Ordered(elements)

    def helper(self, helper: ast.FunctionDef, call: ast.Call, depth: int) -> object:
        if any(type(a) is ast.Starred for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return UNK
        params = _parameters(helper, stars=False)[1:]
        env: dict[str, object] = {p: UNK for p in params}
        defaults = helper.args.defaults
        positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        for name, default in zip(positional[len(positional) - len(defaults):], defaults):
            env[name] = _Scope(self.mirror, {}, None).eval(default, 0)
        for name, default in zip((a.arg for a in helper.args.kwonlyargs),
                                 helper.args.kw_defaults):
            if default is not None:
                env[name] = _Scope(self.mirror, {}, None).eval(default, 0)
        for name, arg in zip(helper.args.args[1:], call.args):
            env[name.arg] = self.eval(arg, depth)
        for kw in call.keywords:
            env[kw.arg] = self.eval(kw.value, depth)  # type: ignore[index]
        if any(_contains_return(s) for s in helper.body if type(s) not in (
                ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            return UNK
        scope = _Scope(self.mirror, env, self.cls, helper)
        scope.attrs = self.attrs
        scope.run(helper.body, depth)
        returned = scope.returned
        if isinstance(returned, _Builder):
            return _Seq(tuple(_element(e) for e in returned.elements))
        return returned


def _size(value: object) -> object:
    return value if _maybe(value) else UNK


def _frozen(value: object) -> object:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, (tuple, int, float, str, bool, _Sym, _Unknown)) or value is None:
        return value
    return UNK


# ------------------------------------------------------------------ forward
class _Flow:
    """Mirrors ``_Flow``: the values flowing through ``forward``."""

    def __init__(self, mirror: _Mirror, scope: _Scope, start: _Value, *,
                 asks: bool = False) -> None:
        self.mirror = mirror
        # whether the steps naming a flatten matter (the chain may ask the project for an
        # input): only then are the reasons of unknown values told apart
        self.asks = asks
        self.scope = scope
        function = scope.function
        first = _parameters(function, stars=False)[1]  # type: ignore[arg-type]
        self.values: dict[str, object] = {first: start}  # _Value, UNK or absent
        self.first_images: bool | None = None  # the first step may be on images
        # what a class used as a layer passes on: whether the chain stops, its first layer
        # with a size (and whether only size-keeping ones come before it), what it returns
        self.stopped = False
        # a stop the analysis surely makes too (not one for a class this mirror does not
        # follow); a step whose label may name a flatten, view or reshape
        self.surely_stopped = False
        self.flattens = False
        self.entry: _Layer | None = None
        self.entry_closed = False
        self.entry_spatial = False
        self.returned: list[object] = []

    def step(self, images: bool) -> None:
        if self.first_images is None:
            self.first_images = images

    def stop(self, reason: object = UNK) -> None:
        """A step the chain stops at (the analysis's too), labelled by the reason of the
        unknown ``reason``: it may name a class or a layer."""
        self.stopped = self.surely_stopped = True
        self.flattens = self.flattens or reason is UNK_NAMING
        self.step(self.mirror.conv_words)

    def flatten_step(self) -> None:
        """A step labelled by a flatten, view or reshape."""
        self.flattens = True
        self.step(False)

    def run(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind in (ast.With, ast.AsyncWith):
                self.run(stmt.body)  # type: ignore[attr-defined]
            elif kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr,
                          ast.Pass, ast.Assert, ast.Delete, ast.Raise, ast.Global,
                          ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Break,
                          ast.Continue):
                self.small(stmt)
            else:
                self.branch(stmt)

    def branch(self, stmt: ast.stmt) -> None:
        # the names the analysis reads as rebound: targets of assignments (an annotated
        # one is no AssignTarget of libcst), augmented assignments and for loops
        bound: set[str] = set()
        for node in (stmt, *_statements(stmt)):  # (``:=`` aside: known errs towards a finding)
            kind = type(node)
            if kind is ast.Assign:
                targets: list[ast.AST] = list(node.targets)  # type: ignore[attr-defined]
            elif kind in (ast.AugAssign, ast.For, ast.AsyncFor):
                targets = [node.target]  # type: ignore[attr-defined]
            else:
                continue
            bound.update(n.id for t in targets for n in ast.walk(t) if type(n) is ast.Name)  # type: ignore[attr-defined]
        for name in bound:
            if name in self.values:
                if isinstance(self.values[name], _Value):
                    self.stop()
                self.values[name] = UNK

    def small(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            targets = stmt.targets  # type: ignore[attr-defined]
            if len(targets) == 1 and type(targets[0]) is ast.Tuple:
                self.unpack(targets[0], stmt.value)  # type: ignore[attr-defined]
                return
            value = self.eval(stmt.value)  # type: ignore[attr-defined]
            for target in targets:
                if type(target) is ast.Name:
                    self.set(target.id, value)
                else:
                    for node in ast.walk(target):
                        if type(node) is ast.Name and node.id in self.values:
                            self.values[node.id] = UNK
        elif kind is ast.AugAssign and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
            name = stmt.target.id  # type: ignore[attr-defined]
            other = self.eval(stmt.value)  # type: ignore[attr-defined]
            if name in self.values and (isinstance(other, _Value) or _number(
                    stmt.value)) and type(stmt.op) in (ast.Add, ast.Mult):  # type: ignore[attr-defined]
                return
            self.set(name, UNK if name in self.values else None)
        elif kind is ast.Return and stmt.value is not None:  # type: ignore[attr-defined]
            value = stmt.value  # type: ignore[attr-defined]
            parts = value.elts if type(value) is ast.Tuple else [value]
            for part in parts:
                flowing = any(type(n) is ast.Name and isinstance(self.values.get(n.id), _Value)
                              for n in ast.walk(part))
                result = self.eval(part)
                if isinstance(result, _Unknown) and flowing:
                    self.stop(result)
                self.returned.append(result if len(parts) == 1 else None)
        elif kind is ast.AnnAssign and type(stmt.target) is ast.Name and (  # type: ignore[attr-defined]
                stmt.value is not None):  # type: ignore[attr-defined]
            self.set(stmt.target.id, self.eval(stmt.value))  # type: ignore[attr-defined]

    def set(self, name: str, value: object) -> None:
        if isinstance(value, _Unknown) and isinstance(self.values.get(name), _Value):
            self.stop(value)
        if value is None:
            self.values.pop(name, None)
        else:
            self.values[name] = value

    def unpack(self, target: ast.Tuple, value_node: ast.expr) -> None:
        first = target.elts[0] if target.elts else None
        out: object = None
        if type(value_node) is ast.Call:
            module = self.module_of(value_node.func)  # type: ignore[attr-defined]
            if isinstance(module, _Layer) and module.family in ("rnn", "mha"):
                out = self.apply_tuple(module, value_node)  # type: ignore[arg-type]
            else:
                out = self.eval(value_node)
                if isinstance(out, _Value):
                    out = UNK
        for element in target.elts:
            if type(element) is ast.Name:
                self.values.pop(element.id, None)
        if type(first) is ast.Name and out is not None:
            self.values[first.id] = out

    def apply_tuple(self, layer: _Layer, call: ast.Call) -> object:
        value = self.argument(call)
        if value is None:
            return UNK
        if not isinstance(value, _Value):
            value = _FRESH
        self.step(layer.name.startswith(("Conv", "MaxPool", "AvgPool")))
        self.flattens = self.flattens or _names_flatten(layer.name)
        self.mirror.check(layer, value)
        rank = value.rank if _maybe(value.rank) else UNK
        return _Value(rank, _if_rank2(rank, layer.out_size, UNK), layer.out_size, None, False)

    def module_of(self, func: ast.expr) -> object:
        attr = _self_attribute(func)
        if attr is None:
            return None
        return self.scope.attrs.get(attr, UNK)

    def argument(self, call: ast.Call) -> object:
        if not call.args or type(call.args[0]) is ast.Starred:
            return None
        return self.eval(call.args[0])

    def eval(self, node: ast.expr) -> object:
        kind = type(node)
        if kind is ast.Name:
            return self.values.get(node.id)  # type: ignore[attr-defined]
        if kind is ast.Call:
            return self.call(node)  # type: ignore[arg-type]
        if kind is ast.BinOp:
            left, right = self.eval(node.left), self.eval(node.right)  # type: ignore[attr-defined]
            if isinstance(left, _Value) and isinstance(right, _Value):
                return _merged(left, right)
            if isinstance(left, _Value) and _number(node.right):  # type: ignore[attr-defined]
                return left
            if isinstance(right, _Value) and _number(node.left):  # type: ignore[attr-defined]
                return right
            return _stop(left, right)
        if kind is ast.Subscript:
            return self.subscript(node)  # type: ignore[arg-type]
        inner = [self.eval(c) for c in _expressions(node)]
        return _stop(*inner)

    def subscript(self, node: ast.Subscript) -> object:
        base = self.eval(node.value)
        if not isinstance(base, _Value):
            return base
        indices = node.slice.elts if type(node.slice) is ast.Tuple else [node.slice]  # type: ignore[attr-defined]
        dropped = 0
        for index in indices:
            if _number(index):
                dropped += 1
            elif type(index) is ast.Slice and index.lower is None and index.upper is None \
                    and index.step is None:  # type: ignore[attr-defined]
                continue
            else:
                return UNK
        if dropped == 0:
            return UNK
        kept = type(indices[-1]) is ast.Slice or (
            type(base.rank) is int and len(indices) < base.rank)  # type: ignore[operator]
        if not kept and type(base.rank) is not _Sym:
            return UNK
        return _Value(UNK, UNK, base.features, None, False)

    def call(self, call: ast.Call) -> object:
        module = self.module_of(call.func)
        if module is not None:
            return self.call_module(call, module)
        quals = self.mirror.quals(call.func, self.scope.function)
        first = self.argument(call)
        func = call.func
        if type(func) is ast.Attribute and not quals:
            receiver = self.eval(func.value)
            if isinstance(receiver, _Value):
                return self.method(call, receiver)
            if receiver is not None:
                return receiver if isinstance(receiver, _Unknown) else None
        if isinstance(first, _Value):
            if quals & KEEP_FUNCTIONS:
                self.step(False)
                return first
            if "torch.flatten" in quals:
                start = _arg(call, "start_dim", 1)
                end = _arg(call, "end_dim", 2)
                if start is not None and _int_literal(start) == 1 and end is None:
                    self.flatten_step()
                    return _flatten(first)
                self.step(False)
                return UNK_NAMING  # ("a reshape")
            spatial_functions = quals & SPATIAL_FUNCTIONS
            if spatial_functions:
                self.step(False)
                spatial = self.functional_pool(min(spatial_functions), call, first)
                features = WILD if spatial is WILD else (spatial[-1] if spatial else UNK)  # type: ignore[index]
                return _Value(first.rank, first.channels, features, spatial, first.flattened)
        values = [self.eval(a.value if type(a) is ast.Starred else a) for a in call.args]
        values += [self.eval(k.value) for k in call.keywords]
        stopped = _stop(first, *values)
        if stopped is UNK and self.asks and (any(_names_flatten(q) for q in quals) or any(
                _names_flatten(n.id if type(n) is ast.Name else n.attr)  # type: ignore[attr-defined]
                for n in ast.walk(func) if type(n) in (ast.Name, ast.Attribute))):
            return UNK_NAMING  # (the callee names the step)
        return stopped

    def functional_pool(self, qual: str, call: ast.Call, value: _Value) -> object:
        leaf = qual.rsplit(".", 1)[1]
        if not leaf.startswith(("max_pool", "avg_pool")) or any(
                type(a) is ast.Starred for a in call.args):
            return None
        names = ("input",) + (MAX_POOL if leaf.startswith("max") else AVG_POOL)
        args: dict[str, object] = {}
        for position, name in enumerate(names[1:], start=1):
            arg = _arg(call, name, position)
            if arg is not None:
                args[name] = _frozen(self.scope.eval(arg, 0))
        if any(k.arg is None for k in call.keywords):
            return WILD if value.spatial is not None else None
        pool = _Layer(leaf, "pool", int(leaf[-2]), UNK, UNK, tuple(args.items()))
        return _spatial(pool, value, value.rank)

    def method(self, call: ast.Call, value: _Value) -> object:
        name = call.func.attr  # type: ignore[attr-defined]
        if name in KEEP_METHODS:
            self.step(False)
            return value
        plain = not call.keywords and not any(type(a) is ast.Starred for a in call.args)
        if name in ("view", "reshape") and len(call.args) == 2 and plain:
            size = self.scope.eval(call.args[1], 0)
            if type(size) is int and size > 0:
                self.flatten_step()
                return _Value(2, size, size, None, True)
            if size == -1:
                self.flatten_step()
                return _flatten(value)
            if type(size) is _Sym:
                self.flatten_step()
                return _Value(2, WILD, WILD, None, True)
        if name == "flatten" and len(call.args) == 1 and _int_literal(call.args[0]) == 1 and (
                not call.keywords):
            self.flatten_step()
            return _flatten(value)
        # "a reshape (.view)", ".contiguous()"
        return UNK_NAMING if name in RESHAPES or _names_flatten(name) else UNK

    def call_module(self, call: ast.Call, module: object) -> object:
        value = self.argument(call)
        if value is None:
            if isinstance(module, (_Layer, _Seq)):
                value = _FRESH
            else:
                return None
        if not isinstance(value, _Value):
            self.stop(value)
            value = _FRESH
        if isinstance(module, _Layer):
            # "Flatten with more arguments", "... returns a tuple"
            unknown = UNK_NAMING if _names_flatten(module.name) else UNK
            if len(call.args) + len(call.keywords) != 1:
                return unknown
            self.step(module.name.startswith(("Conv", "MaxPool", "AvgPool")))
            out = self.mirror.apply(module, value, self)
            return out if out is not None else unknown
        if isinstance(module, _Seq):
            images = _first_images(module)
            if images is not None:
                self.step(images)
            out = self.mirror.walk_sequence(module, value, self)
            return out if out is not None else UNK
        if self.asks and self.mirror.unknown_module_flattens(
                self.scope.cls, self.scope.function, str(_self_attribute(call.func))):
            return UNK_NAMING
        return UNK


def _first_images(seq: _Seq) -> bool | None:
    """Is the first step of walking ``seq`` a conv or pool layer (None: it has none)?"""
    for element in seq.elements:
        if isinstance(element, _Layer):
            return element.name.startswith(("Conv", "MaxPool", "AvgPool"))
        if isinstance(element, _Seq):
            found = _first_images(element)
            if found is not None:
                return found
            continue
        return False
    return None


def _stop(*values: object) -> object:
    """UNK when a flowing value goes in; None when none does."""
    return UNK if any(isinstance(v, (_Unknown, _Value)) for v in values) else None


def _expressions(node: ast.AST) -> list[ast.expr]:
    """What the analysis evaluates of an expression it does not follow (the children
    libcst holds as expressions, elements or arguments): a comparison's left side, a
    comprehension's elements (not what it iterates), an attribute's object, nothing of a
    dict or an f-string. Never more: a flowing value met here stops the chain."""
    kind = type(node)
    if kind is ast.Compare:
        return [node.left]  # type: ignore[attr-defined]
    if kind in (ast.Dict, ast.JoinedStr):
        return []
    if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
        return [node.elt]  # type: ignore[attr-defined]
    if kind is ast.DictComp:
        return [node.key, node.value]  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        return [node.value]  # type: ignore[attr-defined]
    found: list[ast.expr] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            found.append(child.value if type(child) is ast.Starred else child)  # type: ignore[attr-defined]
        elif type(child) is ast.keyword:
            found.append(child.value)  # type: ignore[attr-defined]
    return found


def _merged(left: _Value, right: _Value) -> _Value:
    """Mirrors ``_merged`` (``x + f(x)``: the sizes either side proves, the left one's
    where both do); a size known only by spelling gives either side's."""
    if left == right:
        return left
    parts = (left.rank, left.channels, left.features, right.rank, right.channels,
             right.features)
    if all(type(p) is int or p is UNK for p in parts):
        if type(left.rank) is int and type(right.rank) is int and left.rank != right.rank:
            return left
        pick = right if left.channels is UNK and left.features is UNK else left
        other = left if pick is right else right
        return replace(pick, rank=pick.rank if pick.rank is not UNK else other.rank,
                       channels=pick.channels if pick.channels is not UNK else other.channels,
                       features=pick.features if pick.features is not UNK else other.features,
                       spatial=pick.spatial if pick.spatial is not None else other.spatial)
    return _Value(_join(left.rank, right.rank), _join(left.channels, right.channels),
                  _join(left.features, right.features),
                  left.spatial if left.spatial == right.spatial else WILD,
                  left.flattened if left.flattened == right.flattened else None)
