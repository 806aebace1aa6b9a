"""The objects a training setup is made of, and the order of calls on them: facts the
training-setup rules (TL109 unused layers, TL223 gradient scalers, TL224 frozen optimizers,
TL310 device moves, TL311 compiled code, TL802 distributed samplers, TL903 dataset
generators) and the optimizer-step rules (TL213, TL218-TL221) share.

Computed once per file (``FileContext.cached``), each only when a rule asks for it:

* **the assignment index** (``assignment_index``): every binding of a name or ``self.x``
  in the file, in one walk, shared by every rule that asks what something was assigned.
* **bindings**: what a name (in one function, or at module level) or a ``self.x`` (in the
  methods of one class) is assigned, as the expressions assigned (``assigned``), and the
  qualified name of the class or function a binding calls (``bound_call``): a
  ``GradScaler``, an optimizer, a ``DistributedSampler``, a ``DataLoader``; and the
  functions of the file or of the project (read with ``ast``, recorded as dependencies)
  that return ``DataLoader``s (``returns_plain_loader``).
* **the scaler calls of a function**, in source order (``scaler_events``): each
  ``S.scale(L).backward()``, ``S.unscale_(O)``, ``S.step(O)`` and each gradient clip
  (``torch.nn.utils.clip_grad_norm_``/``clip_grad_value_``, any alias), so a rule can tell
  which came before which along the function's code.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    children_of,
    get_arg,
    iter_nodes,
    iter_scope,
    parameters,
    self_attribute,
    string_value,
)
from torchlint.analysis.project import Dependency, file_digest
from torchlint.analysis.torch_facts import is_dtype, is_layer_call

GRAD_SCALERS = frozenset({
    "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.cpu.amp.GradScaler",
})
GRADIENT_CLIPS = frozenset({
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm",
})
DISTRIBUTED_SAMPLERS = frozenset({
    "torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler",
})
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_OPTIMIZER_PREFIX = "torch.optim."


def text(node: cst.CSTNode) -> str:
    """An expression's source without whitespace or comments, to compare two spellings."""
    return "".join(cst.Module([]).code_for_node(
        node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node).split())


def is_optimizer_class(qualname: str | None) -> bool:
    """``torch.optim.SGD``, ``torch.optim.adamw.AdamW`` (not a scheduler, not a function)."""
    if not qualname or not qualname.startswith(_OPTIMIZER_PREFIX) or ".lr_scheduler" in qualname:
        return False
    return qualname.rsplit(".", 1)[1][:1].isupper() and not qualname.endswith(".Optimizer")


# ------------------------------------------------------------------ bindings
@dataclass(frozen=True)
class Assignment:
    """One binding of a name or attribute of the file (see :func:`assignment_index`)."""

    function: cst.FunctionDef | None  # the function holding it (None: module level)
    klass: cst.ClassDef | None  # the class whose method holds a ``self.x = ...`` (else None)
    value: cst.BaseExpression | None  # None: bound by unpacking, a loop or a bare annotation
    how: str  # "assign", "unpack", "loop" (a ``for`` target), "declare" (``x: int``)
    # for "unpack" from a flat tuple target: the value unpacked and the element's position
    # (``a, b = build()``: ``build()`` and 1 for ``b``)
    unpacked_from: cst.BaseExpression | None = None
    position: int | None = None


def assignment_index(ctx: FileContext) -> dict[str, list[Assignment]]:
    """Every binding of a name or attribute of the file by assignment, unpacking, ``for``
    target or bare annotation, by the target's text (``self.opt``), in one walk of the
    file, shared by every rule that asks what something was assigned."""
    return ctx.cached("training_objects_assignments", lambda: _index(ctx.module))


def _index(module: cst.Module) -> dict[str, list[Assignment]]:
    index: dict[str, list[Assignment]] = {}
    # (node, function holding it, class of that method, class being defined outside any
    # function)
    stack: list[tuple[cst.CSTNode, cst.FunctionDef | None, cst.ClassDef | None,
                      cst.ClassDef | None]] = [(module, None, None, None)]
    while stack:
        node, function, klass, outer = stack.pop()
        kind = type(node)
        if kind is cst.ClassDef:
            outer = node  # type: ignore[assignment]
        elif kind is cst.FunctionDef:
            function, klass, outer = node, outer, None  # type: ignore[assignment]
        elif kind is cst.Assign or kind is cst.AnnAssign:
            targets = [t.target for t in node.targets] if kind is cst.Assign else [  # type: ignore[attr-defined]
                node.target]  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
            for target in targets:
                if isinstance(target, (cst.Name, cst.Attribute)):
                    index.setdefault(text(target), []).append(Assignment(
                        function, klass, value, "assign" if value is not None else "declare"))
                elif isinstance(target, (cst.Tuple, cst.List)):
                    flat = [e.value for e in target.elements]
                    for element in _unpacked(target):
                        position = next((i for i, e in enumerate(flat) if e is element), None)
                        index.setdefault(text(element), []).append(Assignment(
                            function, klass, None, "unpack", value, position))
        elif kind is cst.For:
            for element in _targets(node.target):  # type: ignore[attr-defined]
                index.setdefault(text(element), []).append(
                    Assignment(function, klass, None, "loop"))
        stack.extend((child, function, klass, outer) for child in children_of(node))
    return index


def _assignments(ctx: FileContext) -> dict[str, list[Assignment]]:
    """The index without bare annotations (``x: int`` binds no value)."""
    return ctx.cached("training_objects_valued_assignments", lambda: {
        name: kept for name, entries in assignment_index(ctx).items()
        if (kept := [e for e in entries if e.how != "declare"])})


def _targets(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        yield from _unpacked(target)
    elif isinstance(target, (cst.Name, cst.Attribute)):
        yield target


def _unpacked(target: cst.Tuple | cst.List) -> Iterator[cst.BaseExpression]:
    for element in target.elements:
        value = element.value
        if isinstance(value, (cst.Tuple, cst.List)):
            yield from _unpacked(value)
        elif isinstance(value, (cst.Name, cst.Attribute)):
            yield value


def assigned(ctx: FileContext, expr: cst.BaseExpression, function: cst.FunctionDef | None,
             klass: cst.ClassDef | None = None) -> list[cst.BaseExpression] | None:
    """What ``expr`` (a name, or ``self.x``) is assigned, seen from ``function`` (None: module
    level): a name's assignments in that function, or at module level when the function
    neither assigns it nor takes it as a parameter; ``self.x``'s assignments in the methods
    of ``klass``. None when some binding cannot be followed (unpacking, a loop target, a
    parameter) or there is none."""
    entries = _assignments(ctx).get(text(expr), [])
    if isinstance(expr, cst.Attribute):
        if self_attribute(expr) is None or klass is None:
            return None
        entries = [e for e in entries if e.klass is klass]
    elif isinstance(expr, cst.Name):
        local = [e for e in entries if function is not None and e.function is function]
        if local:
            entries = local
        elif function is not None and expr.value in {p.name.value for p in parameters(function)}:
            return None
        else:
            entries = [e for e in entries if e.function is None]
    else:
        return None
    if not entries or any(e.value is None for e in entries):
        return None
    return [e.value for e in entries if e.value is not None]


def bound_call(ctx: FileContext, expr: cst.BaseExpression, function: cst.FunctionDef | None,
               klass: cst.ClassDef | None = None) -> str | None:
    """The qualified name of the callable every assignment of ``expr`` calls
    (``torch.amp.GradScaler`` for ``scaler = GradScaler()``), else None."""
    values = assigned(ctx, expr, function, klass)
    if not values:
        return None
    names = {ctx.qualified_name(v.func) if isinstance(v, cst.Call) else None for v in values}
    return names.pop() if len(names) == 1 else None


def is_bound_elsewise(ctx: FileContext, expr: cst.BaseExpression,
                      function: cst.FunctionDef | None, klass: cst.ClassDef | None,
                      qualnames: frozenset[str]) -> bool:
    """Some assignment of ``expr`` in the file gives it a value not built by one of
    ``qualnames`` (a scaler of another library, a wrapper)."""
    values = assigned(ctx, expr, function, klass) or []
    return any(not isinstance(v, cst.Call) or ctx.qualified_name(v.func) not in qualnames
               for v in values)


# -------------------------------------------------------------- scaler calls
@dataclass(frozen=True)
class ScalerEvent:
    kind: str  # "scale_backward", "unscale", "step", "clip"
    scaler: str  # the receiver's text ("" for a clip)
    optimizer: str  # the optimizer's text for "unscale"/"step" ("" otherwise)
    node: cst.Call
    receiver: cst.BaseExpression | None  # the scaler expression (None for a clip)


def scaler_events(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> list[ScalerEvent]:
    """The scaler calls and gradient clips of a function's own body (or of the module's
    code outside functions), in source order."""
    return ctx.cached(("training_objects_scaler_events", id(scope)),
                      lambda: list(_scaler_events(ctx, scope)))


def _scaler_events(ctx: FileContext, scope: cst.FunctionDef | cst.Module
                   ) -> Iterator[ScalerEvent]:
    chained: set[int] = set()
    for node in iter_scope(scope.body if isinstance(scope, cst.FunctionDef) else scope):
        if type(node) is not cst.Call:
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            chained.add(id(func.value))
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if method == "backward" and isinstance(receiver, cst.Call) and isinstance(
                    receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
                yield ScalerEvent("scale_backward", text(receiver.func.value), "", node,
                                  receiver.func.value)
                continue
            if method == "scale" and len(node.args) == 1 and id(node) not in chained and (
                    _scaler_like(ctx, receiver)):
                # ``scaled = scaler.scale(loss)`` then ``scaled.backward()``
                yield ScalerEvent("scale_backward", text(receiver), "", node, receiver)
                continue
            if method in ("unscale_", "step") and node.args and not node.args[0].star:
                yield ScalerEvent("unscale" if method == "unscale_" else "step", text(receiver),
                                  text(node.args[0].value), node, receiver)
                continue
        if ctx.qualified_name(func) in GRADIENT_CLIPS:
            yield ScalerEvent("clip", "", "", node, None)


def _scaler_like(ctx: FileContext, receiver: cst.BaseExpression) -> bool:
    """A receiver of ``.scale(loss)`` named as a scaler (``scaler``, ``self.grad_scaler``)
    or built by a ``GradScaler`` somewhere in the file."""
    if not isinstance(receiver, (cst.Name, cst.Attribute)):
        return False
    if "scaler" in text(receiver).rsplit(".", 1)[-1].lower():
        return True
    return any(v is not None and isinstance(v.value, cst.Call) and ctx.qualified_name(
        v.value.func) in GRAD_SCALERS for v in _assignments(ctx).get(text(receiver), []))


def is_grad_scaler(ctx: FileContext, scaler: cst.BaseExpression,
                   function: cst.FunctionDef | None, klass: cst.ClassDef | None) -> bool:
    """``scaler`` is a ``GradScaler``: bound to one in the file, or not bound in the file
    to anything else (a parameter, an attribute set elsewhere) while the function uses it
    as one (``S.scale(L).backward()`` and ``S.step(O)``)."""
    if bound_call(ctx, scaler, function, klass) in GRAD_SCALERS:
        return True
    return not is_bound_elsewise(ctx, scaler, function, klass, GRAD_SCALERS) and (
        isinstance(scaler, cst.Name) or self_attribute(scaler) is not None)


# ------------------------------------------------------------------ calls
def call_argument(call: cst.Call, keyword: str, position: int | None = None
                  ) -> cst.BaseExpression | None:
    arg = get_arg(call, keyword, position)
    return arg.value if arg is not None and not arg.star else None


def calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    for child in iter_nodes(node):
        if type(child) is cst.Call:
            yield child  # type: ignore[misc]


# ------------------------------------------------------------------ loaders
@dataclass(frozen=True)
class LoaderSite:
    call: cst.Call  # the DataLoader(...) call
    target: str | None  # the text of the name or attribute it is assigned to
    scope: cst.FunctionDef | cst.Module  # the function (or module) holding it


def data_loaders(ctx: FileContext) -> list[LoaderSite]:
    """Every ``torch.utils.data.DataLoader(...)`` call of the file (any alias), with what
    it is assigned to."""
    return ctx.cached("training_objects_loaders", lambda: list(_loaders(ctx)))


def _loaders(ctx: FileContext) -> Iterator[LoaderSite]:
    scopes: list[cst.FunctionDef | cst.Module] = [ctx.module]
    scopes += [d for d in ctx.definitions() if isinstance(d, cst.FunctionDef)]
    for scope in scopes:
        for node in iter_scope(scope):
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Call):
                call = node.value
                target = node.targets[0].target if isinstance(node, cst.Assign) and len(
                    node.targets) == 1 else getattr(node, "target", None)
                if ctx.qualified_name(call.func) in DATA_LOADERS:
                    yield LoaderSite(call, text(target) if isinstance(
                        target, (cst.Name, cst.Attribute)) else None, scope)
            elif isinstance(node, cst.Call) and ctx.qualified_name(node.func) in DATA_LOADERS:
                if not _assigned_call(ctx, node):
                    yield LoaderSite(node, None, scope)


def _assigned_call(ctx: FileContext, call: cst.Call) -> bool:
    """Is ``call`` the whole value of an assignment (reported by the assignment above)?"""
    return ctx.cached(("training_objects_assigned_calls",), lambda: {
        id(n.value) for n in iter_nodes(ctx.module)
        if isinstance(n, (cst.Assign, cst.AnnAssign)) and n.value is not None}
    ).__contains__(id(call))


# loader arguments that may move the batch (a collate function, a pin-memory device)
MOVING_LOADER_ARGS = ("collate_fn", "pin_memory_device")


def plain_loader_call(ctx: FileContext, node: cst.BaseExpression | None) -> bool:
    """``DataLoader(...)`` (any alias) without a ``collate_fn`` or ``pin_memory_device``,
    which could move the batch to a device."""
    return isinstance(node, cst.Call) and ctx.qualified_name(node.func) in DATA_LOADERS and all(
        call_argument(node, a) is None for a in MOVING_LOADER_ARGS)


def returns_plain_loader(ctx: FileContext, call: cst.Call, position: int | None = None
                         ) -> bool:
    """``call`` calls a function of the file, or of another file of the project, every
    ``return`` of which gives a plain ``DataLoader`` (see :func:`plain_loader_call`), or,
    with ``position``, a tuple whose element at that position is one
    (``train, val = build_loaders(cfg)``). The project file read is recorded as a
    dependency of the result."""
    func = call.func
    qualname = ctx.qualified_name(func)
    if qualname is None:
        if not isinstance(func, cst.Name):
            return False
        local = ctx.cached("training_objects_module_functions", lambda: {
            s.name.value: s for s in ctx.module.body if isinstance(s, cst.FunctionDef)})
        function = local.get(func.value)
        return function is not None and ctx.cached(
            ("training_objects_returns_loader", id(function), position),
            lambda: _returns_loader(ctx, function, position))  # type: ignore[arg-type]
    if ctx.project is None or qualname.startswith(("torch.", "builtins.")):
        return False
    found = ctx.project.module_file(qualname)
    if found is None:
        return False
    name, data, dependency = found
    returned = ctx.project.project.derived(
        "training_objects_loader_functions", dependency, lambda: _loader_functions(data))
    shape = returned.get(name)
    if shape is None:
        return False
    if position is None:
        return shape == (True,)
    return len(shape) > 1 and position < len(shape) and shape[position]


def _returns_loader(ctx: FileContext, function: cst.FunctionDef, position: int | None) -> bool:
    returns = [n.value for n in iter_scope(function.body) if isinstance(n, cst.Return)]
    if not returns:
        return False
    for value in returns:
        if position is not None:
            if not isinstance(value, cst.Tuple) or position >= len(value.elements):
                return False
            value = value.elements[position].value
        if plain_loader_call(ctx, value):
            continue
        values = assigned(ctx, value, function) if isinstance(value, cst.Name) else None
        if not values or not all(plain_loader_call(ctx, v) for v in values):
            return False
    return True


def _loader_functions(data: bytes) -> dict[str, tuple[bool, ...]]:
    """For each module-level function of a file whose returns all give ``DataLoader``s
    (or tuples of one length holding some): which returned positions are plain loaders
    (one position for a single value)."""
    if b"DataLoader" not in data:
        return {}
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    loaders = _loader_spellings(tree)
    found: dict[str, tuple[bool, ...]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            shape = _returned_shape(stmt, loaders)
            if shape is not None and any(shape):
                found[stmt.name] = shape
    return found


def _loader_spellings(tree: ast.Module) -> frozenset[str]:
    """How the file spells ``torch.utils.data.DataLoader`` through its module-level
    imports (``DataLoader``, ``data.DataLoader``, ``torch.utils.data.DataLoader``)."""
    spellings: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            for alias in stmt.names:
                qual = f"{stmt.module}.{alias.name}"
                bound = alias.asname or alias.name
                if qual in DATA_LOADERS:
                    spellings.add(bound)
                elif any(loader.startswith(qual + ".") for loader in DATA_LOADERS):
                    spellings |= {bound + loader[len(qual):] for loader in DATA_LOADERS
                                  if loader.startswith(qual + ".")}
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    if alias.asname:
                        spellings |= {alias.asname + loader[len(alias.name):]
                                      for loader in DATA_LOADERS
                                      if loader.startswith(alias.name + ".")}
                    else:
                        spellings |= DATA_LOADERS
    return frozenset(spellings)


def _returned_shape(function: ast.FunctionDef | ast.AsyncFunctionDef,
                    loaders: frozenset[str]) -> tuple[bool, ...] | None:
    assigned_loaders: dict[str, bool] = {}  # name -> every assignment is a plain loader
    returns: list[ast.expr | None] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return):
            returns.append(node.value)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    plain = _plain_loader(node.value, loaders)
                    assigned_loaders[target.id] = assigned_loaders.get(target.id, True) and plain
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
                               ast.AsyncWith)):
            bound = [i.optional_vars for i in node.items if i.optional_vars is not None] if (
                isinstance(node, (ast.With, ast.AsyncWith))) else [node.target]
            for target in (n for b in bound for n in ast.walk(b)):
                if isinstance(target, ast.Name):
                    assigned_loaders[target.id] = False
        stack.extend(ast.iter_child_nodes(node))
    if not returns:
        return None

    def plain(value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            return assigned_loaders.get(value.id, False)
        return _plain_loader(value, loaders)

    shapes = {tuple(plain(e) for e in value.elts) if isinstance(value, ast.Tuple) else (
        plain(value),) if value is not None else (False,) for value in returns}
    if len({len(shape) for shape in shapes}) != 1:
        return None
    return tuple(all(shape[i] for shape in shapes) for i in range(len(next(iter(shapes)))))


def _plain_loader(value: ast.expr, loaders: frozenset[str]) -> bool:
    if not isinstance(value, ast.Call):
        return False
    parts: list[str] = []
    func = value.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return False
    spelled = ".".join([func.id, *reversed(parts)])
    return spelled in loaders and not any(
        k.arg in MOVING_LOADER_ARGS for k in value.keywords)


def names_in(node: cst.CSTNode) -> Iterator[str]:
    """The texts of the names and attributes in an expression (``self.loader``, ``loader``)."""
    for child in iter_nodes(node):
        if isinstance(child, (cst.Name, cst.Attribute)):
            yield text(child)


def nested_loop_iterations(ctx: FileContext) -> list[tuple[cst.For, bool]]:
    """Every ``for`` loop of the file with whether it runs inside another loop of its
    function (an epoch loop around a batch loop)."""
    return ctx.cached("training_objects_for_loops", lambda: list(_for_loops(ctx.module)))


def _for_loops(module: cst.Module) -> Iterator[tuple[cst.For, bool]]:
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            inside = False
        if isinstance(node, cst.For):
            yield node, inside
        if isinstance(node, (cst.For, cst.While)):
            stack.extend((c, inside or c is node.body) for c in children_of(node))
        else:
            stack.extend((c, inside) for c in children_of(node))


def loop_functions(ctx: FileContext) -> dict[int, str]:
    """For each ``for`` loop of a function of the file (by ``id``), the function's name."""
    return ctx.cached("training_objects_loop_functions", lambda: {
        id(loop): definition.name.value for definition in ctx.definitions()
        if isinstance(definition, cst.FunctionDef)
        for loop in iter_scope(definition.body) if isinstance(loop, cst.For)})


def calls_in_loops(ctx: FileContext) -> list[cst.Call]:
    """The calls made inside a loop body (a function called once per epoch)."""
    return ctx.cached("training_objects_loop_calls", lambda: [
        call for loop in iter_nodes(ctx.module) if isinstance(loop, (cst.For, cst.While))
        for call in calls_in(loop.body)])


def functions_reached(ctx: FileContext, function: cst.FunctionDef) -> frozenset[str]:
    """The names of the functions and methods of the file that ``function`` may call,
    directly or through others of them, matched by name (``f(...)``, ``x.f(...)``): every
    def of that name counts."""
    def compute() -> frozenset[str]:
        defined: dict[str, list[cst.FunctionDef]] = {}
        for definition in ctx.definitions():
            if isinstance(definition, cst.FunctionDef):
                defined.setdefault(definition.name.value, []).append(definition)
        reached: set[str] = set()
        pending = [function]
        while pending:
            for call in calls_in(pending.pop().body):
                func = call.func
                name = func.value if isinstance(func, cst.Name) else (
                    func.attr.value if isinstance(func, cst.Attribute) else None)
                if name in defined and name not in reached:
                    reached.add(name)
                    pending += defined[name]
        return frozenset(reached)

    return ctx.cached(("training_objects_reached", id(function)), compute)


def enclosing_functions(ctx: FileContext) -> dict[int, cst.FunctionDef]:
    """For each node inside a function of the file (by ``id``), the innermost function
    holding it (module-level code is absent)."""
    return ctx.cached("training_objects_enclosing", lambda: {
        id(node): definition for definition in ctx.definitions()
        if isinstance(definition, cst.FunctionDef) for node in iter_scope(definition.body)})


def method_calls_named(ctx: FileContext, name: str) -> list[cst.Call]:
    """The ``X.<name>(...)`` calls of the file."""
    return ctx.cached(("training_objects_method_calls", name), lambda: [
        n for n in iter_nodes(ctx.module) if type(n) is cst.Call and isinstance(
            n.func, cst.Attribute) and n.func.attr.value == name])


# ------------------------------------------------------------------ datasets
RANDOM_GENERATORS = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.mtrand.RandomState", "random.Random",
})
_SAMPLE_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__"})


def class_methods(klass: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The methods a class body defines directly, by name."""
    body = klass.body.body if isinstance(klass.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def sample_methods(ctx: FileContext, klass: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods of a dataset class that run per sample: ``__getitem__``, ``__iter__``
    (and ``__getitems__``, ``__next__``), and the methods they call as ``self.m(...)``."""
    return ctx.cached(("training_objects_sample_methods", id(klass)),
                      lambda: _sample_methods(klass))


def _sample_methods(klass: cst.ClassDef) -> list[cst.FunctionDef]:
    methods = class_methods(klass)
    pending = [m for name, m in methods.items() if name in _SAMPLE_METHODS]
    seen: dict[int, cst.FunctionDef] = {}
    while pending:
        method = pending.pop()
        if id(method) in seen:
            continue
        seen[id(method)] = method
        for call in calls_in(method.body):
            name = self_attribute(call.func)
            if name is not None and name in methods and name != "__init__":
                pending.append(methods[name])
    return list(seen.values())


def drawn_receivers(method: cst.FunctionDef) -> set[str]:
    """The texts of the receivers a method calls methods on (``self.rng`` of
    ``self.rng.integers(...)``, ``rng`` of ``rng.random()``)."""
    return {text(call.func.value) for call in calls_in(method.body)
            if isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, (cst.Name, cst.Attribute))}


def assigned_outside(klass: cst.ClassDef, attribute: str, method: str) -> bool:
    """``self.<attribute>`` is assigned in a method of the class other than ``method``."""
    for name, function in class_methods(klass).items():
        if name == method:
            continue
        for node in iter_nodes(function.body):
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = [t.target for t in node.targets] if isinstance(
                    node, cst.Assign) else [node.target]
                if any(self_attribute(t) == attribute for t in targets):
                    return True
    return False


# ------------------------------------------------------------------ freezing
@dataclass(frozen=True)
class FreezeEvent:
    kind: str  # "freeze", "unfreeze", "grow" (something assigned into the module), "optimizer"
    model: str  # the module's text (for "optimizer": the text of M in M.parameters())
    node: cst.CSTNode


_GROWING_METHODS = frozenset({"add_module", "register_module", "register_parameter", "append",
                              "extend", "insert", "update", "__setattr__"})


def freeze_events(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> list[FreezeEvent]:
    """The freezing and unfreezing of modules, the layers assigned into them and the
    optimizers built over ``M.parameters()`` in a function's own body (or the module's
    code outside functions), in source order."""
    return ctx.cached(("training_objects_freeze_events", id(scope)),
                      lambda: list(_freeze_events(ctx, scope)))


def unfreezes_on_path(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> bool:
    """Gradients are turned back on (``p.requires_grad = True``, or a value that is not the
    literal False; ``m.requires_grad_()``/``(True)``/``(flag)``) where they may reach the
    optimizers ``scope`` builds: in ``scope`` itself, or in another function of the file
    (or its module-level code) that builds no optimizer over ``M.parameters()`` of its own:
    a training loop or a schedule that unfreezes what was frozen elsewhere. A sibling
    set-up function that freezes, unfreezes and builds its own optimizer does not count."""
    for other in _unfreezing_scopes(ctx):
        if other is scope or not any(
                e.kind == "optimizer" for e in freeze_events(ctx, other)):
            return True
    return False


def _unfreezing_scopes(ctx: FileContext) -> list[cst.FunctionDef | cst.Module]:
    def compute() -> list[cst.FunctionDef | cst.Module]:
        scopes: list[cst.FunctionDef | cst.Module] = [ctx.module]
        scopes += [d for d in ctx.definitions() if isinstance(d, cst.FunctionDef)]
        return [scope for scope in scopes if any(_unfreeze(n) for n in iter_scope(scope))]

    return ctx.cached("training_objects_unfreezing_scopes", compute)


def _unfreeze(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Assign):
        return any(isinstance(t.target, cst.Attribute) and t.target.attr.value ==
                   "requires_grad" for t in node.targets) and not _is_false(node.value)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value == "requires_grad_"):
        return not node.args or not _is_false(node.args[0].value)
    return False


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _parameters_of(node: cst.BaseExpression | None) -> str | None:
    """``M`` for ``M.parameters()`` / ``M.named_parameters()`` (no arguments)."""
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value in ("parameters", "named_parameters")):
        return text(node.func.value)
    return None


def _frozen_by_loop(loop: cst.For) -> tuple[str, cst.CSTNode] | None:
    """``M`` for ``for p in M.parameters(): p.requires_grad = False`` (the assignment a
    statement of the loop's own body, not under a condition), and the freezing statement."""
    model = _parameters_of(loop.iter)
    if model is None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    names = {text(t) for t in _targets(loop.target) if isinstance(t, cst.Name)}
    for stmt in loop.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                call = small.value if isinstance(small, cst.Expr) else None
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and (
                        call.func.attr.value == "requires_grad_") and call.args and _is_false(
                        call.args[0].value) and text(call.func.value) in names:
                    return model, small
                if isinstance(small, cst.Assign) and _is_false(small.value) and any(
                        isinstance(t.target, cst.Attribute) and t.target.attr.value ==
                        "requires_grad" and text(t.target.value) in names
                        for t in small.targets):
                    return model, small
    return None


def _freeze_events(ctx: FileContext, scope: cst.FunctionDef | cst.Module
                   ) -> Iterator[FreezeEvent]:
    for node in iter_scope(scope.body if isinstance(scope, cst.FunctionDef) else scope):
        if isinstance(node, cst.For):
            frozen = _frozen_by_loop(node)
            if frozen is not None:  # located at the freezing statement in the loop
                yield FreezeEvent("freeze", *frozen)
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [
                node.target]
            for target in targets:
                for element in _targets(target):
                    yield FreezeEvent("grow", text(element), node)
        elif isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
                kind = "freeze" if node.args and _is_false(node.args[0].value) else "unfreeze"
                yield FreezeEvent(kind, text(func.value), node)
            elif isinstance(func, cst.Attribute) and func.attr.value in _GROWING_METHODS:
                yield FreezeEvent("grow", text(func.value) + ".", node)
            elif isinstance(func, cst.Name) and func.value == "setattr" and node.args:
                yield FreezeEvent("grow", text(node.args[0].value) + ".", node)
            elif is_optimizer_class(ctx.qualified_name(func)):
                model = _parameters_of(call_argument(node, "params", 0))
                if model is not None:
                    yield FreezeEvent("optimizer", model, node)


# ------------------------------------------------------------------ devices
@dataclass(frozen=True)
class ModelMove:
    model: str  # the model's text
    device: cst.BaseExpression  # the device it was moved to
    node: cst.Call  # the .to(...) / .cuda(...) call


_TO_DEVICE = ("to", "cuda")


def model_moves(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> list[ModelMove]:
    """The models moved to a device in a function's own body (or the module's code outside
    functions): ``M.to(dev)``, ``M.cuda()``, ``M = Net().to(dev)``, ``M = M.cuda(0)``,
    ``M = DistributedDataParallel(Net().to(dev))``, in source order. A ``.to(dtype)`` is not a move."""
    return ctx.cached(("training_objects_model_moves", id(scope)),
                      lambda: list(_model_moves(ctx, scope)))


def _device_of(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _TO_DEVICE:
        return None
    if func.attr.value == "cuda":
        return call.args[0].value if call.args else cst.SimpleString('"cuda"')
    device = call_argument(call, "device", 0)
    if device is None or is_dtype(ctx, device):
        return None
    return device


def _model_moves(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> Iterator[ModelMove]:
    for node in iter_scope(scope.body if isinstance(scope, cst.FunctionDef) else scope):
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            device = _device_of(ctx, node.value)
            if device is not None and isinstance(node.value.func, cst.Attribute):
                receiver = node.value.func.value
                if isinstance(receiver, (cst.Name, cst.Attribute)):
                    yield ModelMove(text(receiver), device, node.value)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(
                node.value, cst.Call) and isinstance(node.targets[0].target,
                                                     (cst.Name, cst.Attribute)):
            value = node.value
            device = _device_of(ctx, value)
            if device is None and value.args and isinstance(value.args[0].value, cst.Call):
                # a wrapper around the moved model: DistributedDataParallel(net.to(dev))
                value = value.args[0].value
                device = _device_of(ctx, value)
            receiver = value.func.value if isinstance(value.func, cst.Attribute) else None
            if device is not None and isinstance(receiver, (cst.Call, cst.Name, cst.Attribute)):
                yield ModelMove(text(node.targets[0].target), device, value)


def provably_cpu(ctx: FileContext, device: cst.BaseExpression,
                 scope: cst.FunctionDef | cst.Module) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name bound only to one of those."""
    value = string_value(device)
    if value is not None:
        return value.split(":")[0] == "cpu"
    if isinstance(device, cst.Call) and ctx.qualified_name(device.func) == "torch.device":
        first = call_argument(device, "type", 0)
        return first is not None and provably_cpu(ctx, first, scope)
    if isinstance(device, cst.Name):
        function = scope if isinstance(scope, cst.FunctionDef) else None
        values = assigned(ctx, device, function)
        return bool(values) and all(provably_cpu(ctx, v, scope) for v in values or ())
    return False


def source_order(ctx: FileContext, scope: cst.FunctionDef | cst.Module) -> dict[int, int]:
    """The position of each node of a scope's own code in source order (by ``id``)."""
    return ctx.cached(("training_objects_order", id(scope)), lambda: {
        id(n): i for i, n in enumerate(iter_scope(scope))})


# ------------------------------------------------------------------ compiled code
COMPILE = frozenset({"torch.compile"})


def compiled_functions(ctx: FileContext) -> frozenset[int]:
    """The ids of the functions ``torch.compile`` traces: those decorated with
    ``@torch.compile`` (with or without arguments, any alias), and the ``forward`` of each
    module class of the file whose instance the file passes to ``torch.compile``."""
    return ctx.cached("training_objects_compiled", lambda: frozenset(_compiled(ctx)))


def _compiled(ctx: FileContext) -> Iterator[int]:
    for definition in ctx.definitions():
        if isinstance(definition, cst.FunctionDef) and any(
                ctx.qualified_name(d.decorator.func if isinstance(d.decorator, cst.Call)
                                   else d.decorator) in COMPILE
                for d in definition.decorators):
            yield id(definition)
    models = [model for node in iter_nodes(ctx.module) if type(node) is cst.Call and (
        ctx.qualified_name(node.func) in COMPILE) and (  # type: ignore[attr-defined]
        model := call_argument(node, "model", 0)) is not None]  # type: ignore[arg-type]
    if not models:
        return  # nothing passed to torch.compile: no class, no assignment to look at
    classes = {d.name.value: d for d in ctx.definitions()
               if isinstance(d, cst.ClassDef) and ctx.is_module_class(d)}
    for model in models:
        values = [model] if isinstance(model, cst.Call) else [
            e.value for e in _assignments(ctx).get(text(model), []) if e.value is not None]
        for value in values:
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and (
                    value.func.value in classes):
                forward = class_methods(classes[value.func.value]).get("forward")
                if forward is not None:
                    yield id(forward)


# ------------------------------------------------------------------ attribute reads
_ATTRIBUTE_READ = re.compile(r"\.\s*([A-Za-z_]\w*)|['\"]([A-Za-z_]\w*)['\"]")
_MAX_PROJECT_FILES = 5000
# per file of a project: (mtime, size) and the names it reads
_PROJECT_READS: dict[str, tuple[tuple[int, int], str, Any]] = {}
_SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "build", "dist", "site-packages"})
# what reaches a module's attributes other than by name (``self.children()``)
CHILD_ITERATION = frozenset({"modules", "children", "named_modules", "named_children",
                              "named_parameters", "parameters", "_modules", "__dict__",
                              "state_dict", "apply"})


def layer_attributes(ctx: FileContext, klass: cst.ClassDef) -> list[tuple[str, cst.Assign]]:
    """The layers a module class's ``__init__`` assigns as ``self.X = <layer>``."""
    init = class_methods(klass).get("__init__")
    if init is None:
        return []
    found = []
    for node in iter_scope(init.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and is_layer_call(
                ctx, node.value):
            name = self_attribute(node.targets[0].target)
            if name is not None:
                found.append((name, node))
    return found


def read_elsewhere_in_project(ctx: FileContext, name: str) -> bool:
    """Some other file of the project (under the file's package root) reads ``.name`` or
    spells ``"name"``; True when the project is too large to scan."""
    if ctx.project is None or not ctx.project.roots:
        return False
    files = ctx.cached("training_objects_project_files", lambda: _project_files(ctx))
    if files is None:
        return True
    for path in files:
        read = _names_read(path)
        if read is None:
            continue
        # a cached result must be redone when a file it looked at changes
        ctx.project.dependencies[path] = Dependency(path, read[0])
        if name in read[1]:
            return True
    return False


def _project_files(ctx: FileContext) -> list[str] | None:
    """The other Python files under the file's package root (None: too many to read)."""
    assert ctx.project is not None
    here = os.path.abspath(ctx.path)
    files: list[str] = []
    folders: list[str] = []
    for folder, dirs, names in os.walk(ctx.project.roots[0]):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS]
        folders.append(folder)
        for file_name in names:
            if file_name.endswith(".py"):
                path = os.path.abspath(os.path.join(folder, file_name))
                if path != here:
                    files.append(path)
        if len(files) > _MAX_PROJECT_FILES:
            return None
    for folder in folders:
        # a file added to (or removed from) a folder changes the folder's time: a cached
        # answer that scanned the project must be redone, as the new file may read the
        # attribute or load the dataset (a folder has no content: its digest is empty)
        ctx.project.dependencies[folder] = Dependency(folder, "")
    return files


_T = TypeVar("_T")


def _file_fact(path: str, memo: dict[str, tuple[tuple[int, int], str, Any]],
               compute: Callable[[bytes], _T]) -> tuple[str, _T] | None:
    """A fact of a project file computed from its bytes with its digest, kept in ``memo``
    by the file's modification time and size (None: unreadable)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = memo.get(path)
    if known is not None and known[0] == stamp:
        return known[1], known[2]
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fact = compute(data)
    digest = file_digest(data)
    memo[path] = (stamp, digest, fact)
    return digest, fact


def _names_read(path: str) -> tuple[str, frozenset[str]] | None:
    """The digest of a file and the attribute names and identifier strings it spells."""
    return _file_fact(path, _PROJECT_READS, lambda data: frozenset(
        a or b for a, b in _ATTRIBUTE_READ.findall(data.decode("utf-8", errors="replace"))))


# ------------------------------------------------------------------ loaders elsewhere
_LOADER_CALLS: dict[str, tuple[tuple[int, int], str, Any]] = {}


def project_loader_workers(ctx: FileContext, dataset: str, objects: bool = True
                           ) -> str | None:
    """How the other files of the project that name ``dataset`` (a class name) load data:
    ``"workers"`` when one of their ``DataLoader(...)`` calls may use worker processes
    (``num_workers`` not 0) and none reseeds them, ``"main"`` when every such call loads in
    the main process, ``"reseeded"`` when one passes a ``worker_init_fn`` (for generator
    ``objects``, one that reaches the dataset: see :func:`loader_verdict`); None when the
    project has no such file (or is too large to read). The loaders built over the dataset
    itself (``DataLoader(MyDataset(...))``, or a name assigned one) decide when there are
    any; else every loader of those files."""
    if ctx.project is None or not ctx.project.roots:
        return None
    files = ctx.cached("training_objects_project_files", lambda: _project_files(ctx))
    kinds: set[str] = set()
    own: set[str] = set()
    for path in files or ():
        known = _loader_calls(path)
        if known is None or dataset not in known[1][0]:
            continue
        ctx.project.dependencies[path] = Dependency(path, known[0])
        for kind, datasets in known[1][1]:
            kinds.add(kind)
            if dataset in datasets:
                own.add(kind)
    return loader_verdict(own or kinds, objects)


def loader_verdict(kinds: set[str], objects: bool = True) -> str | None:
    """One answer for several loaders' kinds: "reseeded" wins, then "workers". A loader
    whose ``worker_init_fn`` only reseeds the global generators ("globals": a function
    that never reaches the dataset) reseeds no generator object the dataset holds: with
    ``objects`` it counts as "workers", else as "reseeded"."""
    if "reseeded" in kinds or not objects and "globals" in kinds:
        return "reseeded"
    if "workers" in kinds or "globals" in kinds:
        return "workers"
    return "main" if kinds else None


# what a worker_init_fn that reseeds the dataset's own generators reaches
WORKER_DATASET_WORDS = frozenset({"dataset", "get_worker_info"})


def reseeding_kind(ctx: FileContext, init: cst.BaseExpression) -> str:
    """"globals" when a ``worker_init_fn`` is a lambda or a function of the file that never
    reaches the worker's dataset (``get_worker_info()``, ``.dataset``): it can only reseed
    the global generators; else "reseeded" (unknown functions included)."""
    body: cst.CSTNode | None = init.body if isinstance(init, cst.Lambda) else None
    if isinstance(init, cst.Name):
        body = next((d for d in ctx.definitions() if isinstance(d, cst.FunctionDef)
                     and d.name.value == init.value), None)
    if body is None:
        return "reseeded"
    reaches = any(isinstance(n, cst.Name) and n.value in WORKER_DATASET_WORDS
                  for n in iter_nodes(body))
    return "reseeded" if reaches else "globals"


def loader_datasets(ctx: FileContext, site: LoaderSite) -> frozenset[str]:
    """The names of the classes or functions that build the dataset a ``DataLoader``
    walks: ``MyDataset`` for ``DataLoader(MyDataset(...))`` or for a name of the same
    function (or module) assigned ``MyDataset(...)``."""
    value = call_argument(site.call, "dataset", 0)
    function = site.scope if isinstance(site.scope, cst.FunctionDef) else None
    values = [value] if isinstance(value, cst.Call) else (
        assigned(ctx, value, function) or [] if isinstance(value, cst.Name) else [])
    return frozenset(name for v in values if isinstance(v, cst.Call) and (
        name := _last_name(v.func)) is not None)


def _last_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Name):
        return func.value
    return func.attr.value if isinstance(func, cst.Attribute) else None


def _loader_calls(path: str) -> tuple[str, tuple[frozenset[str], tuple[tuple[
        str, frozenset[str]], ...]]] | None:
    """A file's digest, the names it calls (``MyDataset(...)``), and for each of its
    ``DataLoader(...)`` calls: "workers", "main" or "reseeded", with the names that build
    its dataset (see :func:`loader_datasets`)."""
    return _file_fact(path, _LOADER_CALLS, _loader_facts)


def _loader_facts(data: bytes) -> tuple[frozenset[str], tuple[tuple[str, frozenset[str]], ...]]:
    if b"DataLoader" not in data:
        return frozenset(), ()  # no loader: nothing to parse
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(), ()
    loaders: list[ast.Call] = []
    called: set[str] = set()
    built: dict[str, set[str]] = {}  # name -> the callees assigned to it, anywhere
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = _ast_last_name(node.value.func)
            for target in node.targets:
                if isinstance(target, ast.Name) and callee:
                    built.setdefault(target.id, set()).add(callee)
        if not isinstance(node, ast.Call):
            continue
        name = _ast_last_name(node.func)
        if name:
            called.add(name)
        if name == "DataLoader":
            loaders.append(node)
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    found: list[tuple[str, frozenset[str]]] = []
    for node in loaders:
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        workers = keywords.get("num_workers", node.args[5] if len(node.args) > 5 else None)
        init = keywords.get("worker_init_fn")
        if workers is None or isinstance(workers, ast.Constant) and workers.value == 0:
            kind = "main"
        elif init is None:
            kind = "workers"
        else:
            kind = _ast_reseeding_kind(init, functions)
        first = keywords.get("dataset", node.args[0] if node.args else None)
        datasets: set[str] = set()
        if isinstance(first, ast.Call):
            datasets.add(_ast_last_name(first.func) or "")
        elif isinstance(first, ast.Name):
            datasets |= built.get(first.id, set())
        found.append((kind, frozenset(datasets - {""})))
    return frozenset(called), tuple(found)


def _ast_reseeding_kind(init: ast.expr, functions: dict[str, ast.FunctionDef]) -> str:
    """:func:`reseeding_kind` for a file read with ``ast``."""
    body: ast.AST | None = init.body if isinstance(init, ast.Lambda) else (
        functions.get(init.id) if isinstance(init, ast.Name) else None)
    if body is None:
        return "reseeded"
    return "reseeded" if any(
        isinstance(n, ast.Name) and n.id in WORKER_DATASET_WORDS or isinstance(
            n, ast.Attribute) and n.attr in WORKER_DATASET_WORDS
        for n in ast.walk(body)) else "globals"


def _ast_last_name(func: ast.expr) -> str | None:
    return getattr(func, "id", None) or getattr(func, "attr", None)
