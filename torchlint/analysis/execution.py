"""How often code runs, and whether it trains: facts a rule uses to tell the code where a
finding does harm (a training step, a model's forward, a per-request pipeline call) from
one-off setup, where the same pattern costs nothing.

Computed once per file (``FileContext.cached``):

* **training code**: a function that back-propagates (``loss.backward()``,
  ``self.manual_backward(loss)``, ``torch.autograd.backward``) or steps an optimizer
  (``optimizer.step()``, ``scaler.step(optimizer)``), directly or through another function
  of the file it calls; a module-level loop that does. The file *trains* when any of its
  code does.
* **repeated code**: the bodies of loops and comprehensions (not those of a constructor or
  initialiser that runs once: a loop over layers or buffers builds them once); methods of
  module classes
  (not their constructors and initialisers); functions that run once per batch, sample or
  request by their role (``forward``, ``__call__``, ``__getitem__``, ``encode_*``,
  ``decode*``, collate functions, ``*_step`` and ``*_batch`` functions); and every
  function of the file called from any of those (as ``f(...)``, ``self.f(...)``,
  ``cls.f(...)``, or ``model.f(...)`` where the global ``model`` is an instance of a class
  of the file that defines ``f``), or from a loop: ``init_hidden`` called by ``train()``,
  itself called once per batch, runs once per batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere, global_value
from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    iter_scope,
    last_name_part,
    node_types,
    parameters,
    semantic_children,
)
from torchlint.analysis.spelling import is_optimizer_word
from torchlint.analysis.torch_facts import is_backward_call

_LOOPS = node_types(cst.For, cst.While)
_COMPREHENSIONS = node_types(cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# names (leading underscores aside) of functions that run once per batch, sample or request
_PER_CALL_NAMES = frozenset({"__call__", "__getitem__", "__getitems__", "__iter__",
                             "__next__", "forward", "step"})
_PER_CALL_PREFIXES = ("forward_", "encode", "decode", "collate")
_PER_CALL_WORDS = frozenset({"step", "batch", "collate"})
# methods that build an object once: its constructor, initialisers, loaders
_SETUP_NAMES = frozenset({"__init__", "__new__", "__post_init__", "__setstate__",
                          "__init_subclass__", "reset_parameters", "from_pretrained",
                          "from_config"})
_SETUP_PREFIXES = ("init", "build", "setup", "load", "register", "create", "allocate")


# ------------------------------------------------------------------ the calls
def is_optimizer_name(node: cst.BaseExpression) -> bool:
    """``optimizer``, ``self.opt``, ``optimizers[i]``, ``optimizerD``, ``opt_g``..."""
    while isinstance(node, cst.Subscript):
        node = node.value
    name = last_name_part(node)
    return name is not None and is_optimizer_word(name)


def is_optimizer_step(node: cst.CSTNode) -> bool:
    """``optimizer.step()`` or ``scaler.step(optimizer)``."""
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute or (  # type: ignore[attr-defined]
            node.func.attr.value != "step"):  # type: ignore[attr-defined]
        return False
    receiver = node.func.value  # type: ignore[attr-defined]
    if is_optimizer_name(receiver):
        return True
    name = last_name_part(receiver)
    args = node.args  # type: ignore[attr-defined]
    return name is not None and "scaler" in name.lower() and bool(args) and (
        is_optimizer_name(args[0].value))


def is_training_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call that back-propagates or steps an optimizer."""
    return is_backward_call(ctx, node) or is_optimizer_step(node)


def _callee(node: cst.Call) -> str | None:
    """``f`` for ``f(...)``, ``self.f(...)`` and ``cls.f(...)``."""
    func = node.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name and (  # type: ignore[attr-defined]
            func.value.value in ("self", "cls")):  # type: ignore[attr-defined]
        func = func.attr  # type: ignore[attr-defined]
    return func.value if type(func) is cst.Name else None  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the facts
@dataclass(frozen=True)
class ExecutionFacts:
    trains: bool  # some code of the file back-propagates or steps an optimizer
    training_functions: frozenset[str]  # names of the functions that do, maybe through others
    repeated: frozenset[int]  # ids of the FunctionDef nodes that run repeatedly


@dataclass
class _Function:
    node: cst.FunctionDef
    calls: set[str]  # callees of its own body
    calls_in_loops: set[str]  # callees inside a loop or comprehension of its own body
    trains: bool  # back-propagates or steps an optimizer itself


def execution_facts(ctx: FileContext) -> ExecutionFacts:
    return ctx.cached("execution_facts", lambda: _compute(ctx))


def _compute(ctx: FileContext) -> ExecutionFacts:
    functions: list[_Function] = []
    by_name: dict[str, list[_Function]] = {}
    for node in ctx.definitions():
        if isinstance(node, cst.FunctionDef):
            calls, in_loops, trains = _scan_body(ctx, node.body, node)
            info = _Function(node, calls, in_loops, trains)
            functions.append(info)
            by_name.setdefault(node.name.value, []).append(info)
    _, module_loop_calls, module_trains = _scan_body(ctx, ctx.module)

    training = {f.node.name.value for f in functions if f.trains}
    changed = True
    while changed:
        changed = False
        for f in functions:
            name = f.node.name.value
            if name not in training and f.calls & training:
                training.add(name)
                changed = True
    trains = module_trains or bool(training)

    setup_only = _called_only_from_setup(functions)
    repeated: set[int] = set()
    pending: list[_Function] = []

    def mark(info: _Function) -> None:
        if id(info.node) not in repeated:
            repeated.add(id(info.node))
            pending.append(info)

    for f in functions:
        if _runs_per_call(ctx, f.node) and f.node.name.value not in setup_only:
            mark(f)
    for name in module_loop_calls.union(*(f.calls_in_loops for f in functions)):
        for f in by_name.get(name, ()):
            mark(f)
    while pending:
        for name in pending.pop().calls:
            for f in by_name.get(name, ()):
                mark(f)
    return ExecutionFacts(trains, frozenset(training), frozenset(repeated))


def _scan_body(ctx: FileContext, root: cst.CSTNode, function: cst.FunctionDef | None = None
               ) -> tuple[set[str], set[str], bool]:
    """The callees of one scope (``function``'s body, or the module; nested functions and
    classes aside), those called inside a loop or comprehension, and whether it
    back-propagates or steps an optimizer."""
    calls: set[str] = set()
    in_loops: set[str] = set()
    trains = False
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, looping = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            if node is not root:
                continue
        if kind is cst.Call:
            name = _callee(node) or _global_instance_method(ctx, function, node)  # type: ignore[arg-type]
            if name is not None:
                calls.add(name)
                if looping:
                    in_loops.add(name)
            trains = trains or is_training_call(ctx, node)
        if kind in _LOOPS:
            stack.extend((child, looping or child is node.body)  # type: ignore[attr-defined]
                         for child in semantic_children(node))
        elif kind in _COMPREHENSIONS:
            stack.extend((child, True) for child in semantic_children(node))
        else:
            stack.extend((child, looping) for child in semantic_children(node))
    return calls, in_loops, trains


def _global_instance_method(ctx: FileContext, function: cst.FunctionDef | None,
                            node: cst.Call) -> str | None:
    """``f`` for ``model.f(...)`` where ``model`` is a global (not rebound in ``function``)
    bound once to an instance of a class of the file, and that class defines ``f``."""
    func = node.func
    if type(func) is not cst.Attribute or type(func.value) is not cst.Name:  # type: ignore[attr-defined]
        return None
    receiver = func.value.value  # type: ignore[attr-defined]
    # the module-level binding first: it is looked up once a name, and most receivers are
    # no global instance, so the function body is rarely searched
    found = global_value(ctx, receiver)
    if found is None or type(found[1]) is not cst.Call or (
            type(found[1].func) is not cst.Name):  # type: ignore[attr-defined]
        return None
    if function is not None and (any(p.name.value == receiver for p in parameters(function))
                                 or binds_anywhere(function.body, receiver)):
        return None
    method = func.attr.value  # type: ignore[attr-defined]
    methods = ctx.cached("execution_class_methods", lambda: _class_methods(ctx))
    return method if method in methods.get(found[1].func.value, ()) else None  # type: ignore[attr-defined]


def _class_methods(ctx: FileContext) -> dict[str, frozenset[str]]:
    """The names of the methods each top-level class of the file defines."""
    return {stmt.name.value: frozenset(s.name.value for s in _class_statements(stmt.body)
                                       if isinstance(s, cst.FunctionDef))
            for stmt in ctx.module.body if isinstance(stmt, cst.ClassDef)}


def _is_setup_name(name: str) -> bool:
    return name in _SETUP_NAMES or name.lstrip("_").startswith(_SETUP_PREFIXES)


def _called_only_from_setup(functions: list[_Function]) -> set[str]:
    """Names called from constructors and initialisers only (``self._build_layers()``)."""
    callers: dict[str, set[bool]] = {}
    for f in functions:
        setup = _is_setup_name(f.node.name.value)
        for name in f.calls:
            callers.setdefault(name, set()).add(setup)
    return {name for name, kinds in callers.items() if kinds == {True}}


def _runs_per_call(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """A function that runs once per batch, sample or request by its role, or a method of
    a module class other than its constructor and initialisers."""
    name = function.name.value
    if _is_setup_name(name):
        return False
    bare = name.lstrip("_")
    if name in _PER_CALL_NAMES or bare in _PER_CALL_NAMES or bare.startswith(
            _PER_CALL_PREFIXES) or _PER_CALL_WORDS.intersection(bare.lower().split("_")):
        return True
    cls = _class_of(ctx, function)
    return cls is not None and ctx.is_module_class(cls)


def _class_of(ctx: FileContext, function: cst.FunctionDef) -> cst.ClassDef | None:
    """The class whose body directly holds ``function``, found from the file's definitions."""
    owners = ctx.cached("execution_method_owners", lambda: _method_owners(ctx))
    return owners.get(id(function))


def _method_owners(ctx: FileContext) -> dict[int, cst.ClassDef]:
    owners: dict[int, cst.ClassDef] = {}
    for node in ctx.definitions():
        if isinstance(node, cst.ClassDef):
            for stmt in _class_statements(node.body):
                if isinstance(stmt, cst.FunctionDef):
                    owners[id(stmt)] = node
    return owners


def _class_statements(suite: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The statements of a class body, through ``if`` blocks (``if TYPE_CHECKING:``)."""
    for stmt in getattr(suite, "body", ()):
        if isinstance(stmt, cst.If):
            yield from _class_statements(stmt.body)
            if isinstance(stmt.orelse, cst.Else):
                yield from _class_statements(stmt.orelse.body)
        else:
            yield stmt


# -------------------------------------------------------- questions of a node
def file_trains(ctx: FileContext) -> bool:
    """Some code of the file back-propagates or steps an optimizer."""
    return execution_facts(ctx).trains


def training_functions(ctx: FileContext) -> frozenset[str]:
    """Names of the file's functions that back-propagate or step an optimizer, directly or
    through another function of the file."""
    return execution_facts(ctx).training_functions


def function_runs_repeatedly(ctx: FileContext, function: cst.FunctionDef) -> bool:
    return id(function) in execution_facts(ctx).repeated


def runs_repeatedly(ctx: FileContext, node: cst.CSTNode | None = None) -> bool:
    """Does ``node`` (default: the node being visited; it must be on the walk stack) run
    repeatedly: inside a loop body or a comprehension, or in a function that runs
    repeatedly (see the module's docstring)?"""
    ancestors = ctx.ancestors
    index = len(ancestors) - 1 if node is None else ctx.index_of(node)
    in_loop = False
    for i in range(index - 1, -1, -1):
        anc = ancestors[i]
        kind = type(anc)
        if kind in _LOOPS and ancestors[i + 1] is anc.body or (  # type: ignore[attr-defined]
                kind in _COMPREHENSIONS):
            in_loop = True
        elif isinstance(anc, cst.FunctionDef):
            if function_runs_repeatedly(ctx, anc):
                return True
            # a constructor's or initialiser's loop (over layers, tokenizers, buffers)
            # builds its objects once
            return in_loop and not _is_setup_name(anc.name.value)
        elif isinstance(anc, cst.ClassDef):
            return in_loop
    return in_loop


def in_training_code(ctx: FileContext, node: cst.CSTNode | None = None) -> bool:
    """Is ``node`` (default: the node being visited) in training code: a function that
    back-propagates or steps an optimizer (maybe through others), or a module-level loop
    that does?"""
    ancestors = ctx.ancestors
    index = len(ancestors) - 1 if node is None else ctx.index_of(node)
    for i in range(index - 1, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, cst.FunctionDef):
            return anc.name.value in training_functions(ctx)
        if isinstance(anc, cst.ClassDef):
            return False
        if type(anc) in _LOOPS and ctx.cached(("execution_loop_trains", id(anc)),
                                                  lambda anc=anc: _loop_trains(ctx, anc)):
            return True
    return False


def _loop_trains(ctx: FileContext, loop: cst.For | cst.While) -> bool:
    """The loop's body back-propagates or steps an optimizer, or calls a function of the
    file that does (``for epoch in range(n): train(model, loader)``)."""
    training = training_functions(ctx)
    return any(is_training_call(ctx, n) or (type(n) is cst.Call and _callee(n) in training)
               for n in iter_scope(loop.body))
