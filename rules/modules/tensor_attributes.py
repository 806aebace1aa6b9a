"""Tensors stored on ``self`` in ``__init__`` (TL104): whether the module's computation
reads them, and whether the stored value may be a 0-d scalar."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import iter_nodes, method_call, positional_args, self_attribute

# Methods that run the module's computation (on its device): forward, and the steps a
# Lightning trainer calls; the methods they call on self are added
ENTRY_METHODS = frozenset({"forward", "__call__", "training_step", "validation_step",
                           "test_step", "predict_step"})
# Methods giving a tensor another shape: what they are called on has dimensions
_RESHAPING = frozenset({"view", "reshape", "unsqueeze", "expand", "repeat", "flatten", "t",
                        "transpose", "permute", "unfold", "view_as", "expand_as"})
# Calls whose result is a sequence, never a scalar
_SEQUENCE_BUILTINS = frozenset({"builtins.list", "builtins.tuple", "builtins.range",
                                "builtins.sorted", "builtins.zip"})


def computing_methods(ctx: FileContext, cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods of ``cls`` that ``forward`` (or a training step) runs: those and every
    method they call on ``self``, transitively."""
    def find() -> list[cst.FunctionDef]:
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        todo = [name for name in methods if name in ENTRY_METHODS]
        seen: set[str] = set(todo)
        while todo:
            for node in iter_nodes(methods[todo.pop()].body):
                attribute = method_call(node)
                called = self_attribute(attribute) if attribute is not None else None
                if called in methods and called not in seen:
                    seen.add(called)
                    todo.append(called)
        return [methods[name] for name in seen]

    return ctx.cached(("tl104_computing", id(cls)), find)


def read_when_computing(ctx: FileContext, cls: cst.ClassDef, attr: str) -> bool:
    """Does the module's computation read ``self.<attr>``?"""
    for method in computing_methods(ctx, cls):
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Attribute) and self_attribute(node) == attr:
                return True
    return False


def updated_when_computing(ctx: FileContext, cls: cst.ClassDef, attr: str) -> bool:
    """Does the module's computation store a new value of ``self.<attr>`` computed from the
    old one (``self.mean = m * self.mean + ...``, ``y, self.mean = bn(x, self.mean)``), other
    than moving it (``self.mean = self.mean.to(x.device)``)? Such a tensor is state the
    module learns while it runs, a running statistic: it belongs in ``state_dict()``."""
    for method in computing_methods(ctx, cls):
        for node in iter_nodes(method.body):
            if not isinstance(node, (cst.Assign, cst.AugAssign)) or not _stores(node, attr):
                continue
            value = node.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
                    value.func.attr.value in ("to", "cuda", "cpu", "type_as")) and (
                    self_attribute(value.func.value) == attr):
                continue
            if isinstance(node, cst.AugAssign) or any(
                    isinstance(n, cst.Attribute) and self_attribute(n) == attr
                    for n in iter_nodes(value)):
                return True
    return False


def _stores(node: cst.Assign | cst.AugAssign, attr: str) -> bool:
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    for target in targets:
        elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
        for element in elements:
            inner = element.value if isinstance(element, cst.BaseElement) else element
            if self_attribute(inner) == attr:
                return True
    return False


def alternatives(function: cst.FunctionDef, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """Are ``first`` and ``second`` in different branches of one ``if`` of ``function``
    (only one of them runs)?"""
    for node in iter_nodes(function.body):
        if isinstance(node, cst.If) and node.orelse is not None:
            in_body = _holds(node.body, first), _holds(node.body, second)
            in_else = _holds(node.orelse, first), _holds(node.orelse, second)
            if in_body[0] and in_else[1] or in_body[1] and in_else[0]:
                return True
    return False


def _holds(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in iter_nodes(tree))


def may_be_scalar(ctx: FileContext, factory: cst.Call, reshaped: bool,
                  at: cst.CSTNode) -> bool:
    """``torch.tensor(x)`` / ``torch.as_tensor(x)`` whose data may be one number (a config
    value, ``dim ** -0.5``): a 0-d CPU tensor mixes with tensors on any device, and a
    constant from the configuration need not be saved. Data that is visibly a sequence (a
    list, a comprehension, a NumPy array, a name bound to one) or reshaped afterwards
    (``.view(3, 1, 1)``) is not a scalar. ``at`` is the statement being visited."""
    if ctx.qualified_name(factory.func) not in ("torch.tensor", "torch.as_tensor"):
        return False
    if reshaped:
        return False
    args = positional_args(factory)
    if not args:
        return False
    return not _sequence(ctx, args[0].value, at, 0)


def _sequence(ctx: FileContext, data: cst.BaseExpression, at: cst.CSTNode, depth: int) -> bool:
    if isinstance(data, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Set)):
        return True
    if isinstance(data, cst.Call):
        qual = ctx.qualified_name(data.func) or ""
        return qual in _SEQUENCE_BUILTINS or qual.startswith("numpy.")
    if isinstance(data, cst.Name) and depth < 3:
        bound = ctx.binding(data.value, at)
        if bound is not None and bound.kind == "assign" and bound.value is not None:
            return _sequence(ctx, bound.value, bound.node, depth + 1)
        if bound is not None and bound.kind == "param" and isinstance(bound.node, cst.Param):
            # mean=(0.5, 0.5, 0.5), or an annotation saying sequence or array
            param = bound.node
            if param.default is not None and _sequence(ctx, param.default, at, depth + 1):
                return True
            annotation = param.annotation
            return annotation is not None and any(
                isinstance(n, cst.Name) and n.value in _SEQUENCE_TYPES
                for n in iter_nodes(annotation.annotation))
    return False


# Annotation names of a sequence or array parameter (``mean: Sequence[float]``)
_SEQUENCE_TYPES = frozenset({"list", "List", "tuple", "Tuple", "Sequence", "ndarray",
                             "ArrayLike", "Tensor", "NDArray", "Iterable"})


def is_reshaping(method: str) -> bool:
    return method in _RESHAPING
