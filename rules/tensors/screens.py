"""The ``ast`` checks of TL501 and TL502: before libcst parses a file, is there a place
where the rule can really report? Each check mirrors its rule's decision on CPython's tree
and errs only towards True (see :func:`torchlint.engine.triage.check`). The size rules'
checks (TL510-TL512) are in :mod:`torchlint.rules.tensors.size_screens`.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterable, Iterator
from typing import Any

from torchlint.analysis.ast_names import (
    argument as _argument,
    end as _end,
    first_start as _first_start,
    start as _start,
    target_names as _target_names,
)
from torchlint.analysis.layer_table import (
    NON_CONTIGUOUS_ATTRIBUTES,
    NON_CONTIGUOUS_FUNCTIONS,
    NON_CONTIGUOUS_METHODS,
)
from torchlint.analysis.memory_layout import SWAPS, Layout, mergeable, step, view_groups
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import from_elsewhere as _from_elsewhere
from torchlint.engine.triage import FileFacts

__all__ = ["may_flag_tl501", "may_flag_tl502"]


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
# the method names whose meaning a foreign qualified name would change in a base
_LAYOUT_NAMES = frozenset({"t", "permute", "narrow", "expand", "flatten", *SWAPS,
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
        if name not in ("t", "permute", "narrow", "expand", *SWAPS):
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
    return view_groups([None if i in rest else _factors(v) for i, v in enumerate(values)],
                       rest[0] if rest else None, order)

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
    """The producer's layout step (``memory_layout.step``, as ``layouts._transformed``)."""
    return step(name, base, [[_literal(e) for e in a.elts] if type(a) in (  # type: ignore[attr-defined]
        ast.Tuple, ast.List) else _literal(a) for a in args])


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
            not facts.qualnames_of(node)
            or any(_from_elsewhere(q) for q in facts.qualnames_of(node)))
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
    if quals and not any(_from_elsewhere(q) for q in quals):
        return False
    if _is_self(func.value):  # type: ignore[attr-defined]
        return False
    if method == "t" and (call.args or call.keywords):
        return False
    if method in ("permute", *SWAPS):
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
            starts = [_first_start(s) for s in body]
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
