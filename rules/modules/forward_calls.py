"""Calls of ``.forward(...)`` (TL107): where the call stands (method, class, wrapping code),
and whether its receiver is known to be a torch module or surely is not one."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    iter_nodes,
    iter_scope,
    last_name_part,
    method_call,
    positional_args,
    self_attribute,
    single_target,
    target_names,
)
from torchlint.analysis.spelling import FOREIGN_FRAMEWORKS, INFERENCE_ENGINES
from torchlint.analysis.torch_facts import is_layer_call, is_model_name
from torchlint.rules.modules.module_classes import is_module_class, local_class

# Factories whose result is a placeholder input (a shape probe or warm-up pass), not data
_DUMMY_FACTORIES = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand_like", "randn_like", "randint_like"))
# Methods that return the module they are called on (``model.to(device).forward(x)``)
_SAME_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float",
                                  "double", "bfloat16", "requires_grad_", "type"})
# Methods of a module (or ModuleDict) that yield its submodules, or (name, submodule) pairs
_SUBMODULE_METHODS = frozenset({"children", "modules", "values", "items", "named_children",
                                "named_modules"})
_HOOK_REGISTRATION = ("register_forward_hook", "register_forward_pre_hook",
                      "register_full_backward_hook", "register_full_backward_pre_hook",
                      "register_backward_hook", "register_module_forward_hook",
                      "register_module_forward_pre_hook")
# Words of a method or class name (``forward_torchscript``, ``warm_up``, ``BenchmarkingBase``)
# saying it is a warm-up, benchmark or TorchScript path
_WARM_UP_WORDS = frozenset({"warmup", "torchscript", "script", "scripted", "scripting", "jit",
                            "benchmark", "benchmarking", "profile", "profiler", "profiling"})
_SCRIPTING_CHECKS = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing",
                               "torch._C._get_tracing_state"})


class Place:
    """Where a ``.forward(...)`` call stands: its functions (innermost first), and the class
    whose method holds it (the outermost function directly in a class body)."""

    def __init__(self, ctx: FileContext) -> None:
        self.functions: list[cst.FunctionDef] = []
        self.cls: cst.ClassDef | None = None
        self.method: cst.FunctionDef | None = None
        for anc in reversed(ctx.ancestors):
            if isinstance(anc, cst.FunctionDef):
                self.functions.append(anc)
            elif isinstance(anc, cst.ClassDef):
                if self.functions:
                    self.cls, self.method = anc, self.functions[-1]
                break

    def names(self) -> list[str]:
        return [f.name.value for f in self.functions]


def patches_forward(ctx: FileContext, place: Place) -> bool:
    """The call is part of code that replaces or wraps a module's forward: a function around
    it assigns ``<x>.forward = ...``, is a hook (registered as one, or named so), or the call
    sits in a branch taken only while TorchScript compiles or traces."""
    hooks = ctx.cached("tl107_hooks", lambda: _registered_hooks(ctx.module))
    for function in place.functions:
        name = function.name.value
        if "hook" in name.lower() or name in hooks:
            return True
        if ctx.cached(("tl107_assigns_forward", id(function)),
                      lambda f=function: _assigns_forward(f)):  # type: ignore[misc]
            return True
    return _in_scripting_branch(ctx)


def _registered_hooks(module: cst.Module) -> frozenset[str]:
    names: set[str] = set()
    for node in iter_nodes(module):
        attribute = method_call(node, *_HOOK_REGISTRATION)
        if attribute is None and isinstance(node, cst.Call):
            if last_name_part(node.func) in _HOOK_REGISTRATION:
                attribute = node.func  # type: ignore[assignment]
        if attribute is not None:
            assert isinstance(node, cst.Call)
            names.update(n for a in node.args if (n := last_name_part(a.value)) is not None)
    return frozenset(names)


def _assigns_forward(function: cst.FunctionDef) -> bool:
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "forward"
                for t in node.targets):
            return True
    return False


def _in_scripting_branch(ctx: FileContext) -> bool:
    ancestors = ctx.ancestors
    for i in range(len(ancestors) - 2, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, cst.If) and ancestors[i + 1] is anc.body and any(
                isinstance(n, cst.Call) and ctx.qualified_name(n.func) in _SCRIPTING_CHECKS
                for n in iter_nodes(anc.test)):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
    return False


def is_warm_up(place: Place) -> bool:
    """A warm-up, benchmark or TorchScript path (``warmup``, ``forward_torchscript``, a
    benchmarking class), or construction (``__init__``, where no hook can be registered
    yet)."""
    names = place.names() + ([place.cls.name.value] if place.cls is not None else [])
    for name in names:
        words = _words(name)
        if name == "__init__" or _WARM_UP_WORDS.intersection(words) or "warm up" in " ".join(
                words):
            return True
    return False


def _words(name: str) -> list[str]:
    """``forward_torchscript`` -> forward, torchscript; ``BenchmarkingBase`` -> benchmarking,
    base; ``warmUp`` -> warm, up."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in spaced.lower().split("_") if w]


def defines_call(ctx: FileContext, cls: cst.ClassDef, depth: int = 0) -> bool:
    """The class, or a base class of this file, defines ``__call__``: ``obj(...)`` does not
    mean ``nn.Module.__call__`` there."""
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__call__":
            return True
    if depth > 8:
        return False
    for base in cls.bases:
        local = _local_class(ctx, base.value)
        if local is not None and local is not cls and defines_call(ctx, local, depth + 1):
            return True
    return False


def _local_class(ctx: FileContext, expr: cst.BaseExpression) -> cst.ClassDef | None:
    if not isinstance(expr, cst.Name) or ctx.lookup(expr.value) is not None:
        return None
    return local_class(ctx, expr.value)


def is_dummy_input(ctx: FileContext, call: cst.Call) -> bool:
    """The first argument is a placeholder made by ``torch.zeros``/``randn``... (directly,
    through a name, or in a dict or list of them): a shape probe or a warm-up pass."""
    args = positional_args(call)
    if not args:
        return False
    return _dummy(ctx, args[0].value, call, 0)


def _dummy(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> bool:
    while isinstance(expr, cst.Call) and method_call(expr) is not None and ctx.qualified_name(expr.func) not in _DUMMY_FACTORIES:
        expr = expr.func.value  # type: ignore[attr-defined]   # torch.zeros(...).to(dev)
    if isinstance(expr, cst.Call):
        return ctx.qualified_name(expr.func) in _DUMMY_FACTORIES
    if isinstance(expr, (cst.DictComp,)):
        return _dummy(ctx, expr.value, at, depth)
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return _dummy(ctx, expr.elt, at, depth)
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        return all(_dummy(ctx, e.value, at, depth) for e in expr.elements)
    if isinstance(expr, cst.Name) and depth < 3:
        bound = ctx.binding(expr.value, at)
        if bound is not None and bound.kind == "assign" and bound.value is not None:
            return _dummy(ctx, bound.value, bound.node, depth + 1)
    return False


# ------------------------------------------------------------------ receivers
def _foreign(ctx: FileContext, expr: cst.BaseExpression | None) -> bool:
    """A call (or name) of another framework or an inference engine (``cv2.dnn.readNet``)."""
    while isinstance(expr, cst.Call):
        expr = expr.func
    qual = ctx.qualified_name(expr) if expr is not None else None
    if qual is None:
        return False
    top = qual.split(".", 1)[0]
    return top in FOREIGN_FRAMEWORKS or top in INFERENCE_ENGINES


def module_receiver(ctx: FileContext, target: cst.BaseExpression, place: Place,
                    at: cst.CSTNode) -> bool:
    """Is ``target`` known to be a torch module? (False when unknown or surely not.)"""
    return _is_module(ctx, target, place, at, 0) is True


def _is_module(ctx: FileContext, expr: cst.BaseExpression, place: Place, at: cst.CSTNode,
               depth: int) -> bool | None:
    """True: a torch module; False: surely not one; None: unknown."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Call):
        return _called(ctx, expr, place, at, depth)
    if isinstance(expr, cst.Subscript):  # self.heads[i], model.layers[-1]
        return True if _is_module(ctx, expr.value, place, at, depth + 1) else None
    attr = self_attribute(expr)
    if attr is not None:
        return _self_attribute(ctx, attr, place)
    if isinstance(expr, cst.Attribute):
        if is_model_name(expr.attr.value, ctx.options.model_names):
            return True
        return True if _is_module(ctx, expr.value, place, at, depth + 1) else None
    if isinstance(expr, cst.Name):
        return _name(ctx, expr, place, at, depth)
    return None


def _called(ctx: FileContext, call: cst.Call, place: Place, at: cst.CSTNode,
            depth: int) -> bool | None:
    cls = _local_class(ctx, call.func)
    if cls is not None:  # an instance of a class of this file
        return is_module_class(ctx, cls) and not defines_call(ctx, cls)
    if _project_plain_class(ctx, call.func):
        return False  # an instance of a plain class of the project
    if is_layer_call(ctx, call):
        return True
    if _foreign(ctx, call):
        return False
    attribute = method_call(call)
    if attribute is not None and attribute.attr.value in _SAME_MODULE_METHODS:
        return _is_module(ctx, attribute.value, place, at, depth + 1)
    if ctx.qualified_name(call.func) == "builtins.getattr" and call.args:
        # getattr(model, "decoder"): an attribute of a module, looked up by name
        owner = _is_module(ctx, call.args[0].value, place, at, depth + 1)
        return True if owner else None
    return None


def _self_attribute(ctx: FileContext, attr: str, place: Place) -> bool | None:
    """``self.X`` in a method of ``place.cls``."""
    cls = place.cls
    if cls is None:
        return None
    values = ctx.cached(("tl107_attr_values", id(cls), attr), lambda: _attr_values(cls, attr))
    if any(_foreign(ctx, v) for v in values):
        return False
    if values and all(isinstance(v, cst.Call) and _plain_instance(ctx, v) for v in values):
        return False  # ``self.model = Predictor()``: only ever a plain class's instance
    if is_module_class(ctx, cls) or is_model_name(attr, ctx.options.model_names):
        return True  # a submodule, or a model held by a helper class
    if any(is_layer_call(ctx, v) for v in values):
        return True
    return None


def _plain_instance(ctx: FileContext, call: cst.Call) -> bool:
    """``call`` makes an instance of a plain class of the file or the project."""
    local = _local_class(ctx, call.func)
    if local is not None:
        return not is_module_class(ctx, local) and _plain_local(ctx, local, 0)
    return _project_plain_class(ctx, call.func)


def _plain_local(ctx: FileContext, cls: cst.ClassDef, depth: int) -> bool:
    """A class of this file whose bases are only ``object``, ``ABC`` or plain classes of
    the file or the project."""
    if depth > 8:
        return False
    for base in cls.bases:
        if base.keyword is not None:
            continue  # metaclass=ABCMeta
        local = _local_class(ctx, base.value)
        if local is not None:
            if local is cls or not _plain_local(ctx, local, depth + 1):
                return False
        elif ctx.qualified_name(base.value) not in ("builtins.object", "abc.ABC") and (
                not _project_plain_class(ctx, base.value)):
            return False
    return True


def _project_plain_class(ctx: FileContext, func: cst.BaseExpression) -> bool:
    qual = ctx.qualified_name(func)
    project = ctx.project
    return qual is not None and project is not None and project.knows_top_level(
        qual.split(".", 1)[0]) and project.is_plain_class(qual)


def _attr_values(cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """The values ``self.X`` is given in the class (``self.X = v``), and those of locals of
    the same name (stored by ``setattr`` or ``self.__dict__.update(locals())``)."""
    values: list[cst.BaseExpression] = []
    for node in iter_nodes(cls.body):
        target = single_target(node)
        if target is None or not isinstance(node, (cst.Assign, cst.AnnAssign)):
            continue
        if self_attribute(target) == attr or (
                isinstance(target, cst.Name) and target.value == attr):
            assert node.value is not None
            values.append(node.value)
    return values


def _name(ctx: FileContext, name: cst.Name, place: Place, at: cst.CSTNode,
          depth: int) -> bool | None:
    iterable = _comprehension_iterable(ctx, name.value, at)
    if iterable is not None:
        if _is_sliced(iterable):
            return False
        return True if _holds_modules(ctx, iterable, place, at, depth) else None
    bound = ctx.binding(name.value, at)
    if bound is not None and bound.kind == "assign" and bound.value is not None:
        found = _is_module(ctx, bound.value, place, bound.node, depth + 1)
        if found is not None:
            return found
    elif bound is not None and bound.kind == "for" and isinstance(bound.node, cst.For):
        if _is_sliced(bound.node.iter):
            # ``for lin in self.lins[1:]: lin.forward(x)``: TorchScript cannot call the
            # items of a sliced ModuleList, only their forward
            return False
        if _holds_modules(ctx, bound.node.iter, place, at, depth):
            return True
    if is_model_name(name.value, ctx.options.model_names):
        return True
    return None


def _comprehension_iterable(ctx: FileContext, name: str, at: cst.CSTNode
                            ) -> cst.BaseExpression | None:
    """What ``name`` iterates when a comprehension around ``at`` binds it."""
    index = ctx.index_of(at)
    for i in range(index - 1, -1, -1):
        anc = ctx.ancestors[i]
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            clause: cst.CompFor | None = anc.for_in
            while clause is not None:
                if name in target_names(clause.target):
                    return clause.iter
                clause = clause.inner_for_in
    return None


def _is_sliced(iterable: cst.BaseExpression) -> bool:
    for node in iter_scope(iterable):
        if isinstance(node, cst.Subscript) and any(
                isinstance(s.slice, cst.Slice) for s in node.slice):
            return True
    return False


def _holds_modules(ctx: FileContext, iterable: cst.BaseExpression, place: Place,
                   at: cst.CSTNode, depth: int) -> bool:
    """An iterable of modules: a ModuleList on self, ``model.children()``, ``zip``/
    ``enumerate``/``reversed`` of one, a list of modules."""
    if isinstance(iterable, cst.Call):
        qual = ctx.qualified_name(iterable.func)
        if qual in ("builtins.zip", "builtins.enumerate", "builtins.reversed"):
            return any(_holds_modules(ctx, a.value, place, at, depth) for a in iterable.args)
        attribute = method_call(iterable, *_SUBMODULE_METHODS)
        if attribute is not None:
            return _is_module(ctx, attribute.value, place, at, depth + 1) is True
        return False
    if isinstance(iterable, (cst.List, cst.Tuple)):
        return bool(iterable.elements) and all(
            _is_module(ctx, e.value, place, at, depth + 1) is True for e in iterable.elements)
    return _is_module(ctx, iterable, place, at, depth + 1) is True
