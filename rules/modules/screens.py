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
import builtins
import re
import sys
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from operator import attrgetter
from typing import TypeVar

from torchlint.analysis.ast_names import (
    dotted as _dotted,
    last_name as _last_name,
    scope_nodes as _scope_nodes,
    self_attribute as _self_attribute,
    target_names as _target_names,
)
from torchlint.analysis.layer_table import NON_LAYER_CLASSES
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import (
    FOREIGN_FRAMEWORKS,
    INFERENCE_ENGINES,
    PLACING_HELPER,
    PORTED_NOTE,
    model_names_pattern,
)
from torchlint.engine.triage import FileFacts

# other frameworks and inference engines, whose objects have a ``forward`` method and are no
# torch modules
_FOREIGN = FOREIGN_FRAMEWORKS | INFERENCE_ENGINES

T = TypeVar("T")

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
             *((ast.Match,) if hasattr(ast, "Match") else ()))


# ------------------------------------------------------------------ positions
_start = attrgetter("lineno", "col_offset")
_end = attrgetter("end_lineno", "end_col_offset")


class _Located:
    """Nodes sorted by where they start: those inside a span, by bisection."""

    def __init__(self, nodes: Iterable[ast.AST]) -> None:
        self.nodes = sorted(nodes, key=_start)
        self.starts = list(map(_start, self.nodes))

    def within(self, outer: ast.AST) -> list[ast.AST]:
        """The nodes that start inside ``outer`` (so lie inside it: spans nest)."""
        low = bisect_left(self.starts, _start(outer))
        high = bisect_right(self.starts, _end(outer))
        return self.nodes[low:high]

    def __bool__(self) -> bool:
        return bool(self.nodes)


# ------------------------------------------------------------------ names
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
    """A name from another module than torch's or the standard library's: a class of the
    project there may derive from a module class (the project knowledge follows it),
    whatever its spelling."""
    return "." in qual and not qual.startswith(("torch.", "builtins.")) and (
        qual.split(".", 1)[0] not in _STANDARD_LIBRARY)


_STANDARD_LIBRARY = frozenset(getattr(sys, "stdlib_module_names", ()))


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
        self.facts = weakref.proxy(facts)
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
    def plain_module_classes(self) -> frozenset[str]:
        """:func:`_plain_module_classes` (no class of the standard library's or another
        framework's base alone)."""
        return _plain_module_classes(self.facts, self.options)  # type: ignore[arg-type]

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
                inner = getattr(stmt, name, None) or []
                # statements, or except handlers and match cases (whose body holds them)
                yield from _defs_of([b for i in inner for b in (
                    [i] if isinstance(i, ast.stmt) else i.body)])


def _module_classes(facts: FileFacts, options: Options) -> frozenset[str]:
    """The classes of the file that may be torch modules: those of the facts, and those
    deriving (maybe through classes of the file) from a ``torch.nn`` layer."""
    return _derived_classes(facts, set(facts.module_classes(options)), _is_layer_name)


def _derived_classes(facts: FileFacts, found: set[str],
                     accepts: Callable[[str], bool]) -> frozenset[str]:
    """``found`` and the classes of the file with a base in it or that ``accepts`` (two
    classes of one name: either)."""
    bases: dict[str, set[str]] = {}
    for cls, candidates in facts.class_bases:
        bases.setdefault(cls, set()).update(candidates)
    changed = True
    while changed:
        changed = False
        for cls, candidates in bases.items():
            if cls not in found and any(q in found or accepts(q) for q in candidates):
                found.add(cls)
                changed = True
    return frozenset(found)


def _file(facts: FileFacts, options: Options) -> _File:
    return facts.once(("file", options), lambda: _File(facts, options))


# ------------------------------------------------------------------ TL101, TL102
_GROWTH = frozenset({"append", "insert", "extend", "update"})
# values nn.ModuleList/ModuleDict would refuse (containers.is_clearly_not_module)
_NOT_MODULES = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set,
                ast.ListComp, ast.DictComp, ast.SetComp, ast.BinOp, ast.Compare, ast.UnaryOp,
                ast.BoolOp)


class _Containers:
    """Per file: the assignments of a list or dict (a display, a comprehension, a call of
    ``list``/``dict``, by its name), then, only where one is, every single-target
    assignment and the growing calls (``x.append``, ``x.update``...), sorted by position."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = weakref.proxy(facts)
        made: dict[str, list[ast.AST]] = {"list": [], "dict": []}
        builtins = _builtin_names(facts)
        lists, dicts = made["list"], made["dict"]
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            value = node.value  # type: ignore[attr-defined]
            kind = type(value)
            if kind is ast.List or kind is ast.ListComp:
                lists.append(node)
            elif kind is ast.Dict or kind is ast.DictComp:
                dicts.append(node)
            elif kind is ast.Call and _last_name(value.func) in builtins:  # type: ignore[attr-defined]
                # list(...), dict(...), L(...) after ``list as L``: the scan tells which
                lists.append(node)
                dicts.append(node)
        self.made = {kind: _Located(nodes) for kind, nodes in made.items()}
        self._stores: _Located | None = None
        self._growth: _Located | None = None
        self._sums: _Located | None = None

    @property
    def stores(self) -> _Located:
        if self._stores is None:
            self._stores = _Located(self.facts.nodes(ast.Assign, ast.AnnAssign))
        return self._stores

    @property
    def growth(self) -> _Located:
        if self._growth is None:
            self._growth = _Located(
                c for c in self.facts.nodes(ast.Call) if type(c.func) is ast.Attribute  # type: ignore[attr-defined]
                and c.func.attr in _GROWTH) if not _GROWTH.isdisjoint(  # type: ignore[attr-defined]
                self.facts.method_calls) else _Located(())
        return self._growth

    @property
    def sums(self) -> _Located:
        if self._sums is None:
            self._sums = _Located(a for a in self.facts.nodes(ast.AugAssign)
                                  if type(a.op) is ast.Add)  # type: ignore[attr-defined]
        return self._sums


def _builtin_names(facts: FileFacts) -> set[str]:
    """The names ``list``/``dict`` may be called by: themselves (also ``builtins.list``),
    and the names an import or a module-level alias binds to them (``list as L``)."""
    names = {"list", "dict"}
    for name, quals in facts.bindings.items():
        if "builtins.list" in quals or "builtins.dict" in quals:
            names.add(name)
    for name, values in facts.aliases.items():
        if any(_last_name(v) in ("list", "dict") for v in values):
            names.add(name)
    return names


def _containers(facts: FileFacts) -> _Containers:
    return facts.once("containers", lambda: _Containers(facts))


def may_flag_tl101(facts: FileFacts, options: Options) -> bool:
    """A method of a module class stores on ``self`` a list that holds a layer: a display or
    comprehension of one, ``list(...)`` of one, an empty list grown with one, or a local
    list of that kind; as the rule decides it (:class:`_ListStores`): the last such store
    of the attribute in the method, no value the list would refuse, a local always bound
    to a layer and not registered by hand, the attribute not handed to a registering call,
    a project helper or a star argument in the class."""
    found = _containers(facts)
    made = found.made["list"]
    if not made:
        return False
    file = _file(facts, options)
    classes = _plain_module_classes(facts, options)
    for method in file.methods:
        if not made.within(method) or not _MethodScan(file, found, method, "list").flags():
            continue
        cls = _class_of(facts, method)
        if cls is not None and cls.name in classes and _ListStores(  # type: ignore[attr-defined]
                file, cls, method).reports():
            return True
    return False


def may_flag_tl102(facts: FileFacts, options: Options) -> bool:
    """The same for a dict of layers (TL102)."""
    return _stores_container(facts, options, "dict")


def _stores_container(facts: FileFacts, options: Options, kind: str) -> bool:
    found = _containers(facts)
    made = found.made[kind]
    if not made:
        return False  # every finding stores (or names) a container made in the method
    file = _file(facts, options)
    for method in file.methods:
        if made.within(method) and _MethodScan(file, found, method, kind).flags():
            return True
    return False


class _MethodScan:
    def __init__(self, file: _File, found: _Containers, method: ast.AST, kind: str) -> None:
        self.file = file
        self.found = found
        self.method = method
        self.stores = found.stores.within(method)
        self.kind = kind
        self._layer_names: set[str] | None = None

    @property
    def layer_names(self) -> set[str]:
        """Local names assigned a layer call (the analysis's layer locals are a subset)."""
        if self._layer_names is None:
            self._layer_names = {t.id for s in self.stores  # type: ignore[attr-defined]
                                 if type(t := _single_target(s)) is ast.Name
                                 and self.file.builds_layer(s.value)}  # type: ignore[attr-defined]
        return self._layer_names

    def layerish(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        if type(node) is ast.Name:
            return node.id in self.layer_names  # type: ignore[attr-defined]
        return self.file.builds_layer(node)

    def flags(self) -> bool:
        # the lists (dicts) made in the method: stored on self at once, or kept in a local
        locals_made: dict[str, list[ast.AST]] = {}
        for store in self.found.made[self.kind].within(self.method):
            target = _single_target(store)
            if type(target) is ast.Name:
                locals_made.setdefault(target.id, []).append(store)
            elif _self_attribute(target) is not None and self.made_with_layers(  # type: ignore[arg-type]
                    store.value, lambda e, a=target.attr: _self_attribute(e) == a):  # type: ignore[attr-defined,union-attr,misc]
                return True
        if not locals_made:
            return False
        # self.X = name, name a local container of layers
        for store in self.stores:
            value = getattr(store, "value", None)
            if type(value) is ast.Name and value.id in locals_made and _self_attribute(  # type: ignore[attr-defined]
                    _single_target(store)) is not None and any(  # type: ignore[arg-type]
                    self.made_with_layers(m.value, lambda e, n=value.id: type(  # type: ignore[attr-defined,misc]
                        e) is ast.Name and e.id == n) for m in locals_made[value.id]):  # type: ignore[attr-defined]
                return True
        return False

    def made_with_layers(self, value: ast.AST, is_subject: Callable[[ast.AST], bool]) -> bool:
        """``value`` holds a layer, or is empty and the container ``is_subject`` tells is
        grown with one."""
        return self.direct(value) or self.empty(value) and self.grown(is_subject)

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

    def grown(self, is_subject: Callable[[ast.AST], bool]) -> bool:
        """A layer added to the container ``is_subject`` tells (a test of the receiver)."""
        for call in self.found.growth.within(self.method):
            func = call.func  # type: ignore[attr-defined]
            if not is_subject(func.value):
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


# ------------------------------------------------------------------ TL101, as the rule decides
def _plain_module_classes(facts: FileFacts, options: Options) -> frozenset[str]:
    """The classes of the file that may be module classes for the rule: a base that is a
    module base of ``options``, a ``torch.nn`` layer, a class of the file that may be one,
    or a name from another module than torch's, the standard library's or another
    framework's (``ABC``, ``keras.layers.Layer``, whose classes the facts count in, never
    are one)."""
    return facts.once(("plain module classes", options), lambda: _derived_classes(
        facts, set(), lambda q: q in options.module_bases or _is_layer_name(q)
        or _project_class(q) and q.split(".", 1)[0] not in _FOREIGN))


# the statements and clauses whose names make a local no surely-layer name (containers.py)
_BINDERS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
            ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.NamedExpr,
            ast.Delete, ast.comprehension, ast.Import, ast.ImportFrom)
# and those that rebind a local container (containers._REBINDING_TYPES)
_REBINDERS = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign, ast.Delete,
              ast.comprehension, ast.NamedExpr, ast.Assign, ast.AnnAssign)
_REGISTERING = frozenset({"add_module", "register_module"})
# containers.PLACING_HELPER: a project helper that places a module inside another
_BUILTINS = frozenset(dir(builtins))


def _bound_names(node: ast.AST) -> Iterator[str]:
    """The names a statement or clause binds at its own level (analysis.bindings)."""
    kind = type(node)
    if kind is ast.Assign:
        for target in node.targets:  # type: ignore[attr-defined]
            yield from _target_names(target)
    elif kind in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr,
                  ast.comprehension):
        yield from _target_names(node.target)  # type: ignore[attr-defined]
    elif kind in (ast.With, ast.AsyncWith):
        for item in node.items:  # type: ignore[attr-defined]
            yield from _target_names(item.optional_vars)
    elif kind is ast.Delete:
        for target in node.targets:  # type: ignore[attr-defined]
            yield from _target_names(target)
    elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        yield node.name  # type: ignore[attr-defined]
    elif kind is ast.Import:
        for alias in node.names:  # type: ignore[attr-defined]
            yield alias.asname or alias.name.split(".", 1)[0]
    elif kind is ast.ImportFrom:
        for alias in node.names:  # type: ignore[attr-defined]
            yield alias.asname or alias.name


def _arguments(call: ast.Call) -> list[tuple[ast.expr, bool]]:
    """A call's arguments in source order, as libcst lists them: (value, starred)."""
    found = [(a.value, True) if type(a) is ast.Starred else (a, False) for a in call.args]
    found += [(k.value, k.arg is None) for k in call.keywords]
    if call.keywords and call.args:
        found.sort(key=lambda a: _start(a[0]))
    return found


class _Growth:
    def __init__(self) -> None:
        self.layers = self.unknown = self.bad = 0
        self.after: list[int] = []


class _ListStores:
    """TL101's decision on one method of a module class (containers.unregistered_containers),
    in ``ast`` terms: each test is the rule's, or, where the ``ast`` facts know less (what
    a name from another module is), one that holds more often."""

    def __init__(self, file: _File, cls: ast.AST, method: ast.AST) -> None:
        self.file = file
        self.facts = file.facts
        self.cls = cls
        self.method = method
        self.nodes = list(_scope_nodes(method.body))  # type: ignore[attr-defined]
        self._layer_names: set[str] | None = None

    def reports(self) -> bool:
        nodes = self.nodes
        stores: list[tuple[str, int]] = []
        assigned: set[str] = set()
        for index, node in enumerate(nodes):
            target = _single_target(node)
            if type(target) is ast.Name:
                assigned.add(target.id)  # type: ignore[union-attr]
            attr = _self_attribute(target)
            if attr is not None:
                stores.append((attr, index))
        for position, (attr, index) in enumerate(stores):
            if any(a == attr for a, _ in stores[position + 1:]):
                continue  # only the last store of the attribute counts
            value = nodes[index].value  # type: ignore[attr-defined]
            direct = self.direct(value)
            if direct is not None:
                found = direct
            elif self.empty(value):
                growth = self.growth(index + 1, lambda e, a=attr: _self_attribute(e) == a)  # type: ignore[misc]
                found = bool(growth.layers and not growth.bad)
            elif type(value) is ast.Name and value.id in assigned:
                found = self.local(index, value.id)
            else:
                found = False
            if found and attr not in _wrapped(self.file, self.cls):
                return True
        return False

    # ------------------------------------------------------------- layers
    @property
    def layer_names(self) -> set[str]:
        """Locals every binding of which assigns a layer call (a superset), less those
        handed to a registering call (containers.layer_locals, registered_names)."""
        if self._layer_names is None:
            args = self.method.args  # type: ignore[attr-defined]
            bad = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            good: set[str] = set()
            for node in self.nodes:
                target = _single_target(node)
                if type(target) is ast.Name:
                    (good if self.file.builds_layer(node.value) else bad).add(  # type: ignore[attr-defined]
                        target.id)  # type: ignore[union-attr]
                elif isinstance(node, _BINDERS):
                    bad.update(_bound_names(node))
                elif type(node) is ast.Call and _registers(self.facts, node):  # type: ignore[arg-type]
                    bad.update(v.id for v, _ in _arguments(node)  # type: ignore[arg-type,attr-defined]
                               if type(v) is ast.Name)
            self._layer_names = good - bad
        return self._layer_names

    def layerish(self, node: ast.AST) -> bool:
        if type(node) is ast.Name:
            return node.id in self.layer_names  # type: ignore[attr-defined]
        return self.file.builds_layer(node)

    def item(self, growth: _Growth, node: ast.AST) -> None:
        if self.layerish(node):
            growth.layers += 1
        elif _refused(node):
            growth.bad += 1
        else:
            growth.unknown += 1

    def sequence(self, growth: _Growth, node: ast.AST) -> None:
        kind = type(node)
        if kind is ast.List or kind is ast.Tuple:
            for element in node.elts:  # type: ignore[attr-defined]
                if type(element) is ast.Starred:
                    growth.unknown += 1
                else:
                    self.item(growth, element)
        elif kind is ast.ListComp or kind is ast.GeneratorExp:
            self.item(growth, node.elt)  # type: ignore[attr-defined]
        else:
            growth.unknown += 1

    # ------------------------------------------------------------- values
    def _builtin_list(self, func: ast.AST) -> bool:
        return type(func) is ast.Name and func.id == "list" or (  # type: ignore[attr-defined]
            "builtins.list" in self.facts.qualnames_of(func))

    def direct(self, value: ast.AST) -> bool | None:
        """A display, comprehension or ``list(...)`` of layers (None: none of those)."""
        kind = type(value)
        if kind is ast.List:
            growth = _Growth()
            self.sequence(growth, value)
            return True if growth.layers and not growth.bad else None
        if kind is ast.ListComp:
            return True if self.layerish(value.elt) else None  # type: ignore[attr-defined]
        if kind is ast.Call and len(value.args) == 1 and not value.keywords and type(  # type: ignore[attr-defined]
                value.args[0]) is not ast.Starred and self._builtin_list(value.func):  # type: ignore[attr-defined]
            inner = value.args[0]  # type: ignore[attr-defined]
            if type(inner) in (ast.GeneratorExp, ast.ListComp) and self.layerish(inner.elt):
                return True
        return None

    def empty(self, value: ast.AST) -> bool:
        if type(value) is ast.List:
            return not value.elts  # type: ignore[attr-defined]
        return type(value) is ast.Call and not value.args and not (  # type: ignore[attr-defined]
            value.keywords) and self._builtin_list(value.func)  # type: ignore[attr-defined]

    def growth(self, start: int, is_subject: Callable[[ast.AST], bool]) -> _Growth:
        """How the list ``is_subject`` tells is grown by the nodes from ``start`` on."""
        growth = _Growth()
        nodes = self.nodes
        for index in range(start, len(nodes)):
            node = nodes[index]
            kind = type(node)
            if kind is ast.Call and type(node.func) is ast.Attribute and is_subject(  # type: ignore[attr-defined]
                    node.func.value):  # type: ignore[attr-defined]
                method = node.func.attr  # type: ignore[attr-defined]
                args = _arguments(node)  # type: ignore[arg-type]
                before = (growth.layers, growth.unknown, growth.bad)
                if method == "append" and len(args) == 1:
                    self.item(growth, args[0][0])
                elif method == "insert" and len(args) == 2:
                    self.item(growth, args[1][0])
                elif method == "extend" and len(args) == 1:
                    self.sequence(growth, args[0][0])
                if (growth.layers, growth.unknown, growth.bad) != before:
                    growth.after.append(index)
            elif kind is ast.AugAssign and type(node.op) is ast.Add and is_subject(  # type: ignore[attr-defined]
                    node.target):  # type: ignore[attr-defined]
                self.sequence(growth, node.value)  # type: ignore[attr-defined]
                growth.after.append(index)
        return growth

    def local(self, use: int, name: str) -> bool:
        """``self.X = name``: ``name`` is bound once before, to a list of layers, not
        rebound, handed to no call, nor grown after (containers._local_container)."""
        binding: int | None = None
        for index, node in enumerate(self.nodes):
            target = _single_target(node)
            kind = type(node)
            if type(target) is ast.Name and target.id == name:  # type: ignore[union-attr]
                if binding is not None:
                    return False
                binding = index
            elif isinstance(node, _REBINDERS):
                if kind is not ast.AugAssign and name in _bound_names(node):
                    return False
            elif kind is ast.Call and any(type(v) is ast.Name and v.id == name  # type: ignore[attr-defined]
                                          for v, _ in _arguments(node)):  # type: ignore[arg-type]
                return False
        if binding is None or binding > use:
            return False
        value = self.nodes[binding].value  # type: ignore[attr-defined]
        growth = self.growth(binding + 1, lambda e: type(e) is ast.Name and e.id == name)  # type: ignore[attr-defined]
        if any(index > use for index in growth.after) or growth.bad:
            return False
        return self.direct(value) is not None or self.empty(value) and bool(growth.layers)


def _refused(node: ast.AST) -> bool:
    """A value ``nn.ModuleList`` would refuse (containers.is_clearly_not_module): a number,
    string or bool literal, a display, a comprehension of a container, an operation."""
    kind = type(node)
    if kind is ast.Constant:
        return node.value is not None and node.value is not Ellipsis  # type: ignore[attr-defined]
    return kind in (ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp,
                    ast.DictComp, ast.SetComp, ast.BinOp, ast.Compare, ast.UnaryOp, ast.BoolOp)


def _registers(facts: FileFacts, call: ast.Call) -> bool:
    """Surely a registering call for the rule (containers._registers): ``x.add_module``,
    ``x.register_module``, a helper named to place a module, ``setattr(self, ...)``."""
    func = call.func
    if type(func) is ast.Attribute and func.attr in _REGISTERING:
        return True
    name = _last_name(func)
    if name is None:
        return False
    if name != "setattr" and PLACING_HELPER.search(name) and (
            len(call.args) + len(call.keywords) >= 2):
        return True
    if type(func) is ast.Name and name == "setattr" and not (
            name in facts.bindings or name in facts.aliases or name in facts.functions):
        first = _arguments(call)
        return bool(first) and type(first[0][0]) is ast.Name and first[0][0].id == "self"  # type: ignore[attr-defined]
    return False


def _sure_layer(facts: FileFacts, call: ast.Call) -> bool:
    """Surely a ``torch.nn`` layer call for the rule (an imported name, one meaning)."""
    func = call.func
    head = func
    while type(head) is ast.Attribute:
        head = head.value  # type: ignore[attr-defined]
    if type(head) is not ast.Name or head.id not in facts.bindings or head.id in facts.aliases:  # type: ignore[attr-defined]
        return False
    quals = facts.qualnames_of(func)
    if len(quals) != 1:
        return False
    qual = next(iter(quals))
    return _is_layer_name(qual) and qual.rsplit(".", 1)[1] not in NON_LAYER_CLASSES


def _sure_helper(facts: FileFacts, call: ast.Call) -> bool:
    """Surely a project helper for the rule: a called name that is no builtin's and no
    torch name's."""
    func = call.func
    if type(func) is not ast.Name or func.id in _BUILTINS or func.id in facts.aliases:
        return False
    return not any(q.startswith(("torch.", "builtins.")) or q == "torch"
                   for q in facts.qualnames_of(func))


def _wrapped(file: _File, cls: ast.AST) -> set[str]:
    """The attributes the class hands to a registering call, a layer, a project helper or a
    star argument, or loops over while registering (containers._class_uses): a subset."""
    facts = file.facts

    def make() -> set[str]:
        found: set[str] = set()
        for stmt in cls.body:  # type: ignore[attr-defined]
            for node in ast.walk(stmt):
                kind = type(node)
                if kind is ast.For or kind is ast.AsyncFor:
                    if any(type(n) is ast.Call and _registers(facts, n)  # type: ignore[arg-type]
                           for s in node.body for n in ast.walk(s)):  # type: ignore[attr-defined]
                        found.update(a for n in ast.walk(node.iter)  # type: ignore[attr-defined]
                                     if (a := _self_attribute(n)) is not None)
                elif kind is ast.Call:
                    registers = _registers(facts, node)  # type: ignore[arg-type]
                    layer = _sure_layer(facts, node)  # type: ignore[arg-type]
                    helper = _sure_helper(facts, node)  # type: ignore[arg-type]
                    for value, star in _arguments(node):  # type: ignore[arg-type]
                        attr = _self_attribute(value)
                        if attr is not None and (layer or star or registers or helper):
                            found.add(attr)
                        if layer or registers:
                            found.update(a for n in ast.walk(value)
                                         if (a := _self_attribute(n)) is not None)
        return found

    return facts.once(("tl101 wrapped", id(cls)), make)


# ------------------------------------------------------------------ TL103
_CONTAINERS = ("torch.nn.ModuleList", "torch.nn.Sequential")


def may_flag_tl103(facts: FileFacts, options: Options) -> bool:
    """A call of ``nn.ModuleList`` whose list holds a list or tuple of layers, of
    ``nn.Sequential`` given one, or ``x.append``/``insert``/``extend`` of one on a name or
    ``self`` attribute the file assigns an ``nn.ModuleList``."""
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
            if any(_holds_layers(file, item) for item in items) and (
                    _receiver(receiver) in _module_lists(facts)):
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


def _receiver(node: ast.AST) -> tuple[str, str]:
    attr = _self_attribute(node)
    return ("self", attr) if attr is not None else ("name", node.id)  # type: ignore[attr-defined]


def _module_lists(facts: FileFacts) -> set[tuple[str, str]]:
    """The names and ``self`` attributes the file assigns an ``nn.ModuleList(...)`` (the
    rule grows only those it finds bound to one)."""
    return facts.once("module lists", lambda: _assigned_module_lists(facts))


def _assigned_module_lists(facts: FileFacts) -> set[tuple[str, str]]:
    found = set()
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        value, target = node.value, _single_target(node)  # type: ignore[attr-defined]
        if type(value) is not ast.Call or target is None or (
                type(target) is not ast.Name and _self_attribute(target) is None):
            continue
        word = _last_name(value.func)
        if (word == "ModuleList" or word in facts.bindings or word in facts.aliases) and (
                "torch.nn.ModuleList" in facts.qualnames_of(value.func)):
            found.add(_receiver(target))
    return found


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
    if facts.test_file:  # the rule is silent in test code
        return False
    if "forward" not in facts.method_calls:
        return False
    calls = [c for c in facts.nodes(ast.Call) if type(c.func) is ast.Attribute  # type: ignore[attr-defined]
             and c.func.attr == "forward"]  # type: ignore[attr-defined]
    file = _file(facts, options)
    if not file.plain_module_classes and not any(
            q == "torch" or q.startswith("torch.") for quals in facts.bindings.values()
            for q in quals):
        return False
    scopes = _scopes(facts)
    return any(_forward_may_bypass(file, scopes, call) for call in calls)


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
        self.imported = _module_imports(facts.tree.body) - facts.aliases.keys()  # type: ignore[union-attr]
        self.forward_stores = _Located(
            a for a in facts.nodes(ast.Assign) if any(
                type(t) is ast.Attribute and t.attr == "forward"
                for t in a.targets))  # type: ignore[attr-defined]

    def around(self, located: _Located, node: ast.AST) -> list[ast.AST]:
        """The nodes of ``located`` that hold ``node``, outermost first."""
        here = _start(node)
        high = bisect_right(located.starts, here)
        return [n for n in located.nodes[:high] if _end(n) >= _end(node) and n is not node]


def _module_imports(body: list[ast.stmt]) -> set[str]:
    """The names the module's own imports bind (under its if/try/with blocks too, not in
    its functions and classes)."""
    names: set[str] = set()
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Import:
            names.update(a.asname or a.name.split(".", 1)[0] for a in stmt.names)  # type: ignore[attr-defined]
        elif kind is ast.ImportFrom:
            names.update(a.asname or a.name for a in stmt.names)  # type: ignore[attr-defined]
        elif kind in _COMPOUND:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(stmt, name, None) or []
                names |= _module_imports([b for i in inner for b in (
                    [i] if isinstance(i, ast.stmt) else i.body)])
    return names


def _scopes(facts: FileFacts) -> _Scopes:
    return facts.once("scopes", lambda: _Scopes(facts))


def _forward_may_bypass(file: _File, scopes: _Scopes, call: ast.Call) -> bool:
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
    if _dummy(file, call.args[0] if call.args else None, call, named):
        return False
    if _imported(scopes, target) and not _rebound(
            target, scopes.around(scopes.functions, call)):
        return False  # an imported module: a C++/CUDA extension's forward function
    own = word == "self" and type(target) is ast.Name or _self_attribute(target) is not None
    if own and _warm_up([f.name for f in named] + ([cls.name] if cls else [])):  # type: ignore[attr-defined]
        return False  # construction, warm-up and TorchScript paths
    if type(target) is ast.Name and target.id == "self":
        return cls is not None and cls.name in file.plain_module_classes and not any(  # type: ignore[attr-defined]
            type(s) in _FUNCTIONS and s.name == "__call__" for s in cls.body)  # type: ignore[attr-defined]
    if type(target) is ast.Call:
        func_word = _last_name(target.func)
        if func_word is not None and func_word[:1].isupper() and not func_word.isupper():
            return False  # a module built for this one call
        if func_word is not None and type(target.func) is ast.Name and (
                func_word in file.module_classes):
            return False
    return _may_be_module(file, target, cls, functions, 0)


def _imported(scopes: _Scopes, target: ast.AST) -> bool:
    """A dotted name whose head only a module-level import binds (no module-level
    assignment: the rule then knows it as the import)."""
    while type(target) is ast.Attribute:
        target = target.value  # type: ignore[attr-defined]
    return type(target) is ast.Name and target.id in scopes.imported  # type: ignore[attr-defined]


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


def _dummy(file: _File, expr: ast.AST | None, at: ast.AST | None = None,
           functions: list[ast.AST] = (), depth: int = 0) -> bool:  # type: ignore[assignment]
    """A placeholder input made by ``torch.zeros``/``randn``... on the spot (in a list,
    tuple or comprehension of them too), or a local every binding of which assigns one,
    one of them before ``at``: the rule's shape probe or warm-up pass."""
    if expr is None or type(expr) is ast.Starred:
        return False
    if type(expr) is ast.Name:
        if at is None or depth >= 3:
            return False
        bindings = _name_bindings(expr.id, functions)  # type: ignore[attr-defined]
        return bool(bindings) and all(
            kind == "assign" and _dummy(file, value, value, functions, depth + 1)
            for kind, value in bindings) and any(
            _start(value) < _start(at) for _, value in bindings)
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
        return type(func) is ast.Name and func.id in file.plain_module_classes or (
            file.builds_layer(expr))
    if kind is ast.Subscript:
        return _may_be_module(file, expr.value, cls, functions, depth + 1)  # type: ignore[attr-defined]
    attr = _self_attribute(expr)
    if attr is not None:
        return cls is not None and (
            cls.name in file.plain_module_classes or _model_name(attr, file.options)  # type: ignore[attr-defined]
            or bool(file.layer_calls.within(cls))) and not _foreign_attribute(
            file, cls, attr, functions)
    if kind is ast.Attribute:
        return _model_name(expr.attr, file.options) or _may_be_module(  # type: ignore[attr-defined]
            file, expr.value, cls, functions, depth + 1)  # type: ignore[attr-defined]
    if kind is ast.Name:
        # a model's name, or a name the rule may follow to a module (anything but a
        # parameter no function around rebinds: the rule knows only its name then)
        name = expr.id  # type: ignore[attr-defined]
        if _model_name(name, file.options):
            return True
        if any(name in _stored_in(function) for function in functions):
            return _bound_to_module(file, name, cls, functions, depth)
        return not any(name in _parameters(function) for function in functions)
    return False


def _bound_to_module(file: _File, name: str, cls: ast.AST | None, functions: list[ast.AST],
                     depth: int) -> bool:
    """May a local the functions around bind be a module for the rule (forward_calls._name)?
    Not when every binding assigns a value that may not be one, or is a loop over a sliced
    ``ModuleList`` (which TorchScript calls only through ``forward``)."""
    bindings = _name_bindings(name, functions)
    if all(kind == "for" for kind, _ in bindings) and all(
            any(type(n) is ast.Slice for n in ast.walk(loop.iter))  # type: ignore[attr-defined]
            for _, loop in bindings):
        return False
    return any(kind != "assign" or _may_be_module(file, value, cls, functions, depth + 1)
               for kind, value in bindings)


def _name_bindings(name: str, functions: list[ast.AST]) -> list[tuple[str, ast.AST]]:
    """How the functions (nested ones too) bind ``name``: ("assign", value) for ``name =
    value``, ("for", loop) for a loop's target, ("other", node) for anything else (an
    unpacking, ``with``, a comprehension, an import, an augmented assignment...)."""
    found: list[tuple[str, ast.AST]] = []
    for function in functions:
        for node in ast.walk(function):
            kind = type(node)
            if kind is ast.Name:
                if node.id == name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    found.append(("other", node))
            elif (kind is ast.Assign and len(node.targets) == 1  # type: ignore[attr-defined]
                  or kind is ast.AnnAssign and node.value is not None) and type(  # type: ignore[attr-defined]
                    target := _single_target(node)) is ast.Name and target.id == name:  # type: ignore[union-attr]
                found.append(("assign", node.value))  # type: ignore[attr-defined]
            elif kind in (ast.For, ast.AsyncFor) and name in _target_names(node.target):  # type: ignore[attr-defined]
                found.append(("for", node))
            elif kind in (ast.arg, ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef,
                          ast.ClassDef, ast.alias, ast.Global, ast.Nonlocal,
                          *_MATCH_BINDERS) and name in _other_names(node):
                found.append(("other", node))
    # each assignment or loop target was also met as a stored Name: drop those
    accounted = sum(1 for kind, _ in found if kind == "assign") + sum(
        list(_target_names(node.target)).count(name)  # type: ignore[attr-defined]
        for kind, node in found if kind == "for")
    stored = [b for b in found if b[0] == "other" and type(b[1]) is ast.Name]
    rest = [b for b in found if b[0] != "other" or type(b[1]) is not ast.Name]
    return rest + stored[accounted:]


_MATCH_BINDERS = tuple(getattr(ast, k) for k in ("MatchAs", "MatchStar", "MatchMapping")
                       if hasattr(ast, k))


def _other_names(node: ast.AST) -> set[str]:
    kind = type(node)
    if kind is ast.arg:
        return {node.arg}  # type: ignore[attr-defined]
    if kind is ast.alias:
        return {node.asname or node.name.split(".", 1)[0]}  # type: ignore[attr-defined]
    if kind in (ast.Global, ast.Nonlocal):
        return set(node.names)  # type: ignore[attr-defined]
    found = getattr(node, "name", None) or getattr(node, "rest", None)
    return {found} if isinstance(found, str) else set()


def _foreign_attribute(file: _File, cls: ast.AST, attr: str, functions: list[ast.AST]) -> bool:
    """The class gives ``self.<attr>`` (or a local of that name) the result of another
    framework's or an inference engine's call (``cv2.dnn.readNet(...)``), spelt through a
    module-level import no function around the call rebinds: the rule's
    ``_self_attribute`` then knows it is no torch module."""
    scopes = _scopes(file.facts)  # type: ignore[arg-type]
    for node in ast.walk(cls):
        target = _single_target(node)
        if target is None or _self_attribute(target) != attr and not (
                type(target) is ast.Name and target.id == attr):  # type: ignore[attr-defined]
            continue
        value = node.value  # type: ignore[attr-defined]
        while type(value) is ast.Call:
            value = value.func
        quals = file.facts.qualnames_of(value)
        if quals and all(q.split(".", 1)[0] in _FOREIGN for q in quals) and _imported(
                scopes, value) and not _rebound(value, functions):
            return True
    return False


def _parameters(function: ast.AST) -> set[str]:
    return {a.arg for a in ast.walk(function.args)  # type: ignore[attr-defined]
            if type(a) is ast.arg}


def _stored_in(function: ast.AST) -> set[str]:
    """The names a function binds by assignment, loop, ``with``, comprehension (not its
    parameters: the rule knows nothing of those beyond their names)."""
    return {n.id for n in ast.walk(function)  # type: ignore[attr-defined]
            if type(n) is ast.Name and type(n.ctx) is ast.Store}  # type: ignore[attr-defined]


# ------------------------------------------------------------------ TL106
_CONV = re.compile(r"(?:Lazy)?(?:Conv|ConvTranspose)([123]d)")
_NORM = re.compile(r"(?:Lazy)?BatchNorm([123]d)")


class _ConvNorm:
    """Per file, for TL106: the dimensions of the convolutions that may keep their bias
    and of the batch norms, by call and by the names assigned them."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = weakref.proxy(facts)
        self.calls: dict[int, tuple[str, str]] = {}  # id(call) -> ("conv"|"bn", dim)
        for call in facts.nodes(ast.Call):
            found = self._layer(call)  # type: ignore[arg-type]
            if found is not None:
                self.calls[id(call)] = found
        kinds = set(self.calls.values())
        self.dims = {dim for kind, dim in kinds if kind == "conv" and ("bn", dim) in kinds}
        self.names: dict[str, set[tuple[str, str]]] = {}
        self.self_stores: list[tuple[ast.AST, str, str]] = []  # (assignment, kind, dim)
        if not self.dims:
            return
        for node in facts.nodes(ast.Assign, ast.AnnAssign):
            found = self.calls.get(id(node.value))  # type: ignore[attr-defined]
            if found is None:
                continue
            target = _single_target(node)
            if type(target) is ast.Name:
                self.names.setdefault(target.id, set()).add(found)
            elif _self_attribute(target) is not None:  # type: ignore[arg-type]
                self.self_stores.append((node, *found))

    def _layer(self, call: ast.Call) -> tuple[str, str] | None:
        func = call.func
        word = _last_name(func)
        if word is None:
            return None
        if not word.endswith("d") and not (type(func) is ast.Name and (
                word in self.facts.bindings or word in self.facts.aliases)):
            return None
        for qual in self.facts.qualnames_of(func):
            if not qual.startswith("torch.nn.") or qual.count(".") != 2:
                continue
            leaf = qual[len("torch.nn."):]
            match = _CONV.fullmatch(leaf)
            if match is not None and _may_keep_bias(call, ".Lazy" in qual):
                return "conv", match.group(1)
            match = _NORM.fullmatch(leaf)
            if match is not None:
                return "bn", match.group(1)
        return None

    def item(self, node: ast.AST | None) -> set[tuple[str, str]]:
        """What a sequence's item may be: a conv or batch norm call, or a name assigned
        one (the layer of a ``("name", layer)`` pair)."""
        if type(node) is ast.Tuple and len(node.elts) == 2 and (  # type: ignore[attr-defined]
                type(node.elts[0]) is ast.JoinedStr or type(  # type: ignore[attr-defined]
                node.elts[0]) is ast.Constant and type(node.elts[0].value) is str):  # type: ignore[attr-defined]
            node = node.elts[1]  # type: ignore[attr-defined]
        if type(node) is ast.Name:
            return self.names.get(node.id, set())  # type: ignore[attr-defined]
        found = self.calls.get(id(node))
        return {found} if found is not None else set()

    def pair(self, conv: ast.AST | None, bn: ast.AST | None) -> bool:
        dims = {dim for kind, dim in self.item(conv) if kind == "conv"}
        return bool(dims) and any(kind == "bn" and dim in dims for kind, dim in self.item(bn))


def _may_keep_bias(call: ast.Call, lazy: bool) -> bool:
    """conv_bias_fix's test: no starred argument, the bias absent or a literal True."""
    if any(type(a) is ast.Starred for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return False
    bias = next((k.value for k in call.keywords if k.arg == "bias"), None)
    position = 6 if lazy else 7
    if bias is None and len(call.args) > position:
        bias = call.args[position]
    return bias is None or type(bias) is ast.Constant and bias.value is True  # type: ignore[attr-defined]


def may_flag_tl106(facts: FileFacts, options: Options) -> bool:
    """A conv that may keep its bias directly followed by a batch norm of its dimension:
    next to each other in a list or ``nn.Sequential``, added to one owner by two
    statements, or stored on ``self`` in one module class (whose forward may chain
    them)."""
    found = facts.once("conv norm", lambda: _ConvNorm(facts))
    if not found.dims or _ported(facts.tree):
        return False  # code adapted from another code base keeps its checkpoints' biases
    ported = [c for c in facts.nodes(ast.ClassDef) if _ported(c)]

    def kept(node: ast.AST) -> bool:  # not in a class adapted from elsewhere
        return not ported or not any(_start(c) <= _start(node) and _end(node) <= _end(c)
                                     for c in ported)

    for node in facts.nodes(ast.List):
        items = [None if type(e) is ast.Starred else e for e in node.elts]  # type: ignore[attr-defined]
        if any(found.pair(a, b) for a, b in zip(items, items[1:])) and kept(node):
            return True
    for call in facts.nodes(ast.Call):
        word = _last_name(call.func)  # type: ignore[attr-defined]
        if word is None or word != "Sequential" and not (
                word in facts.bindings or word in facts.aliases):
            continue
        if "torch.nn.Sequential" in facts.qualnames_of(call.func):  # type: ignore[attr-defined]
            items = [None if type(a) is ast.Starred else a for a in call.args]  # type: ignore[attr-defined]
            if any(found.pair(a, b) for a, b in zip(items, items[1:])) and kept(call):
                return True
    if _added_in_sequence(facts, found, kept):
        return True
    if found.self_stores:
        file = _file(facts, options)
        stores = _Located(node for node, _, _ in found.self_stores)
        kinds = {id(node): (kind, dim) for node, kind, dim in found.self_stores}
        for cls in facts.nodes(ast.ClassDef):
            if cls.name not in file.plain_module_classes or not kept(cls):  # type: ignore[attr-defined]
                continue
            held: dict[str, set[tuple[str, str]]] = {}
            for node in stores.within(cls):
                held.setdefault(_self_attribute(_single_target(node)), set()).add(  # type: ignore[arg-type]
                    kinds[id(node)])
            if any(kind == "conv" and ("bn", dim) in held[bn]
                   for conv, bn in _forward_pairs(cls) if conv in held and bn in held
                   for kind, dim in held[conv]):
                return True
    return False


# a comment or docstring saying the code is taken from another code base (conv_bn.PORTED_NOTE)


def _ported(node: ast.AST | None) -> bool:
    """The docstring of a module or class says it is adapted from another code base (the
    rule also reads the file's header comments, which the ``ast`` has not)."""
    if node is None:
        return False
    body = node.body  # type: ignore[attr-defined]
    first = body[0] if body else None
    return type(first) is ast.Expr and type(first.value) is ast.Constant and type(  # type: ignore[attr-defined]
        first.value.value) is str and PORTED_NOTE.search(first.value.value) is not None  # type: ignore[attr-defined]


def _forward_pairs(cls: ast.AST) -> set[tuple[str, str]]:
    """(conv, norm) attributes the ``forward`` methods of ``cls`` chain:
    ``self.bn(self.conv(x))``, or ``x = self.conv(y)`` directly followed by
    ``x = self.bn(x)``."""
    pairs: set[tuple[str, str]] = set()
    for method in _defs_of(cls.body):  # type: ignore[attr-defined]
        if method.name != "forward":  # type: ignore[attr-defined]
            continue
        for node in ast.walk(method):
            if type(node) is ast.Call:
                outer = _self_attribute(node.func)  # type: ignore[attr-defined]
                inner = _one_argument(node)  # type: ignore[arg-type]
                if outer is not None and type(inner) is ast.Call:
                    attr = _self_attribute(inner.func)  # type: ignore[union-attr]
                    if attr is not None:
                        pairs.add((attr, outer))
                continue
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if type(block) is not list:
                    continue
                steps = [_self_call_assign(s) for s in block]
                for first, second in zip(steps, steps[1:]):
                    if first is not None and second is not None and type(
                            second[2]) is ast.Name and second[2].id == first[0]:  # type: ignore[attr-defined]
                        pairs.add((first[1], second[1]))
    return pairs


def _one_argument(call: ast.Call) -> ast.expr | None:
    """The one argument of a call given one, neither starred nor by keyword."""
    if len(call.args) != 1 or call.keywords or type(call.args[0]) is ast.Starred:
        return None
    return call.args[0]


def _self_call_assign(stmt: ast.AST) -> tuple[str, str, ast.expr] | None:
    """('x', 'conv', <arg>) for ``x = self.conv(<arg>)``."""
    target = _single_target(stmt)
    value = getattr(stmt, "value", None)
    if type(target) is not ast.Name or type(value) is not ast.Call:
        return None
    attr = _self_attribute(value.func)  # type: ignore[union-attr]
    argument = _one_argument(value)  # type: ignore[arg-type]
    if attr is None or argument is None:
        return None
    return target.id, attr, argument  # type: ignore[union-attr]


def _added_in_sequence(facts: FileFacts, found: _ConvNorm,
                       kept: Callable[[ast.AST], bool]) -> bool:
    """``layers.append(conv)`` (or ``layers += [.., conv]``, ``layers = [.., conv]``,
    ``owner.add_module(name, conv)``) and, by another statement, the batch norm added
    first to the same owner (the rule wants them one after the other)."""
    last: dict[str, set[str]] = {}  # owner -> dims of the convs added last
    first: dict[str, list[ast.AST]] = {}  # owner -> the items added first
    for stmt in (*facts.nodes(ast.Expr), *facts.nodes(ast.AugAssign),
                 *facts.nodes(ast.Assign, ast.AnnAssign)):
        added = _added(stmt)
        if added is None or not added[1] or not kept(stmt):
            continue
        owner, items = added
        dims = {dim for kind, dim in found.item(items[-1]) if kind == "conv"}
        if dims:
            last.setdefault(owner, set()).update(dims)
        if type(stmt) not in (ast.Assign, ast.AnnAssign) and items[0] is not None:
            first.setdefault(owner, []).append(items[0])
    return any(kind == "bn" and dim in last[owner]
               for owner, items in first.items() if owner in last
               for item in items for kind, dim in found.item(item))


def _added(stmt: ast.AST) -> tuple[str, list[ast.AST | None]] | None:
    """(owner, the items it is given) for the statements of :func:`_added_in_sequence`."""
    kind = type(stmt)
    if kind is ast.Expr:
        call = stmt.value  # type: ignore[attr-defined]
        if type(call) is not ast.Call or type(call.func) is not ast.Attribute or any(
                type(a) is ast.Starred for a in call.args) or call.keywords:
            return None
        method = call.func.attr
        if method == "add_module" and len(call.args) == 2:
            owner = _dotted(call.func.value)
            return None if owner is None else ("add_module:" + owner, [call.args[1]])
        if method not in ("append", "extend") or len(call.args) != 1:
            return None
        if method == "append":
            owner = _dotted(call.func.value)
            return None if owner is None else (owner, [call.args[0]])
        target, items = call.func.value, call.args[0]
    elif kind is ast.AugAssign:
        if type(stmt.op) is not ast.Add:  # type: ignore[attr-defined]
            return None
        target, items = stmt.target, stmt.value  # type: ignore[attr-defined]
    else:
        target, items = _single_target(stmt), stmt.value  # type: ignore[attr-defined]
    if type(items) not in (ast.List, ast.Tuple):
        return None
    owner = _dotted(target)
    if owner is None:
        return None
    return owner, [None if type(e) is ast.Starred else e for e in items.elts]  # type: ignore[union-attr]


# ------------------------------------------------------------------ TL104
# the calls that make a tensor (torch_facts.TENSOR_FACTORIES and the rule's others)
_TENSOR_FACTORIES = frozenset(f"torch.{name}" for name in (
    "tensor", "zeros", "ones", "empty", "full", "eye", "rand", "randn", "randint", "randperm",
    "arange", "linspace", "logspace", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like", "as_tensor", "range", "from_numpy", "normal",
    "Tensor", "FloatTensor", "LongTensor", "BoolTensor", "tril_indices", "triu_indices"))
# methods that keep a tensor a tensor (the rule's _TENSOR_METHODS), and those that reshape
_TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "view", "reshape",
    "unsqueeze", "squeeze", "t", "transpose", "permute", "expand", "repeat", "flatten",
    "contiguous", "clone", "cuda", "to", "cpu", "mul", "add", "div", "sub", "sqrt", "exp",
    "log", "triu", "tril", "neg", "abs", "reciprocal", "unfold", "flip", "__neg__"})
_SEQUENCE_DATA = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Set, ast.Call,
                  ast.Name)


def may_flag_tl104(facts: FileFacts, options: Options) -> bool:
    """``__init__`` of a module class stores on ``self.X`` a tensor made by a factory
    (through tensor methods, or a local assigned one) with no ``device=``, that is not
    surely a 0-d constant, not registered by name in the class, and read by another method
    of the class."""
    if facts.test_file:  # the rule is silent in test code
        return False
    file = _file(facts, options)
    stores = _containers(facts).stores
    for method in file.methods:
        if method.name != "__init__":  # type: ignore[attr-defined]
            continue
        found = stores.within(method)
        factories = {t.id for s in found  # type: ignore[attr-defined]
                     if type(t := _single_target(s)) is ast.Name
                     and _unregistered_tensor(facts, s.value)}  # type: ignore[attr-defined]
        for store in found:
            attr = _self_attribute(_single_target(store))  # type: ignore[arg-type]
            if attr is None or attr == "example_input_array":
                continue
            value = store.value  # type: ignore[attr-defined]
            if type(value) is ast.Name and value.id in factories or _unregistered_tensor(
                    facts, value):
                cls = _class_of(facts, method)
                if cls is not None and _read_elsewhere(cls, method, attr):
                    return True
    return False


def _unregistered_tensor(facts: FileFacts, value: ast.AST) -> bool:
    """A factory call (through tensor methods) without ``device=``, whose data is not
    surely one number (``torch.tensor(dim ** -0.5)``)."""
    reshaped = False
    while type(value) is ast.Call and type(value.func) is ast.Attribute and (  # type: ignore[attr-defined]
            value.func.attr in _TENSOR_METHODS) and not _tensor_factory(facts, value):  # type: ignore[attr-defined]
        reshaped |= value.func.attr in ("view", "reshape", "unsqueeze", "expand", "repeat",  # type: ignore[attr-defined]
                                        "flatten", "permute", "transpose", "t", "unfold")
        value = value.func.value  # type: ignore[attr-defined]
    if type(value) is not ast.Call or not _tensor_factory(facts, value):
        return False
    if any(k.arg == "device" for k in value.keywords):  # type: ignore[attr-defined]
        return False
    if not reshaped and facts.qualnames_of(value.func) <= {  # type: ignore[attr-defined]
            "torch.tensor", "torch.as_tensor"}:
        data = next((a for a in value.args if type(a) is not ast.Starred), None)  # type: ignore[attr-defined]
        if data is not None and type(data) not in _SEQUENCE_DATA:
            return False  # may be one number: a 0-d tensor works on any device
    return True


def _tensor_factory(facts: FileFacts, call: ast.AST) -> bool:
    return not facts.qualnames_of(call.func).isdisjoint(_TENSOR_FACTORIES)  # type: ignore[attr-defined]


def _class_of(facts: FileFacts, method: ast.AST) -> ast.AST | None:
    return next((c for c in facts.nodes(ast.ClassDef) if method in c.body  # type: ignore[attr-defined]
                 or _start(c) < _start(method) <= _end(c) and any(
                     m is method for m in _defs_of(c.body))), None)  # type: ignore[attr-defined]


def _read_elsewhere(cls: ast.AST, init: ast.AST, attr: str) -> bool:
    """``self.<attr>`` in a method of ``cls`` other than ``__init__`` (a superset of the
    methods forward runs), and no ``register_buffer("<attr>", ...)``/
    ``register_parameter`` in the class."""
    read = False
    for node in ast.walk(cls):
        kind = type(node)
        if kind is ast.Call and type(node.func) is ast.Attribute and node.func.attr in (  # type: ignore[attr-defined]
                "register_buffer", "register_parameter") and node.args and type(  # type: ignore[attr-defined]
                node.args[0]) is ast.Constant and node.args[0].value == attr:  # type: ignore[attr-defined]
            return False
        if not read and kind in _FUNCTIONS and node is not init:
            read = any(_self_attribute(n) == attr for n in ast.walk(node))
    return read
