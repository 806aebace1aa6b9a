"""The screen's ``ast`` checks of the module-definition rules (TL101-TL108): each is true on
every file its rule can flag, and follows the rule's own decision closely enough that most
files naming the rule's words never reach libcst for it.

A check starts from the rare nodes of the file (:meth:`FileFacts.nodes`), finds what holds
them by their positions (a node starts inside the span of every node that holds it), and
errs only towards true: a name the project may know (imported from another module) may be
a module class, and a local name may hold anything the rule would accept.

Imports neither libcst nor a rule (the screen runs before either is loaded).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from functools import lru_cache

from torchlint.analysis.options import Options
from torchlint.analysis.spelling import model_names_pattern
from torchlint.engine.triage import FileFacts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
             *((ast.Match,) if hasattr(ast, "Match") else ()))


# ------------------------------------------------------------------ positions
def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


class _Located:
    """Nodes sorted by where they start: those inside a span, by bisection."""

    def __init__(self, nodes: Iterable[ast.AST]) -> None:
        self.nodes = sorted(nodes, key=_start)
        self.starts = [_start(n) for n in self.nodes]

    def within(self, outer: ast.AST) -> list[ast.AST]:
        """The nodes that start inside ``outer`` (so lie inside it: spans nest)."""
        low = bisect_left(self.starts, _start(outer))
        high = bisect_right(self.starts, _end(outer))
        return self.nodes[low:high]

    def __bool__(self) -> bool:
        return bool(self.nodes)


# ------------------------------------------------------------------ names
def _last_name(node: ast.AST) -> str | None:
    kind = type(node)
    if kind is ast.Name:
        return node.id  # type: ignore[attr-defined,no-any-return]
    if kind is ast.Attribute:
        return node.attr  # type: ignore[attr-defined,no-any-return]
    return None


def _is_layer_name(qual: str) -> bool:
    """A ``torch.nn`` class (``torch.nn.Linear``, ``torch.nn.parallel.X``): a superset of
    the analysis's layers (it also leaves out a few classes that are no layers)."""
    for prefix in ("torch.nn.", "torch.nn.parallel."):
        if qual.startswith(prefix):
            leaf = qual[len(prefix):]
            if "." not in leaf and leaf[:1].isupper():
                return True
    return False


def _project_class(qual: str) -> bool:
    """A class another module of the project (or a package) defines: the project
    knowledge may find it derives from a module class."""
    return "." in qual and not qual.startswith(("torch.", "builtins.")) and (
        qual.rsplit(".", 1)[1][:1].isupper())


def _self_attribute(node: ast.AST) -> str | None:
    """``X`` for ``self.X``."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name and (  # type: ignore[attr-defined]
            node.value.id == "self"):  # type: ignore[attr-defined]
        return node.attr  # type: ignore[attr-defined,no-any-return]
    return None


def _single_target(node: ast.AST) -> ast.expr | None:
    if type(node) is ast.Assign:
        return node.targets[0] if len(node.targets) == 1 else None  # type: ignore[attr-defined]
    if type(node) is ast.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
        return node.target  # type: ignore[attr-defined,no-any-return]
    return None


# ------------------------------------------------------------------ the file
class _File:
    """What several checks ask of one file, computed once (see :func:`_file`)."""

    def __init__(self, facts: FileFacts, options: Options) -> None:
        self.facts = facts
        self.options = options
        self.module_classes = _module_classes(facts, options)
        self._methods: list[ast.AST] | None = None
        self._layer_calls: _Located | None = None

    @property
    def methods(self) -> list[ast.AST]:
        """The methods of the classes that may be module classes (a def whose nearest
        enclosing def or class is such a class)."""
        if self._methods is None:
            self._methods = [m for cls in self.facts.nodes(ast.ClassDef)
                             if cls.name in self.module_classes  # type: ignore[attr-defined]
                             for m in _defs_of(cls.body)]  # type: ignore[attr-defined]
        return self._methods

    @property
    def layer_calls(self) -> _Located:
        """Calls that may build a layer: a ``torch.nn`` class, a class of the project, or a
        module class of this file (the analysis's ``is_layer_call``)."""
        if self._layer_calls is None:
            self._layer_calls = _Located(c for c in self.facts.nodes(ast.Call)
                                         if self.builds_layer(c))
        return self._layer_calls

    def builds_layer(self, node: ast.AST) -> bool:
        if type(node) is not ast.Call:
            return False
        func = node.func  # type: ignore[attr-defined]
        word = _last_name(func)
        if word is None:
            return False
        if type(func) is ast.Name and word in self.module_classes:
            return True
        if not word[:1].isupper():  # torch.nn's and the project's classes are capitalised
            return False
        return any(_is_layer_name(q) or _project_class(q)
                   for q in self.facts.qualnames_of(func))


def _defs_of(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The defs of a class body, also those under its if/try/with/for blocks."""
    for stmt in body:
        kind = type(stmt)
        if kind in _FUNCTIONS:
            yield stmt
        elif kind in _COMPOUND:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                for inner in getattr(stmt, name, ()) or ():
                    if type(inner) in _FUNCTIONS:
                        yield inner
                    else:
                        yield from _defs_of(getattr(inner, "body", None) or [inner])


def _module_classes(facts: FileFacts, options: Options) -> frozenset[str]:
    """The classes of the file that may be torch modules: those of the facts, and those
    deriving (maybe through classes of the file) from a ``torch.nn`` layer."""
    found = set(facts.module_classes(options))
    bases: dict[str, set[str]] = {}
    for cls, candidates in facts.class_bases:
        bases.setdefault(cls, set()).update(candidates)
    changed = True
    while changed:
        changed = False
        for cls, candidates in bases.items():
            if cls not in found and any(q in found or _is_layer_name(q) for q in candidates):
                found.add(cls)
                changed = True
    return frozenset(found)


_memo: list[object] = [None, None, None]


def _file(facts: FileFacts, options: Options) -> _File:
    if _memo[0] is not facts.tree or _memo[1] is not options:
        _memo[:] = [facts.tree, options, _File(facts, options)]
    return _memo[2]  # type: ignore[return-value]


# ------------------------------------------------------------------ TL101, TL102
_GROWTH = frozenset({"append", "insert", "extend", "update"})
# values nn.ModuleList/ModuleDict would refuse (containers.is_clearly_not_module)
_NOT_MODULES = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set,
                ast.ListComp, ast.DictComp, ast.SetComp, ast.BinOp, ast.Compare, ast.UnaryOp,
                ast.BoolOp)


class _Containers:
    """Per file: the ``self.X = ...``/``name = ...`` assignments and the growing calls
    (``x.append``, ``x.update``...) the container rules read, sorted by position."""

    def __init__(self, facts: FileFacts) -> None:
        stores: list[ast.AST] = []
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            target = _single_target(node)
            if target is not None and type(target) in (ast.Name, ast.Attribute, ast.Subscript):
                stores.append(node)
        self.stores = _Located(stores)
        self.growth = _Located(
            c for c in facts.nodes(ast.Call) if type(c.func) is ast.Attribute  # type: ignore[attr-defined]
            and c.func.attr in _GROWTH)  # type: ignore[attr-defined]
        self.sums = _Located(a for a in facts.nodes(ast.AugAssign)
                             if type(a.op) is ast.Add)  # type: ignore[attr-defined]


_containers_memo: list[object] = [None, None]


def _containers(facts: FileFacts) -> _Containers:
    if _containers_memo[0] is not facts.tree:
        _containers_memo[:] = [facts.tree, _Containers(facts)]
    return _containers_memo[1]  # type: ignore[return-value]


def may_flag_tl101(facts: FileFacts, options: Options) -> bool:
    """A method of a module class stores on ``self`` a list that holds a layer: a display or
    comprehension of one, ``list(...)`` of one, an empty list grown with one, or a local
    list of that kind."""
    return _stores_container(facts, options, "list")


def may_flag_tl102(facts: FileFacts, options: Options) -> bool:
    """The same for a dict of layers (TL102)."""
    return _stores_container(facts, options, "dict")


def _stores_container(facts: FileFacts, options: Options, kind: str) -> bool:
    file = _file(facts, options)
    if not file.methods or not file.layer_calls:
        return False
    found = _containers(facts)
    for method in file.methods:
        stores = found.stores.within(method)
        if not stores:
            continue
        layers = file.layer_calls.within(method)
        if not layers:
            continue  # every container of layers holds a call building one
        method_scan = _MethodScan(file, found, method, stores, layers, kind)
        if method_scan.flags():
            return True
    return False


class _MethodScan:
    def __init__(self, file: _File, found: _Containers, method: ast.AST,
                 stores: list[ast.AST], layers: list[ast.AST], kind: str) -> None:
        self.file = file
        self.found = found
        self.method = method
        self.stores = stores
        self.layer_ids = {id(c) for c in layers}
        self.kind = kind
        # local names assigned a layer call (the analysis's layer locals are a subset)
        self.layer_names = {s.targets[0].id for s in stores  # type: ignore[attr-defined]
                            if type(s) is ast.Assign and type(s.targets[0]) is ast.Name
                            and id(s.value) in self.layer_ids}  # type: ignore[attr-defined]

    def layerish(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        if type(node) is ast.Name:
            return node.id in self.layer_names  # type: ignore[attr-defined]
        return id(node) in self.layer_ids

    def flags(self) -> bool:
        for store in self.stores:
            target = _single_target(store)
            if _self_attribute(target) is None:  # type: ignore[arg-type]
                continue
            value = store.value  # type: ignore[attr-defined]
            if self.direct(value):
                return True
            if self.empty(value) and self.grown(lambda e: _self_attribute(e) == (
                    target.attr)):  # type: ignore[union-attr]
                return True
            if type(value) is ast.Name and self.local(value.id):
                return True
        return False

    def local(self, name: str) -> bool:
        """``self.X = name``, ``name`` a local container of layers."""
        for store in self.stores:
            target = _single_target(store)
            if type(target) is not ast.Name or target.id != name:
                continue
            value = store.value  # type: ignore[attr-defined]
            if self.direct(value) or self.empty(value) and self.grown(
                    lambda e: type(e) is ast.Name and e.id == name):
                return True
        return False

    def _builtin(self, func: ast.expr) -> bool:
        return type(func) is ast.Name and func.id == self.kind or (
            f"builtins.{self.kind}" in self.file.facts.qualnames_of(func))

    def empty(self, value: ast.AST) -> bool:
        display = ast.List if self.kind == "list" else ast.Dict
        if type(value) is display:
            return not (value.elts if display is ast.List else value.keys)  # type: ignore[attr-defined]
        return type(value) is ast.Call and not value.args and not (  # type: ignore[attr-defined]
            value.keywords) and self._builtin(value.func)  # type: ignore[attr-defined]

    def items_ok(self, items: list[ast.AST | None]) -> bool:
        """A layer among ``items`` and no value the container would refuse."""
        return any(self.layerish(i) for i in items) and not any(
            type(i) in _NOT_MODULES for i in items)

    def direct(self, value: ast.AST) -> bool:
        kind = type(value)
        if self.kind == "list":
            if kind is ast.List:
                return self.items_ok([None if type(e) is ast.Starred else e
                                      for e in value.elts])  # type: ignore[attr-defined]
            if kind is ast.ListComp:
                return self.layerish(value.elt)  # type: ignore[attr-defined]
            if kind is ast.Call and len(value.args) == 1 and not value.keywords and (  # type: ignore[attr-defined]
                    type(value.args[0]) in (ast.GeneratorExp, ast.ListComp)) and (  # type: ignore[attr-defined]
                    self._builtin(value.func)):  # type: ignore[attr-defined]
                return self.layerish(value.args[0].elt)  # type: ignore[attr-defined]
            return False
        if kind is ast.Dict:
            return self.items_ok([None if k is None else v for k, v in zip(
                value.keys, value.values)])  # type: ignore[attr-defined]
        if kind is ast.DictComp:
            return self.layerish(value.value)  # type: ignore[attr-defined]
        if kind is ast.Call and not value.args and value.keywords and all(  # type: ignore[attr-defined]
                k.arg is not None for k in value.keywords) and (  # type: ignore[attr-defined]
                self._builtin(value.func)):  # type: ignore[attr-defined]
            return self.items_ok([k.value for k in value.keywords])  # type: ignore[attr-defined]
        return False

    def grown(self, subject: object) -> bool:
        """A layer added to the container ``subject`` (a test of the receiver) later on."""
        is_subject = subject  # type: ignore[assignment]
        for call in self.found.growth.within(self.method):
            func = call.func  # type: ignore[attr-defined]
            if not is_subject(func.value):  # type: ignore[operator]
                continue
            method, args = func.attr, call.args  # type: ignore[attr-defined]
            keywords = call.keywords  # type: ignore[attr-defined]
            if self.kind == "list":
                if method == "append" and len(args) == 1 and self.layerish(args[0]):
                    return True
                if method == "insert" and len(args) == 2 and self.layerish(args[1]):
                    return True
                if method == "extend" and len(args) == 1 and self.in_sequence(args[0]):
                    return True
            elif method == "update":
                if not args and keywords and any(self.layerish(k.value) for k in keywords):
                    return True
                if len(args) == 1 and not keywords and type(args[0]) is ast.Dict and any(
                        self.layerish(v) for v in args[0].values):  # type: ignore[attr-defined]
                    return True
        if self.kind == "list":
            return any(is_subject(s.target) and self.in_sequence(s.value)  # type: ignore[attr-defined,operator]
                       for s in self.found.sums.within(self.method))
        # name[key] = layer
        return any(type(t := _single_target(s)) is ast.Subscript and is_subject(  # type: ignore[operator]
            t.value) and self.layerish(s.value)  # type: ignore[union-attr,attr-defined]
                   for s in self.stores)

    def in_sequence(self, value: ast.AST) -> bool:
        if type(value) in (ast.List, ast.Tuple):
            return any(self.layerish(e) for e in value.elts)  # type: ignore[attr-defined]
        if type(value) in (ast.ListComp, ast.GeneratorExp):
            return self.layerish(value.elt)  # type: ignore[attr-defined]
        return False


# ------------------------------------------------------------------ TL103
_CONTAINERS = ("torch.nn.ModuleList", "torch.nn.Sequential")


def may_flag_tl103(facts: FileFacts, options: Options) -> bool:
    """A call of ``nn.ModuleList`` whose list holds a list or tuple of layers, of
    ``nn.Sequential`` given one, or ``x.append``/``insert``/``extend`` of one on a name or
    ``self`` attribute (which may be a ModuleList)."""
    file = None
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        word = _last_name(func)
        if word is None:
            continue
        args = call.args  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and word in ("append", "insert", "extend"):
            wanted = 2 if word == "insert" else 1
            receiver = func.value
            if len(args) != wanted or call.keywords or (  # type: ignore[attr-defined]
                    type(receiver) is not ast.Name and _self_attribute(receiver) is None):
                continue
            value = args[-1]
            items = [value] if word != "extend" else _sequence_items(value)
            file = file or _file(facts, options)
            if any(_holds_layers(file, item) for item in items):
                return True
            continue
        if word not in ("ModuleList", "Sequential") and not (
                type(func) is ast.Name and (word in facts.bindings or word in facts.aliases)):
            continue
        quals = facts.qualnames_of(func)
        if "torch.nn.ModuleList" in quals:
            outer = args[0] if args else next(
                (k.value for k in call.keywords if k.arg == "modules"), None)  # type: ignore[attr-defined]
            file = file or _file(facts, options)
            if outer is not None and any(_holds_layers(file, inner)
                                         for inner in _sequence_items(outer)):
                return True
        if "torch.nn.Sequential" in quals:
            file = file or _file(facts, options)
            if any(_holds_layers(file, arg) for arg in args):
                return True
    return False


def _sequence_items(value: ast.AST) -> list[ast.AST]:
    """The items of a list or tuple display (not starred), or a comprehension's element."""
    if type(value) in (ast.List, ast.Tuple):
        return [e for e in value.elts if type(e) is not ast.Starred]  # type: ignore[attr-defined]
    if type(value) in (ast.ListComp, ast.GeneratorExp):
        return [value.elt]  # type: ignore[attr-defined]
    return []


def _holds_layers(file: _File, node: ast.AST) -> bool:
    """A list or tuple display, or a list comprehension or generator, of layer calls."""
    if type(node) in (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp):
        return any(file.builds_layer(item) for item in _sequence_items(node))
    return False


# ------------------------------------------------------------------ TL107
_HOOK_REGISTRATION = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook",
    "register_module_forward_hook", "register_module_forward_pre_hook"})
_WARM_UP_WORDS = frozenset({"warmup", "torchscript", "script", "scripted", "scripting", "jit",
                            "benchmark", "benchmarking", "profile", "profiler", "profiling"})
_DUMMY_FACTORIES = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "zeros_like", "ones_like",
    "empty_like", "full_like", "rand_like", "randn_like", "randint_like"))
_SAME_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float",
                                  "double", "bfloat16", "requires_grad_", "type"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def may_flag_tl107(facts: FileFacts, options: Options) -> bool:
    """A call ``x.forward(...)`` the rule may report: not ``super().forward``, outside hooks
    and code that replaces ``forward``, not on a dummy input, on a receiver that may be a
    module (``self`` in a module class, a ``self`` attribute, a name that says model or is
    bound in its function, an item or attribute of one of those)."""
    calls = [c for c in facts.nodes(ast.Call) if type(c.func) is ast.Attribute  # type: ignore[attr-defined]
             and c.func.attr == "forward"]  # type: ignore[attr-defined]
    if not calls:
        return False
    file = _file(facts, options)
    if not file.module_classes and not any(
            q == "torch" or q.startswith("torch.") for quals in facts.bindings.values()
            for q in quals):
        return False
    return any(_forward_may_bypass(file, call) for call in calls)


class _Scopes:
    """Per file, for TL107: the functions and classes by position, the hooks registered
    by name, and the assignments of ``x.forward``."""

    def __init__(self, facts: FileFacts) -> None:
        self.functions = _Located(facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef,
                                              ast.Lambda))
        self.classes = _Located(facts.nodes(ast.ClassDef))
        self.hooks = {name for call in facts.nodes(ast.Call)
                      if _last_name(call.func) in _HOOK_REGISTRATION  # type: ignore[attr-defined]
                      for arg in call.args  # type: ignore[attr-defined]
                      if (name := _last_name(arg)) is not None}
        self.forward_stores = _Located(
            a for a in facts.nodes(ast.Assign) if any(
                type(t) is ast.Attribute and t.attr == "forward"
                for t in a.targets))  # type: ignore[attr-defined]

    def around(self, located: _Located, node: ast.AST) -> list[ast.AST]:
        """The nodes of ``located`` that hold ``node``, outermost first."""
        here = _start(node)
        high = bisect_right(located.starts, here)
        return [n for n in located.nodes[:high] if _end(n) >= _end(node) and n is not node]


_scopes_memo: list[object] = [None, None]


def _scopes(facts: FileFacts) -> _Scopes:
    if _scopes_memo[0] is not facts.tree:
        _scopes_memo[:] = [facts.tree, _Scopes(facts)]
    return _scopes_memo[1]  # type: ignore[return-value]


def _forward_may_bypass(file: _File, call: ast.Call) -> bool:
    target = call.func.value  # type: ignore[attr-defined]
    if type(target) is ast.Call and _last_name(target.func) in ("super", "type"):
        return False  # super().forward(x): how a subclass extends its parent
    word = _last_name(target)
    if word is not None and ("remote" in word.lower() or "rref" in word.lower()):
        return False  # RPC proxies
    if type(target) is ast.Call and type(target.func) is ast.Attribute and (
            target.func.attr in ("remote", "rpc_async", "rpc_sync")):
        return False
    if word is not None and word[:1].isupper() and not word.isupper():
        return False  # Base.forward(self, x): a class's function
    scopes = _scopes(file.facts)
    # as the rule's Place: the functions up to the innermost class around the call, and
    # that class when one of them is its method
    classes = scopes.around(scopes.classes, call)
    inner = classes[-1] if classes else None
    functions = [f for f in scopes.around(scopes.functions, call)
                 if inner is None or _start(f) > _start(inner)]
    named = [f for f in functions if type(f) is not ast.Lambda]
    cls = inner if named else None
    for function in named:
        name = function.name  # type: ignore[attr-defined]
        if "hook" in name.lower() or name in scopes.hooks or scopes.forward_stores.within(
                function):
            return False  # a hook, or code that wraps or replaces forward
    if _dummy(file, call.args[0] if call.args else None):
        return False
    if _imported(file.facts, target) and not _rebound(
            target, scopes.around(scopes.functions, call)):
        return False  # an imported module: a C++/CUDA extension's forward function
    own = word == "self" and type(target) is ast.Name or _self_attribute(target) is not None
    if own and _warm_up([f.name for f in named] + ([cls.name] if cls else [])):  # type: ignore[attr-defined]
        return False  # construction, warm-up and TorchScript paths
    if type(target) is ast.Name and target.id == "self":
        return cls is not None and cls.name in file.module_classes and not any(  # type: ignore[attr-defined]
            type(s) in _FUNCTIONS and s.name == "__call__" for s in cls.body)  # type: ignore[attr-defined]
    if type(target) is ast.Call:
        func_word = _last_name(target.func)
        if func_word is not None and func_word[:1].isupper() and not func_word.isupper():
            return False  # a module built for this one call
        if func_word is not None and type(target.func) is ast.Name and (
                func_word in file.module_classes):
            return False
    return _may_be_module(file, target, cls, functions, 0)


def _imported(facts: FileFacts, target: ast.AST) -> bool:
    """A dotted name whose head only an import binds (at module level: no assignment)."""
    while type(target) is ast.Attribute:
        target = target.value  # type: ignore[attr-defined]
    return type(target) is ast.Name and target.id in facts.bindings and (  # type: ignore[attr-defined]
        target.id not in facts.aliases)  # type: ignore[attr-defined]


def _rebound(target: ast.AST, functions: list[ast.AST]) -> bool:
    """The head name of ``target`` is a parameter or a local of a function around it (it
    may then not be what the file imports under that name)."""
    while type(target) is ast.Attribute:
        target = target.value  # type: ignore[attr-defined]
    if type(target) is not ast.Name:
        return True
    name = target.id  # type: ignore[attr-defined]
    return any(name in _bound_in(function) for function in functions)


def _bound_in(function: ast.AST) -> set[str]:
    """The names a function's parameters and stores bind (nested scopes included)."""
    names = _parameters(function)
    names.update(n.id for n in ast.walk(function)
                 if type(n) is ast.Name and type(n.ctx) is not ast.Load)  # type: ignore[attr-defined]
    return names


def _warm_up(names: list[str]) -> bool:
    for name in names:
        words = [w for w in _CAMEL.sub("_", name).lower().split("_") if w]
        if name == "__init__" or _WARM_UP_WORDS.intersection(words) or (
                "warm up" in " ".join(words)):
            return True
    return False


def _dummy(file: _File, expr: ast.AST | None) -> bool:
    """A placeholder input made by ``torch.zeros``/``randn``... on the spot (in a list,
    tuple or comprehension of them too): the rule's shape probe or warm-up pass."""
    if expr is None or type(expr) is ast.Starred:
        return False
    while type(expr) is ast.Call and type(expr.func) is ast.Attribute and not (  # type: ignore[attr-defined]
            _factory(file, expr)):
        expr = expr.func.value  # type: ignore[attr-defined]
    if type(expr) is ast.Call:
        return _factory(file, expr)
    if type(expr) is ast.DictComp:
        return _dummy(file, expr.value)  # type: ignore[attr-defined]
    if type(expr) in (ast.ListComp, ast.GeneratorExp):
        return _dummy(file, expr.elt)  # type: ignore[attr-defined]
    if type(expr) in (ast.List, ast.Tuple) and expr.elts:  # type: ignore[attr-defined]
        return all(_dummy(file, e) for e in expr.elts)  # type: ignore[attr-defined]
    return False


def _factory(file: _File, call: ast.AST) -> bool:
    quals = file.facts.qualnames_of(call.func)  # type: ignore[attr-defined]
    return bool(quals) and quals <= _DUMMY_FACTORIES


def _model_name(name: str, options: Options) -> bool:
    """A superset of the analysis's ``is_model_name``: the prefilter's pattern of the
    model names (it does not leave out helper verbs and endings)."""
    return not name[:1].isupper() and _model_pattern(options.model_names).search(
        name.lower()) is not None


@lru_cache(maxsize=8)
def _model_pattern(model_names: frozenset[str]) -> re.Pattern[str]:
    return re.compile(model_names_pattern(model_names))


def _may_be_module(file: _File, expr: ast.AST, cls: ast.AST | None,
                   functions: list[ast.AST], depth: int) -> bool:
    """May the rule find ``expr`` to be a torch module (forward_calls._is_module)?"""
    if depth > 4:
        return False
    kind = type(expr)
    if kind is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr in _SAME_MODULE_METHODS:
            return _may_be_module(file, func.value, cls, functions, depth + 1)
        if type(func) is ast.Name and func.id == "getattr" and expr.args:  # type: ignore[attr-defined]
            return _may_be_module(file, expr.args[0], cls, functions, depth + 1)  # type: ignore[attr-defined]
        # a module built on the spot (its direct .forward the caller has left out)
        return type(func) is ast.Name and func.id in file.module_classes or (
            file.builds_layer(expr))
    if kind is ast.Subscript:
        return _may_be_module(file, expr.value, cls, functions, depth + 1)  # type: ignore[attr-defined]
    attr = _self_attribute(expr)
    if attr is not None:
        return cls is not None and (
            cls.name in file.module_classes or _model_name(attr, file.options)  # type: ignore[attr-defined]
            or bool(file.layer_calls.within(cls)))
    if kind is ast.Attribute:
        return _model_name(expr.attr, file.options) or _may_be_module(  # type: ignore[attr-defined]
            file, expr.value, cls, functions, depth + 1)  # type: ignore[attr-defined]
    if kind is ast.Name:
        # a model's name, or a name the rule may follow to a module (anything but a
        # parameter no function around rebinds: the rule knows only its name then)
        name = expr.id  # type: ignore[attr-defined]
        if _model_name(name, file.options) or any(
                name in _stored_in(function) for function in functions):
            return True
        return not any(name in _parameters(function) for function in functions)
    return False


def _parameters(function: ast.AST) -> set[str]:
    return {a.arg for a in ast.walk(function.args)  # type: ignore[attr-defined]
            if type(a) is ast.arg}


def _stored_in(function: ast.AST) -> set[str]:
    """The names a function binds by assignment, loop, ``with``, comprehension (not its
    parameters: the rule knows nothing of those beyond their names)."""
    return {n.id for n in ast.walk(function)  # type: ignore[attr-defined]
            if type(n) is ast.Name and type(n.ctx) is ast.Store}  # type: ignore[attr-defined]
