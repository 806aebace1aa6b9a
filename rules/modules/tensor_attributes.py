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
