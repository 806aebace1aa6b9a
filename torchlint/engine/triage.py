"""The triage pass: which rules can fire on a file, decided from CPython's ``ast``.

Every file gets ``ast.parse`` (a tenth of libcst's parse). One walk of that tree computes
:class:`FileFacts`: the qualified names the file's names and attribute chains may stand
for (through every import and module-level alias), the names called, the keyword
arguments, the methods defined, the classes that may be module classes, and where
functions, loops and stores on ``self`` are. A rule declares in ``requires`` a
:class:`Trigger` over these facts; a rule whose trigger does not hold is not run, and a
file on which no enabled rule can fire is never parsed by libcst.

A trigger must over-approximate its rule: whenever the rule reports something, its
trigger holds. The facts are built to make that easy: each one is a superset of what
:class:`~torchlint.analysis.context.FileContext` can conclude (every binding of a name
counts, wherever it is, and a class with a base that is not surely a plain class may be a
module class).
"""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from torchlint.analysis.ast_names import chain as _chain
from torchlint.analysis.layer_table import FLAT, LAYERS, RANKED, size_parameters
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import canonical

if TYPE_CHECKING:
    from torchlint.analysis.project import FileProject

__all__ = ["FileFacts", "Trigger", "all_of", "any_of", "api", "attribute", "calls",
           "calls_method", "check", "biased_call", "chained_call", "defines", "defines_matching", "facts_of", "from_data", "identifier", "imports",
           "keyword", "load_checks", "loop_call", "loop_sum", "loops", "module_class", "module_method_calls",
           "self_store", "self_store_call", "loop_calls_all", "calls_named", "sequence_call", "size_chain",
           "training_loop_call", "triage"]


T = TypeVar("T")


# ------------------------------------------------------------------ facts
@dataclass
class _Function:
    name: str
    owner: str | None  # the class whose body holds the def directly
    calls: set[str] = field(default_factory=set)  # candidate qualified names called
    call_words: set[str] = field(default_factory=set)  # last names of every callee
    # name -> kinds of the values assigned to it ("list", "dict", "" for anything else)
    locals_assigned: dict[str, set[str]] = field(default_factory=dict)
    self_values: list[ast.expr] = field(default_factory=list)  # values stored on self.X
    # dotted callees of the calls a value stored on self.X starts with (methods chained on
    # a call seen through: ``torch.zeros(3).float()``)
    self_calls: list[tuple[str, str]] = field(default_factory=list)
    # what containers made or grown here may hold (elements of list displays and
    # comprehensions assigned to a name or attribute, arguments of append/insert/extend and
    # of ``+=``): the dotted callees of the calls among them, their last names, and whether
    # a bare name is among them
    item_chains: list[tuple[str, str]] = field(default_factory=list)
    item_words: set[str] = field(default_factory=set)
    item_name: bool = False


@dataclass(frozen=True)
class FileFacts:
    """What one ``ast`` walk learnt about a file (see the module's docstring)."""

    qualnames: frozenset[str]  # every qualified name a name or attribute chain may mean
    calls: frozenset[str]  # the qualified names a callee may mean
    attributes: frozenset[str]  # every attribute name (``x.attr``)
    method_calls: frozenset[str]  # attribute names called (``x.attr(...)``)
    call_words: frozenset[str]  # last names of every callee (``f(...)``, ``x.f(...)``)
    names: frozenset[str]  # every identifier: names, attributes, imports, defs, params
    keywords: frozenset[str]  # keyword argument names
    functions: frozenset[str]  # names of every def
    top_modules: frozenset[str]  # first part of every absolute import
    star_import: bool  # ``from x import *`` somewhere
    loops: bool  # a for/while loop or a comprehension
    loop_calls: frozenset[str]  # last names of the callees inside for/while loops' bodies
    # ``name += x``, ``names[k] += x`` or ``name = name + x`` inside a for/while loop, or
    # ``obj.name += x``, ``obj.names[k] += x`` anywhere (x no literal)
    loop_sums: bool
    # per for/while loop: the last names of the callees in its body (nested blocks, loops
    # and functions included), and whether it walks data (see _walks_data)
    loop_bodies: tuple[tuple[frozenset[str], bool], ...]
    # callees given a list, tuple or comprehension (qualified names and last names), and
    # those given one holding another
    sequence_calls: frozenset[str]
    nested_sequence_calls: frozenset[str]
    # class name -> candidate qualified names of its bases ("" for a base that is no
    # dotted name); local classes by name
    class_bases: tuple[tuple[str, tuple[str, ...]], ...]
    # methods of classes: (class, def name, callees, callee words, kinds of containers
    # stored on self, callees of the calls stored on self, whether a container it makes or
    # grows may hold a layer: a bare name, a call of a torch.nn class, of a class of the
    # file or of a name from another module than torch)
    methods: tuple[tuple[str, str, frozenset[str], frozenset[str], frozenset[str],
                         frozenset[str], bool], ...]
    # the qualified names a callee may mean whose call's result has a method called on it
    # at once (``nn.Parameter(w).cuda()``)
    chained_calls: frozenset[str] = frozenset()
    # the qualified names a callee may mean, of the calls with no ``*``/``**`` argument that
    # may keep a bias: no ``bias`` argument, or a literal True (positional: the 8th, the
    # 7th for a ``Lazy`` class)
    biased_calls: frozenset[str] = frozenset()
    # the calls a size chain may be made of (see _size_sites)
    size_sites: tuple[str, ...] = ()
    # the tree itself, and its nodes by class (every node the walk enters: no names,
    # constants, contexts or operators), for the rules' screening checks (see check)
    tree: ast.Module | None = field(default=None, compare=False, repr=False)
    index: dict[type, list[ast.AST]] = field(default_factory=dict, compare=False, repr=False)
    # imported names -> what they import; module-level ``name = ...`` -> the values
    bindings: dict[str, set[str]] = field(default_factory=dict, compare=False, repr=False)
    aliases: dict[str, list[ast.expr]] = field(default_factory=dict, compare=False,
                                               repr=False)
    # the file is test code by its path (see analysis.test_paths); None: not known (the
    # facts of a text alone), so a check must not rule anything out on it
    test_file: bool | None = field(default=None, compare=False)
    # the project as the file sees it (None: no project knowledge), and whether it is
    # known: the facts of a text alone do not know it, so a check must not rule anything
    # out on what the project's other files may say. A check that reads other files
    # records them as dependencies of the file in ``project``
    project: FileProject | None = field(default=None, compare=False, repr=False)
    project_known: bool = field(default=False, compare=False)
    # the text was given stand-in imports for the names its star imports bind (see
    # engine.screen): the facts follow them, but a screening check may read import
    # statements otherwise than the rules read a star import, so every check holds
    checks_hold: bool = field(default=False, compare=False)
    # what the screening checks computed of this file, dropped with the facts (a copy made
    # by dataclasses.replace starts empty)
    computed: dict[object, object] = field(default_factory=dict, init=False, compare=False,
                                           repr=False)

    def once(self, key: object, make: Callable[[], T]) -> T:
        """``make()``, computed once per file and ``key`` (several checks of a family ask
        the same question of a file)."""
        if key not in self.computed:
            self.computed[key] = make()
        return self.computed[key]  # type: ignore[return-value]

    def qualnames_of(self, node: ast.AST) -> set[str]:
        """The qualified names a dotted name (``F.relu``, ``torch.nn.Linear``) may stand for
        through the file's imports and module-level aliases; empty for a name bound
        otherwise (a local, a parameter, a class of the file) or for no dotted name."""
        chain = _chain(node)
        return set() if chain is None else _resolve(self.bindings, self.aliases, *chain)

    def nodes(self, *kinds: type) -> Iterator[ast.AST]:
        """The nodes of the classes ``kinds`` (``ast.Call``, ``ast.For``), in no set order."""
        for kind in kinds:
            yield from self.index.get(kind, ())

    def module_classes(self, options: Options) -> frozenset[str]:
        """Classes that may be module classes: a base that is a module base of ``options``,
        a class of this file that may be one, or a class of another module that may derive
        from one (one of the project, as the project tells when it is known). Computed
        once per options: most checks ask."""
        return self.once(("module classes", options), lambda: _module_classes(self, options))


def _module_classes(facts: FileFacts, options: Options) -> frozenset[str]:
    found: set[str] = set()
    bases: dict[str, set[str]] = {}
    for cls, candidates in facts.class_bases:  # two classes of one name: either
        bases.setdefault(cls, set()).update(candidates)
    changed = True
    while changed:
        changed = False
        for cls, candidates in bases.items():
            if cls in found:
                continue
            for qual in candidates:
                if qual in found or qual in options.module_bases or _foreign(qual) and (
                        _project_module_class(facts, qual, options)):
                    found.add(cls)
                    changed = True
                    break
    return frozenset(found)


def _project_module_class(facts: FileFacts, qual: str, options: Options) -> bool:
    """May ``qual``, a class from another module, be a module class? As the analysis
    decides (``FileContext.is_module_class_name``) when the project is known: a class of
    the project that derives from a module base; a class of no file of the project is
    none. Without the project: it may."""
    project = facts.project
    if not facts.project_known:
        return True
    if project is None:
        return False
    absolute = project.absolute(qual)  # (a relative import: of the file's own package)
    if absolute is None:
        return True  # not resolved here: it may
    return project.owns(absolute) and project.derives_from(absolute, options.module_bases)


def _foreign(qual: str) -> bool:
    """A class from another module that is not torch's nor a builtin: a project class may
    derive from a module class (the project knowledge follows it)."""
    return bool(qual) and "." in qual and not qual.startswith(("torch.", "builtins."))


# nodes without names, calls or loops below them: the walk never enters them
_LEAVES = frozenset({ast.Constant, ast.Load, ast.Store, ast.Del, ast.Pass, ast.Break,
                     ast.Continue, *ast.operator.__subclasses__(),
                     *ast.unaryop.__subclasses__(), *ast.cmpop.__subclasses__(),
                     *ast.boolop.__subclasses__()})


def _node_classes(base: type) -> Iterator[type]:
    for kind in base.__subclasses__():
        yield kind
        yield from _node_classes(kind)


# the node classes the walk enters (a Name is noted where it is met, without a call)
_WALKED = frozenset(kind for kind in _node_classes(ast.AST)
                    if kind not in _LEAVES and kind is not ast.Name)


_ENTERED = _WALKED | {ast.Name}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes (not its context or operator)."""
    found = _FIELDS.get(kind)
    if found is None:
        found = _FIELDS[kind] = tuple(
            f for f in kind._fields if f not in ("ctx", "op", "ops"))  # type: ignore[attr-defined]
    return found


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` the facts walk enters: no constants, contexts or
    operators (for a check that walks part of a tree itself)."""
    found: list[ast.AST] = []
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        for item in value if type(value) is list else (value,):
            if type(item) in _ENTERED:
                found.append(item)
    return found

# the node classes the walk notes something of, beside walking their children
_NOTED = frozenset({ast.Attribute, ast.Call, ast.FunctionDef, ast.AsyncFunctionDef,
                    ast.ClassDef, ast.Import, ast.ImportFrom, ast.For, ast.AsyncFor, ast.While,
                    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Assign,
                    ast.AnnAssign, ast.AugAssign, ast.arg})


class _Walker:
    def __init__(self) -> None:
        self.bindings: dict[str, set[str]] = {}  # name -> qualified names it may be bound to
        self.aliases: dict[str, list[ast.expr]] = {}  # module-level ``name = a.b``
        self.chains: list[tuple[str, str]] = []  # (head name, ".rest")
        self.call_chains: list[tuple[str, str, _Function | None, ast.Call]] = []
        self.receiver_chains: list[tuple[str, str]] = []  # ``F(...)`` in ``F(...).m(...)``
        self.attributes: set[str] = set()
        self.method_calls: set[str] = set()
        self.call_words: set[str] = set()
        self.names: set[str] = set()
        self.keywords: set[str] = set()
        self.functions: set[str] = set()
        self.top_modules: set[str] = set()
        self.star = False
        self.loops = False
        self.loop_depth = 0  # inside the body of how many for/while loops
        self.in_loops = 0  # inside how many for/while statements (their else clause too)
        # calls given a list/tuple/comprehension: (callee chain, callee word, 1 or 2 when it
        # holds another one)
        self.sequence_calls: list[tuple[tuple[str, str] | None, str | None, int]] = []
        self.open_loops: list[tuple[set[str], bool]] = []  # (callee words, walks data)
        self.loop_facts: list[tuple[frozenset[str], bool]] = []
        self.loop_calls: set[str] = set()
        self.loop_sums = False
        self.classes: list[tuple[str, list[ast.expr]]] = []
        self.methods: list[_Function] = []
        # (callee chain, callee word, call, in a method of a class)
        self.size_calls: list[tuple[tuple[str, str] | None, str, ast.Call, bool]] = []
        self.name_nodes: list[ast.AST] = []
        self.index: dict[type, list[ast.AST]] = {ast.Name: self.name_nodes}
        self.resolved: dict[tuple[str, str], set[str]] = {}

    # the walk keeps the innermost function (lambdas seen through) and the class holding it
    def walk(self, node: ast.AST, function: _Function | None, klass: str | None) -> None:
        kind = type(node)
        if kind is ast.Name:
            self.name_nodes.append(node)
            self.names.add(node.id)  # type: ignore[attr-defined]
            return
        found = self.index.get(kind)
        if found is None:
            self.index[kind] = [node]
        else:
            found.append(node)
        if kind not in _NOTED:
            pass  # only its children matter
        elif kind is ast.Attribute:
            self.attributes.add(node.attr)  # type: ignore[attr-defined]
            self.names.add(node.attr)  # type: ignore[attr-defined]
            chain = _chain(node)
            if chain is not None:
                self.chains.append(chain)
                self._note_dotted(node.value)  # type: ignore[attr-defined]
                return
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            chain = _chain(func)
            word = func.attr if type(func) is ast.Attribute else (
                func.id if type(func) is ast.Name else None)
            if type(func) is ast.Attribute:
                self.method_calls.add(func.attr)
                if function is not None and func.attr in _GROWTH:
                    _note_items(function, _grown_items(node))  # type: ignore[arg-type]
                receiver = func.value
                if type(receiver) is ast.Call:
                    inner = _chain(receiver.func)
                    if inner is not None:
                        self.receiver_chains.append(inner)
            if word is not None:
                self.call_words.add(word)
                if self.loop_depth:
                    self.loop_calls.add(word)
                    for words, _ in self.open_loops:
                        words.add(word)
                if function is not None:
                    function.call_words.add(word)
            if chain is not None:
                self.call_chains.append((*chain, function, node))  # type: ignore[arg-type]
            if word is not None and (word in _SIZE_WORDS or word[:1].isupper()):
                self.size_calls.append((chain, word, node, function is not None and (  # type: ignore[arg-type]
                    function.owner is not None)))
            nesting = _sequence_nesting(node)  # type: ignore[arg-type]
            if nesting:
                self.sequence_calls.append((chain, word, nesting))
            # the children here: a keyword is noted without a call of its own, and a dotted
            # callee as its own step would (a Name, or an Attribute chain noted whole),
            # without reading its chain again
            if chain is None:
                self.walk(func, function, klass)
            else:
                if type(func) is ast.Attribute:
                    self.chains.append(chain)
                self._note_dotted(func)
            for item in node.args:  # type: ignore[attr-defined]
                if type(item) in _ENTERED:
                    self.walk(item, function, klass)
            keywords = node.keywords  # type: ignore[attr-defined]
            if keywords:
                noted = self.index.get(ast.keyword)
                if noted is None:
                    noted = self.index[ast.keyword] = []
                for kw in keywords:
                    noted.append(kw)
                    if kw.arg is not None:
                        self.keywords.add(kw.arg)
                    if type(kw.value) in _ENTERED:
                        self.walk(kw.value, function, klass)
            return
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            self.functions.add(node.name)  # type: ignore[attr-defined]
            self.names.add(node.name)  # type: ignore[attr-defined]
            for sub in (*node.decorator_list, *getattr(node, "type_params", ())):  # type: ignore[attr-defined]
                self.walk(sub, function, klass)
            self.walk(node.args, function, klass)  # type: ignore[attr-defined]
            if node.returns is not None:  # type: ignore[attr-defined]
                self.walk(node.returns, function, klass)  # type: ignore[attr-defined]
            inner = _Function(node.name, klass)  # type: ignore[attr-defined]
            if klass is not None:
                self.methods.append(inner)
            for sub in node.body:  # type: ignore[attr-defined]
                self.walk(sub, inner, None)
            return
        elif kind is ast.ClassDef:
            self.names.add(node.name)  # type: ignore[attr-defined]
            self.classes.append((node.name, node.bases))  # type: ignore[attr-defined]
            for sub in (*node.decorator_list, *getattr(node, "type_params", ()),  # type: ignore[attr-defined]
                        *node.bases, *node.keywords):  # type: ignore[attr-defined]
                self.walk(sub, function, klass)
            for sub in node.body:  # type: ignore[attr-defined]
                self.walk(sub, None, node.name)  # type: ignore[attr-defined]
            return
        elif kind is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                self.top_modules.add(alias.name.split(".", 1)[0])
                self.names.update(alias.name.split("."))
                if alias.asname:
                    self._bind(alias.asname, alias.name)
                else:
                    top = alias.name.split(".", 1)[0]
                    self._bind(top, top)
            return
        elif kind is ast.ImportFrom:
            module = node.module or ""  # type: ignore[attr-defined]
            if node.level:  # type: ignore[attr-defined]
                # a project module, never torch
                module = "." * node.level + module  # type: ignore[attr-defined]
            else:
                self.top_modules.add(module.split(".", 1)[0])
            self.names.update(module.split("."))
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name == "*":
                    self.star = True
                    continue
                self.names.add(alias.name)
                qual = f"{module}.{alias.name}" if not module.endswith(".") else \
                    f"{module}{alias.name}"
                self._bind(alias.asname or alias.name, qual)
            return
        elif kind in (ast.For, ast.AsyncFor, ast.While):
            self.loops = True
            self.in_loops += 1
            for child in ast.iter_child_nodes(node):
                if child in node.body:  # type: ignore[attr-defined]
                    continue
                self.walk(child, function, klass)
            self.loop_depth += 1
            data = kind is not ast.While and _walks_data(node.iter)  # type: ignore[attr-defined]
            self.open_loops.append((set(), data))
            for child in node.body:  # type: ignore[attr-defined]
                self.walk(child, function, klass)
            words, _ = self.open_loops.pop()
            self.loop_facts.append((frozenset(words), data))
            self.loop_depth -= 1
            self.in_loops -= 1
            return
        elif kind in (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
            self.loops = True
        elif kind in (ast.Assign, ast.AnnAssign):
            self._assignment(node, function, klass)
            if self.in_loops and kind is ast.Assign and _sums_into(node):
                self.loop_sums = True
        elif kind is ast.AugAssign:
            if function is not None and type(node.op) is ast.Add:  # type: ignore[attr-defined]
                value = node.value  # type: ignore[attr-defined]
                _note_items(function, _made_items(value, grown=True) or [value])
            if type(node.op) is ast.Add and _may_sum_graph(  # type: ignore[attr-defined]
                    node, self.in_loops > 0):  # type: ignore[arg-type]
                self.loop_sums = True
        elif kind is ast.arg:
            self.names.add(node.arg)  # type: ignore[attr-defined]
        fields = _FIELDS.get(kind) or _fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            child = type(value)
            if child is list:
                for item in value:  # type: ignore[union-attr]
                    child = type(item)
                    if child is ast.Name:  # the commonest node, kept here without a call
                        self.name_nodes.append(item)
                        self.names.add(item.id)  # type: ignore[attr-defined]
                    elif child in _WALKED:
                        self.walk(item, function, klass)
            elif child is ast.Name:
                self.name_nodes.append(value)  # type: ignore[arg-type]
                self.names.add(value.id)  # type: ignore[union-attr]
            elif child in _WALKED:
                self.walk(value, function, klass)  # type: ignore[arg-type]

    def _note_dotted(self, value: ast.expr) -> None:
        """A dotted name noted whole (a callee ``a.b.c``, or the ``a.b`` below an attribute
        the walk has met): its attributes and its head, as the walk would note them one by
        one."""
        while type(value) is ast.Attribute:
            found = self.index.get(ast.Attribute)
            if found is None:
                self.index[ast.Attribute] = [value]
            else:
                found.append(value)
            self.attributes.add(value.attr)  # type: ignore[attr-defined]
            self.names.add(value.attr)  # type: ignore[attr-defined]
            value = value.value  # type: ignore[attr-defined]
        self.name_nodes.append(value)
        self.names.add(value.id)  # type: ignore[attr-defined]

    def _bind(self, name: str, qual: str) -> None:
        self.bindings.setdefault(name, set()).add(qual)
        self.names.add(name)

    def _assignment(self, node: ast.AST, function: _Function | None, klass: str | None) -> None:
        if type(node) is ast.Assign:
            targets, value = node.targets, node.value  # type: ignore[attr-defined]
        else:
            targets, value = [node.target], node.value  # type: ignore[attr-defined]
        if value is None:
            return
        if function is not None:
            _note_items(function, _made_items(value))
        for target in targets:
            if type(target) is ast.Name:
                if function is None and klass is None:
                    self.aliases.setdefault(target.id, []).append(value)
                elif function is not None:
                    function.locals_assigned.setdefault(target.id, set()).add(
                        _container_kind(value))
            elif function is not None and type(target) is ast.Attribute and type(
                    target.value) is ast.Name and target.value.id == "self":
                function.self_values.append(value)
                function.self_calls.extend(_chained_callees(value))

    # ------------------------------------------------------------ resolution
    def resolve(self, head: str, rest: str) -> set[str]:
        """The qualified names ``head + rest`` may stand for (kept: one dotted name recurs
        through a file; callers do not change the set)."""
        found = self.resolved.get((head, rest))
        if found is None:
            found = self.resolved[head, rest] = _resolve(self.bindings, self.aliases, head,
                                                         rest)
        return found

    def facts(self) -> FileFacts:
        qualnames: set[str] = set()
        for head, rest in self.chains:
            qualnames |= self.resolve(head, rest)
        for head in self.names & (self.bindings.keys() | self.aliases.keys()):
            qualnames |= self.resolve(head, "")
        calls: set[str] = set()
        biased: set[str] = set()
        for head, rest, function, call in self.call_chains:
            found = self.resolve(head, rest)
            if not found:
                continue
            calls |= found
            if function is not None:
                function.calls |= found
            # (whether the call may keep a layer's bias matters only for a name it means)
            lazy, other = _may_keep_bias(call)
            if lazy or other:
                biased.update(q for q in found if (lazy if ".Lazy" in q else other))
        qualnames |= calls
        sequences: dict[int, set[str]] = {1: set(), 2: set()}
        for chain, word, nesting in self.sequence_calls:
            named = (self.resolve(*chain) if chain is not None else set()) | (
                {word} if word is not None else set())
            sequences[1] |= named
            if nesting == 2:
                sequences[2] |= named
        class_bases = tuple(
            (cls, tuple(sorted({q for base in bases for q in self._base_candidates(base)})))
            for cls, bases in self.classes)
        local_classes = {cls for cls, _ in self.classes}
        methods = tuple((f.owner, f.name, frozenset(f.calls), frozenset(f.call_words),
                         frozenset(_stored_kinds(f)),
                         frozenset(q for chain in f.self_calls for q in self.resolve(*chain)),
                         f.item_name or not local_classes.isdisjoint(f.item_words)
                         or _may_build_layer(
                             {q for chain in f.item_chains for q in self.resolve(*chain)}))
                        for f in self.methods if f.owner is not None)
        return FileFacts(frozenset(qualnames), frozenset(calls), frozenset(self.attributes),
                         frozenset(self.method_calls), frozenset(self.call_words),
                         frozenset(self.names), frozenset(self.keywords),
                         frozenset(self.functions), frozenset(self.top_modules), self.star,
                         self.loops, frozenset(self.loop_calls), self.loop_sums,
                         tuple(self.loop_facts), frozenset(sequences[1]), frozenset(sequences[2]),
                         class_bases, methods,  # type: ignore[arg-type]
                         frozenset(q for chain in self.receiver_chains
                                   for q in self.resolve(*chain)),
                         frozenset(biased))

    def _base_candidates(self, base: ast.expr) -> set[str]:
        chain = _chain(base)
        if chain is None:
            return {""} if type(base) is not ast.Call else {"?"}
        head, rest = chain
        found = set(self.resolve(head, rest))
        if not rest and any(head == cls for cls, _ in self.classes):
            found.add(head)  # a class of this file
        if not found and head not in self.bindings and head not in self.aliases:
            return {""}
        return found or {"?"}


_DATA_WORDS = ("loader", "dataset", "batches")


_SEQUENCES = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)


def _sequence_nesting(call: ast.Call) -> int:
    """2 when an argument is a list, tuple or comprehension holding another one, 1 when an
    argument is one, else 0."""
    found = 0
    for arg in (*call.args, *(kw.value for kw in call.keywords)):
        if type(arg) in _SEQUENCES:
            found = max(found, 1)
            inner = [arg.elt] if type(arg) in (ast.ListComp, ast.GeneratorExp) else \
                arg.elts  # type: ignore[attr-defined]
            if any(type(e) in _SEQUENCES for e in inner):
                return 2
    return found


def _walks_data(iterable: ast.expr) -> bool:
    """``for x in train_loader`` / ``enumerate(tqdm(self.val_dataloader()))``: a name or
    attribute in the iterable whose last part holds loader, dataset or batches."""
    for node in ast.walk(iterable):
        word = node.id if type(node) is ast.Name else (  # type: ignore[attr-defined]
            node.attr if type(node) is ast.Attribute else None)  # type: ignore[attr-defined]
        if word is not None and any(w in word.lower() for w in _DATA_WORDS):
            return True
    return False


def _may_sum_graph(node: ast.AugAssign, looped: bool) -> bool:
    """``total += x`` / ``totals[k] += x`` in a loop, or ``self.total += x`` /
    ``self.totals[k] += x`` anywhere (a total kept on an object outlives the call), where
    ``x`` is no literal."""
    if type(node.value) is ast.Constant:
        return False
    target = node.target
    if type(target) is ast.Subscript:
        target = target.value  # type: ignore[assignment]
    if type(target) is ast.Name:
        return looped
    return type(target) is ast.Attribute


_GROWTH = frozenset({"append", "insert", "extend"})
_DISPLAYS = (ast.List, ast.Tuple, ast.Set)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)


def _made_items(value: ast.expr, *, grown: bool = False) -> list[ast.expr]:
    """The items of a list display or comprehension, of ``list(...)`` (its argument's items)
    and, for ``+=`` (``grown``), of a tuple too; nothing for other values."""
    kind = type(value)
    if kind in _DISPLAYS:
        return [e.value if type(e) is ast.Starred else e for e in value.elts]  # type: ignore[attr-defined]
    if kind in _COMPREHENSIONS:
        return [value.elt]  # type: ignore[attr-defined]
    if kind is ast.Call and not grown:
        func = value.func  # type: ignore[attr-defined]
        word = func.attr if type(func) is ast.Attribute else (
            func.id if type(func) is ast.Name else None)
        if word in ("list", "tuple"):
            items = []
            for arg in value.args:  # type: ignore[attr-defined]
                items += _made_items(arg, grown=True) or [arg]
            return items
    return []


def _grown_items(call: ast.Call) -> list[ast.expr]:
    """What ``x.append(v)``, ``x.insert(i, v)`` and ``x.extend(vs)`` may add."""
    word = call.func.attr  # type: ignore[attr-defined]
    items: list[ast.expr] = list(call.args) + [kw.value for kw in call.keywords]
    if word == "extend":
        return [item for arg in items for item in (_made_items(arg, grown=True) or [arg])]
    return items


def _note_items(function: _Function, items: list[ast.expr]) -> None:
    for item in items:
        kind = type(item)
        if kind is ast.Name:
            function.item_name = True
        elif kind is ast.Call:
            func = item.func  # type: ignore[attr-defined]
            chain = _chain(func)
            if chain is not None:
                function.item_chains.append(chain)
                function.item_words.add(func.attr if type(func) is ast.Attribute else func.id)  # type: ignore[attr-defined]


def _may_keep_bias(call: ast.Call) -> tuple[bool, bool]:
    """Whether ``call`` may leave a layer its bias: read as a ``Lazy`` class (bias 7th) and
    as another (bias 8th). No, when an argument is starred or the bias is given as anything
    but a literal True."""
    if any(type(arg) is ast.Starred for arg in call.args) or any(
            kw.arg is None for kw in call.keywords):
        return False, False
    for kw in call.keywords:
        if kw.arg == "bias":
            return (_literal_true(kw.value),) * 2
    args = call.args
    return (len(args) < 7 or _literal_true(args[6]),
            len(args) < 8 or _literal_true(args[7]))


def _literal_true(node: ast.expr) -> bool:
    return type(node) is ast.Constant and node.value is True  # type: ignore[attr-defined]


def _sums_into(node: ast.Assign) -> bool:
    """``total = total + x``"""
    value = node.value
    return len(node.targets) == 1 and type(node.targets[0]) is ast.Name and type(
        value) is ast.BinOp and type(value.op) is ast.Add and type(value.left) is ast.Name and (
        value.left.id == node.targets[0].id)


def _chained_callees(value: ast.expr) -> Iterator[tuple[str, str]]:
    while type(value) is ast.Call:
        func = value.func  # type: ignore[attr-defined]
        chain = _chain(func)
        if chain is not None:
            yield chain
        if type(func) is not ast.Attribute:
            return
        value = func.value


def _container_kind(value: ast.expr) -> str:
    """"list" for a list display, comprehension or ``list(...)``; "dict" likewise; else ""."""
    kind = type(value)
    if kind in (ast.List, ast.ListComp):
        return "list"
    if kind in (ast.Dict, ast.DictComp):
        return "dict"
    if kind is ast.Call:
        func = value.func  # type: ignore[attr-defined]
        word = func.attr if type(func) is ast.Attribute else (
            func.id if type(func) is ast.Name else None)
        if word in ("list", "dict"):
            return word  # type: ignore[return-value]
    return ""


def _stored_kinds(function: _Function) -> Iterator[str]:
    """The kinds of containers stored on ``self.X``, directly or through a local name."""
    for value in function.self_values:
        if type(value) is ast.Name:
            yield from function.locals_assigned.get(value.id, ())  # type: ignore[attr-defined]
        else:
            yield _container_kind(value)


def _resolve(bindings: dict[str, set[str]], aliases: dict[str, list[ast.expr]], head: str,
             rest: str) -> set[str]:
    """The qualified names the dotted name ``head + rest`` may stand for, through the
    file's imports (``bindings``) and module-level aliases."""
    return {canonical(base + rest) for base in _heads(bindings, aliases, head, 0)}


def _heads(bindings: dict[str, set[str]], aliases: dict[str, list[ast.expr]], head: str,
           depth: int) -> set[str]:
    found = set(bindings.get(head, ()))
    if depth < 4:
        for value in aliases.get(head, ()):
            for branch in _branches(value):
                chain = _chain(branch)
                if chain is not None:
                    found.update(base + chain[1]
                                 for base in _heads(bindings, aliases, chain[0], depth + 1))
    return found


def _branches(value: ast.expr) -> list[ast.expr]:
    if type(value) is ast.IfExp:
        return _branches(value.body) + _branches(value.orelse)
    return [value]


def facts_of(tree: ast.Module) -> FileFacts:
    walker = _Walker()
    walker.walk(tree, None, None)
    return replace(walker.facts(), size_sites=_size_sites(walker), tree=tree,
                   index=walker.index, bindings=walker.bindings, aliases=walker.aliases)


@lru_cache(maxsize=2)  # the screen and the lint of one file ask for the same text
def triage(text: str) -> FileFacts | None:
    """The facts of ``text``; None when CPython cannot parse it (the engine then lets
    libcst decide, and every rule the text prefilter lets through runs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like: not ours to say
        try:
            tree = compile(text, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None
    try:
        return facts_of(tree)
    except RecursionError:  # deeply nested but valid: no facts, every rule may run
        return None


# ------------------------------------------------------------------ triggers
class Trigger:
    """A condition over :class:`FileFacts` that holds on every file a rule can flag.

    Triggers are data: :meth:`data` gives them as nested tuples of strings (the generated
    catalogue keeps them, so a run can decide without importing any rule), and
    :func:`from_data` builds them back."""

    def holds(self, facts: FileFacts, options: Options) -> bool:
        raise NotImplementedError

    def data(self) -> tuple[object, ...]:
        raise NotImplementedError

    def __and__(self, other: Trigger) -> Trigger:
        return _Combined(True, (self, other))

    def __or__(self, other: Trigger) -> Trigger:
        return _Combined(False, (self, other))


@dataclass(frozen=True)
class _Combined(Trigger):
    every: bool  # all parts must hold (else: one)
    parts: tuple[Trigger, ...]

    def holds(self, facts: FileFacts, options: Options) -> bool:
        test = all if self.every else any
        return test(p.holds(facts, options) for p in self.parts)

    def data(self) -> tuple[object, ...]:
        return ("all" if self.every else "any", *(p.data() for p in self.parts))


def all_of(*parts: Trigger) -> Trigger:
    return _Combined(True, parts)


def any_of(*parts: Trigger) -> Trigger:
    return _Combined(False, parts)


@dataclass(frozen=True)
class _Api(Trigger):
    qualnames: frozenset[str]
    called: bool

    def holds(self, facts: FileFacts, options: Options) -> bool:
        seen = facts.calls if self.called else facts.qualnames
        return not self.qualnames.isdisjoint(seen)

    def data(self) -> tuple[object, ...]:
        return ("calls" if self.called else "api", *sorted(self.qualnames))


def api(*qualnames: str, called: bool = False) -> Trigger:
    """One of the qualified names (``torch.range``) may be referenced (with ``called``:
    called), through any import or module-level alias of the file."""
    return _Api(frozenset(canonical(q) for q in qualnames), called)


def calls(*qualnames: str) -> Trigger:
    """One of the qualified names may be called."""
    return api(*qualnames, called=True)


@dataclass(frozen=True)
class _Facet(Trigger):
    facet: str
    words: frozenset[str]

    def holds(self, facts: FileFacts, options: Options) -> bool:
        seen: Iterable[str] = getattr(facts, self.facet)
        if not self.words:
            return bool(seen)
        return not self.words.isdisjoint(seen)  # type: ignore[arg-type]

    def data(self) -> tuple[object, ...]:
        return ("facet", self.facet, *sorted(self.words))


def imports(*packages: str) -> Trigger:
    """The file imports one of the top-level packages (``torch``) somewhere."""
    return _Facet("top_modules", frozenset(packages))


def attribute(*names: str) -> Trigger:
    """``x.name`` occurs for one of the names."""
    return _Facet("attributes", frozenset(names))


def calls_method(*names: str) -> Trigger:
    """``x.name(...)`` is called for one of the names."""
    return _Facet("method_calls", frozenset(names))


def identifier(*names: str) -> Trigger:
    """One of the identifiers occurs (a name, an attribute, an import, a def, a parameter;
    never inside a string or a comment)."""
    return _Facet("names", frozenset(names))


def biased_call(*qualnames: str) -> Trigger:
    """A call of one of the qualified names may leave the layer its bias (see
    :attr:`FileFacts.biased_calls`)."""
    return _Facet("biased_calls", frozenset(canonical(q) for q in qualnames))


def chained_call(*qualnames: str) -> Trigger:
    """A method is called at once on the result of a call of one of the qualified names
    (``nn.Parameter(w).cuda()``)."""
    return _Facet("chained_calls", frozenset(canonical(q) for q in qualnames))


def keyword(*names: str) -> Trigger:
    """A call passes one of the keyword arguments."""
    return _Facet("keywords", frozenset(names))


def defines(*names: str) -> Trigger:
    """A function or method of one of the names is defined."""
    return _Facet("functions", frozenset(names))


@dataclass(frozen=True)
class _Loops(Trigger):
    sums: bool = False

    def holds(self, facts: FileFacts, options: Options) -> bool:
        return facts.loop_sums if self.sums else facts.loops

    def data(self) -> tuple[object, ...]:
        return ("loop_sum",) if self.sums else ("loops",)


def loops() -> Trigger:
    """A for/while loop or a comprehension."""
    return _Loops()


def loop_sum() -> Trigger:
    """A running total that may grow: ``name += x``, ``names[k] += x`` or
    ``name = name + x`` in a for/while loop, or ``obj.name += x`` / ``obj.names[k] += x``
    anywhere (``x`` no literal)."""
    return _Loops(sums=True)


@dataclass(frozen=True)
class _TrainingLoop(Trigger):
    words: frozenset[str]

    def holds(self, facts: FileFacts, options: Options) -> bool:
        return any(not self.words.isdisjoint(calls) and (
            data or "backward" in calls or "step" in calls) for calls, data in facts.loop_bodies)

    def data(self) -> tuple[object, ...]:
        return ("training_loop_call", *sorted(self.words))


def training_loop_call(*names: str) -> Trigger:
    """A for/while loop that may train (its body calls ``backward`` or ``step``) or walk
    data (a loader, dataset or batches) calls one of the names in its body."""
    return _TrainingLoop(frozenset(names))


def sequence_call(*names: str, nested: bool = False) -> Trigger:
    """A call of one of ``names`` (qualified names, or the last name of the callee for a
    method) is given a list, tuple or comprehension (``nested``: one holding another)."""
    return _Facet("nested_sequence_calls" if nested else "sequence_calls", frozenset(names))


def loop_call(*names: str) -> Trigger:
    """Inside the body of a for/while loop, a callee is named one of the names
    (``f(...)``, ``x.f(...)``)."""
    return _Facet("loop_calls", frozenset(names))


@dataclass(frozen=True)
class _DefinesMatching(Trigger):
    pattern: str

    def holds(self, facts: FileFacts, options: Options) -> bool:
        regex = _compiled(self.pattern)
        return any(regex.search(function.lstrip("_")) for function in facts.functions)

    def data(self) -> tuple[object, ...]:
        return ("defines_matching", self.pattern)


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def defines_matching(pattern: str | re.Pattern[str]) -> Trigger:
    """A function or method is defined whose name, without leading underscores, holds a
    match of ``pattern``."""
    return _DefinesMatching(pattern if isinstance(pattern, str) else pattern.pattern)


@dataclass(frozen=True)
class _ModuleMethods(Trigger):
    methods: frozenset[str]  # empty: any
    callees: frozenset[str] | None  # qualified names one of which the method calls
    words: frozenset[str] | None  # callee names one of which the method calls
    stores: frozenset[str] | None  # kinds of values stored on self (see FileFacts.methods)
    stored_calls: frozenset[str] | None = None  # callees stored on self (qualified names)
    layers: bool = False  # a container the method makes or grows may hold a layer

    def holds(self, facts: FileFacts, options: Options) -> bool:
        if not facts.methods:
            return False
        classes = facts.module_classes(options)
        for owner, method, calls, words, stores, stored_calls, layer_items in facts.methods:
            if owner not in classes or (self.methods and method not in self.methods):
                continue
            if self.callees is not None and not _calls_any(self.callees, calls):
                continue
            if self.words is not None and self.words.isdisjoint(words):
                continue
            if self.stores is not None and self.stores.isdisjoint(stores):
                continue
            if self.stored_calls is not None and self.stored_calls.isdisjoint(stored_calls):
                continue
            if self.layers and not layer_items:
                continue
            return True
        return False

    def data(self) -> tuple[object, ...]:
        def part(words: frozenset[str] | None) -> tuple[str, ...] | None:
            return None if words is None else tuple(sorted(words))

        return ("module_methods", part(self.methods), part(self.callees), part(self.words),
                part(self.stores), part(self.stored_calls), self.layers)


def _may_build_layer(calls: frozenset[str]) -> bool:
    """One of the callees may be a layer class: a ``torch.nn`` class or a name from
    another module than torch (a project class may be a module class)."""
    for qual in calls:
        if qual.startswith("torch.nn."):
            if qual.rsplit(".", 1)[1][:1].isupper():
                return True
        elif _foreign(qual):
            return True
    return False


def _calls_any(wanted: frozenset[str], calls: frozenset[str]) -> bool:
    """One of ``calls`` is in ``wanted``, under a prefix of it (an entry ending in "."), or
    matches a regular expression of it (an entry starting with "re:")."""
    if not wanted.isdisjoint(calls):
        return True
    prefixes = tuple(w for w in wanted if w.endswith("."))
    if prefixes and any(c.startswith(prefixes) for c in calls):
        return True
    return any(_compiled(w[3:]).fullmatch(c) for w in wanted if w.startswith("re:")
               for c in calls)


def module_method_calls(*methods: str, callees: Iterable[str] | None = None,
                        words: Iterable[str] | None = None) -> Trigger:
    """A method (one of ``methods``; none: any) of a class that may be a module class
    calls one of ``callees`` (qualified names; one ending in "." stands for every name under
    it, one starting with "re:" for the names its regular expression matches) or one of
    ``words`` (callee names)."""
    return _ModuleMethods(frozenset(methods),
                          frozenset(callees) if callees is not None
                          else None,
                          frozenset(words) if words is not None else None, None)


def self_store(*kinds: str, methods: Iterable[str] = (), layers: bool = False) -> Trigger:
    """A method of a class that may be a module class stores on ``self.X`` a value of one
    of the kinds: ``"list"`` (a list display or comprehension, ``list(...)``), ``"dict"``
    (the same for dicts), stored directly or through a name the method assigned one to.
    ``layers``: and a container the same method makes or grows may hold a layer (see
    :attr:`FileFacts.methods`)."""
    return _ModuleMethods(frozenset(methods), None, None, frozenset(kinds), layers=layers)


def from_data(data: tuple[object, ...]) -> Trigger:
    """The trigger :meth:`Trigger.data` gave."""
    kind, rest = data[0], data[1:]
    if kind in ("all", "any"):
        parts = tuple(from_data(p) for p in rest)  # type: ignore[arg-type]
        return _Combined(kind == "all", parts)
    if kind in ("api", "calls"):
        return _Api(frozenset(rest), kind == "calls")  # type: ignore[arg-type]
    if kind == "facet":
        return _Facet(rest[0], frozenset(rest[1:]))  # type: ignore[arg-type]
    if kind == "loop_calls_all":
        return _LoopCallsAll(frozenset(rest))  # type: ignore[arg-type]
    if kind == "calls_under":
        return _CallsUnder(frozenset(rest))  # type: ignore[arg-type]
    if kind == "training_loop_call":
        return _TrainingLoop(frozenset(rest))  # type: ignore[arg-type]
    if kind in ("loops", "loop_sum"):
        return _Loops(sums=kind == "loop_sum")
    if kind == "defines_matching":
        return _DefinesMatching(rest[0])  # type: ignore[arg-type]
    if kind == "size_chain":
        return _SizeChain(rest[0])  # type: ignore[arg-type]
    if kind == "check":
        return _Check(rest[0], len(rest) > 1)  # type: ignore[arg-type]
    if kind == "module_methods":
        methods, callees, words, stores, stored = (
            None if p is None else frozenset(p) for p in rest[:5])  # type: ignore[arg-type]
        return _ModuleMethods(methods or frozenset(), callees, words, stores, stored,
                              bool(rest[5]) if len(rest) > 5 else False)
    raise ValueError(f"not a trigger: {data!r}")


def self_store_call(*callees: str, methods: Iterable[str] = ()) -> Trigger:
    """A method (one of ``methods``; none: any) of a class that may be a module class stores
    on ``self.X`` a call of one of ``callees`` (qualified names), maybe with methods
    chained on it."""
    return _ModuleMethods(frozenset(methods), None, None, None,
                          frozenset(canonical(c) for c in callees))


@dataclass(frozen=True)
class _LoopCallsAll(Trigger):
    words: frozenset[str]

    def holds(self, facts: FileFacts, options: Options) -> bool:
        return any(self.words <= calls for calls, _ in facts.loop_bodies)

    def data(self) -> tuple[object, ...]:
        return ("loop_calls_all", *sorted(self.words))


def loop_calls_all(*names: str) -> Trigger:
    """The body of one for/while loop calls every one of the names (``f(...)``, ``x.f()``)."""
    return _LoopCallsAll(frozenset(names))


def calls_named(*names: str) -> Trigger:
    """A callee's last name is one of the names (``f(...)``, ``x.f(...)``)."""
    return _Facet("call_words", frozenset(names))


def module_class() -> Trigger:
    """A method of a class that may be a module class."""
    return _ModuleMethods(frozenset(), None, None, None)


@dataclass(frozen=True)
class _CallsUnder(Trigger):
    prefixes: frozenset[str]

    def holds(self, facts: FileFacts, options: Options) -> bool:
        prefixes = tuple(self.prefixes)
        return any(call.startswith(prefixes) for call in facts.calls)

    def data(self) -> tuple[object, ...]:
        return ("calls_under", *sorted(self.prefixes))


def calls_under(*prefixes: str) -> Trigger:
    """A qualified name the file may call starts with one of the prefixes
    (``"torch.optim."``: any optimizer, scheduler or function of that package)."""
    return _CallsUnder(frozenset(prefixes))

@dataclass(frozen=True)
class _Check(Trigger):
    target: str  # "package.module:function"
    preview_shapes: bool = False  # outside preview, it rules out the rule's preview shapes

    def holds(self, facts: FileFacts, options: Options) -> bool:
        return facts.checks_hold or _check_function(self.target)(facts, options)

    def data(self) -> tuple[object, ...]:
        return ("check", self.target, "preview-shapes") if self.preview_shapes else (
            "check", self.target)


@lru_cache(maxsize=None)
def _check_function(target: str) -> Callable[[FileFacts, Options], bool]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def check(target: str, *, preview_shapes: bool = False) -> Trigger:
    """A rule's own screening check, ``"package.module:function"``: a function of the
    file's facts and options, true on every file the rule can flag. It reads the ``ast``
    tree (:attr:`FileFacts.tree`, :meth:`FileFacts.nodes`) and so may follow the rule
    closely; its module imports neither libcst nor a rule. Put it last in an
    :func:`all_of`, after the facts that are cheaper to test. ``preview_shapes``: with
    ``options.preview`` off, it rules out files where the rule can report only preview
    shapes (the engine asks it again in preview once a file is parsed anyway: see
    ``prefilter.preview_shapes``)."""
    return _Check(target, preview_shapes)


@lru_cache(maxsize=None)
def rules_out_preview_shapes(trigger: Trigger) -> bool:
    """Does ``trigger`` ask a check that, outside preview, rules out preview shapes?"""
    return any(len(found) > 2 for found in _checks(trigger.data()))


def _checks(data: object) -> list[tuple[object, ...]]:
    """The ``("check", target[, "preview-shapes"])`` parts of a trigger's data."""
    if type(data) is not tuple:
        return []
    if len(data) in (2, 3) and data[0] == "check" and type(data[1]) is str:
        return [data]
    return [found for part in data for found in _checks(part)]


def load_checks(triggers: Iterable[Trigger]) -> None:
    """Import the modules of the screening checks ``triggers`` name (a parallel run does it
    once, before its workers fork, instead of once in each worker)."""
    for trigger in triggers:
        for found in _checks(trigger.data()):
            _check_function(found[1])  # type: ignore[arg-type]


# ------------------------------------------------------------------ size chains
# Calls the size analysis (TL510-TL512) may build a chain of, each recorded as a site:
# "layer:<family>:<dims>:<i><o>" for a torch.nn layer (i: the size it accepts may be
# provable, o: the size it produces), "block" for a class of this file or an imported one
# built with fixed arguments (literals, module-level names) in a method or inside an
# nn.Sequential, "input" for a stated input (a tensor factory given a fixed shape, a
# dataset, a summary, an ONNX export) and "view" for a reshape to two dimensions. A size can be provable only when its argument is
# made of literals, names and ``self``/module attributes (never a subscript, an
# attribute of another object or a call other than ``int()`` or a ``self`` method).
_SIZE_WORDS = frozenset({"view", "reshape", "flatten", "randn", "rand", "zeros", "ones",
                         "empty", "randint", "summary", "export"})
_STATED = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty",
                     "torch.randint", "torchsummary.summary", "torchinfo.summary",
                     "torch.onnx.export"})


def _size_sites(walker: _Walker) -> tuple[str, ...]:
    if not walker.size_calls:
        return ()
    fixed_names = walker.aliases.keys() | walker.bindings.keys()
    local_classes = {cls for cls, _ in walker.classes}
    in_sequential = {id(inner) for chain, word, call, _ in walker.size_calls
                     if word == "Sequential" for arg in _arguments(call) if arg is not None
                     for inner in ast.walk(arg) if type(inner) is ast.Call}
    sites: list[str] = []
    for chain, word, call, in_method in walker.size_calls:
        quals = walker.resolve(*chain) if chain is not None else set()
        if word in ("view", "reshape", "flatten"):
            if type(call.func) is ast.Attribute and _flattens(word, call):
                sites.append("view")
            continue
        if any(q.startswith("torchvision.datasets.") or q in _STATED and (
                q.endswith(("summary", "export")) or _stated_shape(q, call, fixed_names))
               for q in quals):
            sites.append("input")
            continue
        leaves = {q[len("torch.nn."):] for q in quals
                  if q.startswith("torch.nn.") and q.count(".") == 2}
        leaf = next((leaf for leaf in sorted(leaves) if leaf in LAYERS), None)
        if leaf is not None:
            sites.append(_layer_site(leaf, call, fixed_names))
        elif (in_method or id(call) in in_sequential) and word[:1].isupper() and (
                chain is not None) and not any(
                q.startswith(("torch.", "torchvision.", "builtins.")) for q in quals) and (
                (chain[0] in local_classes and not chain[1]) or quals) and all(
                _fixed(a, fixed_names) for a in _arguments(call)):
            sites.append("block")
    return tuple(sites)


def _flattens(word: str, call: ast.Call) -> bool:
    """``x.view(N, K)`` / ``x.reshape(N, K)``, ``x.flatten(1)``, ``torch.flatten(x, 1)``:
    the reshapes the size analysis follows (to two dimensions)."""
    if word != "flatten":
        return len(call.args) == 2 and not call.keywords
    return any(type(a) is ast.Constant and a.value == 1 for a in _arguments(call))


def _stated_shape(qual: str, call: ast.Call, names: Iterable[str]) -> bool:
    """A tensor factory given a shape of two or more fixed sizes (``torch.randn(1, 3, 32,
    32)``): what the size analysis reads as a stated input."""
    args = [a for a in call.args if type(a) is not ast.Starred]
    if qual == "torch.randint":
        size = args[2] if len(args) > 2 else next(
            (k.value for k in call.keywords if k.arg == "size"), None)
        args = [size] if size is not None else []
    if len(args) == 1 and type(args[0]) in (ast.Tuple, ast.List):
        args = args[0].elts  # type: ignore[attr-defined]
    return len(args) >= 2 and all(_fixed(a, names) for a in args)


def _arguments(call: ast.Call) -> Iterator[ast.expr | None]:
    yield from (None if type(a) is ast.Starred else a for a in call.args)
    yield from (None if k.arg is None else k.value for k in call.keywords)


def _layer_site(leaf: str, call: ast.Call, names: Iterable[str]) -> str:
    family, dims, _ = LAYERS[leaf]
    flags = ""
    starred = any(a is None for a in _arguments(call))
    for flag, parameter in zip("io", size_parameters(leaf)):
        if parameter is None or starred:
            continue
        name, position = parameter
        value = call.args[position] if position < len(call.args) else next(
            (k.value for k in call.keywords if k.arg == name), None)
        if value is not None and _maybe_size(value, names):
            flags += flag
    return f"layer:{family}:{dims}:{flags}"


def _maybe_size(node: ast.expr, names: Iterable[str]) -> bool:
    """Could the size analysis prove the value of ``node``? Any name may be a constant, a
    parameter or a local it knows; an attribute only of ``self`` or of a name bound at
    module level (a module the project defines constants in)."""
    kind = type(node)
    if kind is ast.Constant or kind is ast.Name:
        return True
    if kind is ast.Attribute:
        chain = _chain(node)
        return chain is not None and (chain[0] == "self" or chain[0] in names)
    if kind is ast.BinOp:
        return _maybe_size(node.left, names) and _maybe_size(  # type: ignore[attr-defined]
            node.right, names)  # type: ignore[attr-defined]
    if kind is ast.UnaryOp:
        return _maybe_size(node.operand, names)  # type: ignore[attr-defined]
    if kind in (ast.Tuple, ast.List):
        return all(_maybe_size(e, names) for e in node.elts)  # type: ignore[attr-defined]
    if kind is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Name and func.id == "int":
            return all(_maybe_size(a, names) for a in node.args)  # type: ignore[attr-defined]
        return type(func) is ast.Attribute and type(func.value) is ast.Name and (
            func.value.id == "self")
    return False


def _fixed(node: ast.expr | None, names: Iterable[str]) -> bool:
    """Is ``node`` made only of literals, names bound at module level or imported, and
    attributes of those (what the size analysis accepts as a project class's arguments)?"""
    kind = type(node)
    if kind is ast.Constant:
        return True
    if kind is ast.Name:
        return node.id in names or node.id in ("True", "False", "None")  # type: ignore[union-attr]
    if kind is ast.Attribute:
        chain = _chain(node)  # type: ignore[arg-type]
        return chain is not None and chain[0] in names
    if kind is ast.BinOp:
        return _fixed(node.left, names) and _fixed(node.right, names)  # type: ignore[union-attr]
    if kind is ast.UnaryOp:
        return _fixed(node.operand, names)  # type: ignore[union-attr]
    if kind in (ast.Tuple, ast.List):
        return all(_fixed(e, names) for e in node.elts)  # type: ignore[union-attr]
    return False


@dataclass(frozen=True)
class _SizeChain(Trigger):
    kind: str  # "size" (TL510, TL511) or "rank" (TL512)

    def holds(self, facts: FileFacts, options: Options) -> bool:
        sites = facts.size_sites
        if len(sites) < 2:
            return False
        if self.kind == "size":
            takes = [i for i, s in enumerate(sites) if s == "block" or (
                s.startswith("layer:") and "i" in s.rsplit(":", 1)[1])]
            gives = [i for i, s in enumerate(sites) if s in ("block", "input", "view") or (
                s.startswith("layer:") and "o" in s.rsplit(":", 1)[1])]
            return any(t != g for t in takes for g in gives)
        ranked = [(i, int(s.split(":")[2])) for i, s in enumerate(sites)
                  if s.startswith("layer:") and s.split(":")[1] in RANKED]
        for i, dims in ranked:
            for j, site in enumerate(sites):
                if j == i or site == "block":
                    continue
                if site in ("input", "view"):
                    return True
                family, other = site.split(":")[1:3]
                if family in FLAT or (family in RANKED or family == "upsample") and (
                        int(other) not in (0, dims)):
                    return True
        return False

    def data(self) -> tuple[object, ...]:
        return ("size_chain", self.kind)


def size_chain(kind: str) -> Trigger:
    """The file may hold a size chain of two calls whose sizes (``"size"``) or ranks
    (``"rank"``) the size analysis could prove to disagree."""
    return _SizeChain(kind)
