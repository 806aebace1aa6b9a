"""Size facts: what feature and channel sizes the layers of a file's modules provably pass
to each other, computed once per file (:func:`size_facts`).

A layer construction (``nn.Linear(64, 128)``) gets a :class:`Layer`: the size it accepts
(in), the size it produces (out), and the input ranks it accepts. A *size chain* is the
order in which layers transform one value: the elements of an ``nn.Sequential`` (built
from arguments, a list literal, an ``OrderedDict``, ``add_module`` calls in order, or a
list a helper method of the class assembles) and the value flowing through ``forward``
(``x = self.a(x); x = self.b(x)``, ``self.b(self.a(x))``). Each chain is walked with a
:class:`Value` (rank, channels, last-dimension features, spatial sizes), and every place
where a provable size or rank disagrees becomes a :class:`Mismatch`.

Sizes come from literals, module-level constants (also those imported from the
project), class attributes, simple arithmetic and ``__init__`` parameters where the class
is constructed in the project with literal arguments or defaults (one evaluation per
distinct construction, see ``project_sizes.py``; a class built nowhere in the project has
unknown sizes). A module class of the project used as a layer is followed from its
first layer's input size to the size its ``forward`` returns. :class:`Unknown` is a value like any other:
an unknown size is never compared, and anything the analysis cannot follow (a reshape,
a concatenation, a branch, an unknown call) stops the chain with the reason.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Union

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere, bound_names, global_value
from torchlint.analysis.layer_table import (
    AVG_POOL,
    INPUT_FACTORIES,
    INSTANCE_METHODS,
    KEEP,
    LAYERS,
    MAX_POOL,
    accepted_ranks,
)
from torchlint.analysis.layer_table import CROPS as _CROPS
from torchlint.analysis.layer_table import DATASETS as _DATASETS
from torchlint.analysis.layer_table import KEEP_FUNCTIONS as _KEEP_FUNCTIONS
from torchlint.analysis.layer_table import KEEP_METHODS as _KEEP_METHODS
from torchlint.analysis.layer_table import KEEP_TRANSFORMS as _KEEP_TRANSFORMS
from torchlint.analysis.layer_table import RESHAPES as _RESHAPES
from torchlint.analysis.layer_table import SPATIAL_FUNCTIONS as _SPATIAL_FUNCTIONS
from torchlint.analysis.nodes import (
    children_of,
    get_arg,
    iter_compound_statements,
    iter_nodes,
    parameters,
    self_attribute,
)
from torchlint.analysis.project_sizes import (
    NOT_LITERAL,
    Construction,
    class_inputs,
    class_uses,
    imported_constant,
)

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


# ----------------------------------------------------------------- values
@dataclass(frozen=True)
class Unknown:
    """A size (or any value) the analysis cannot prove, with the reason."""

    reason: str

    def __str__(self) -> str:
        return "?"


Size = Union[int, Unknown]
_UNKNOWN = Unknown("unknown size")


def known(size: object) -> bool:
    return isinstance(size, int) and not isinstance(size, bool)


def _product(sizes: Sequence[Size]) -> Size:
    total = 1
    for size in sizes:
        if not isinstance(size, int):
            return size
        total *= size
    return total


@dataclass(frozen=True)
class Layer:
    """One construction of a ``torch.nn`` layer, with its provable sizes."""

    name: str                       # "Linear"
    call: cst.Call
    family: str                     # linear, conv, convT, bn, in, gn, ln, embed, rnn, ...
    dims: int                       # spatial dimensions of an N-d layer (Conv2d: 2)
    in_size: Size                   # the features/channels it accepts
    out_size: Size                  # the features/channels it produces
    in_node: cst.CSTNode            # where a mismatch of its input is reported
    args: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def label(self) -> str:
        if self.family == "embed":
            return f"{self.name}({_size(self.args.get('num_embeddings'))}, {self.out_size})"
        if self.family in ("linear", "conv", "convT", "rnn", "cell", "embed", "bilinear", "block"):
            return f"{self.name}({self.in_size} -> {self.out_size})"
        if self.family in ("bn", "in", "gn", "ln", "mha", "same"):
            return f"{self.name}({self.in_size})"
        return self.name

    @property
    def unit(self) -> str:
        if self.family == "block":
            return str(self.args["gives"])
        return "channels" if self.family in ("conv", "convT", "bn", "in", "gn") else "features"


@dataclass(frozen=True)
class Sequence_:
    """An ``nn.Sequential``: its elements in order (a layer, a nested Sequential, or an
    Unknown for anything else)."""

    call: cst.CSTNode
    elements: tuple[object, ...]


@dataclass(frozen=True)
class Value:
    """What is provable about a tensor flowing through a chain. ``rank`` counts the batch
    dimension; ``channels`` is dimension 1, ``features`` the last one (equal when the rank
    is 2); ``spatial`` the sizes after the channels, when known."""

    rank: Size = _UNKNOWN
    channels: Size = _UNKNOWN
    features: Size = _UNKNOWN
    spatial: tuple[Size, ...] | None = None
    source: str = "the input"       # the layer or operation that produced these sizes
    flattened: bool = False          # ``features`` come from a flatten or view
    dataset: bool = False            # the size a dataset's images have


@dataclass(frozen=True)
class Mismatch:
    """A provable disagreement: ``kind`` is "size" (TL510), "flatten" (TL511) or "rank"
    (TL512); ``node`` the argument or call to report at."""

    kind: str
    node: cst.CSTNode
    message: str


@dataclass
class Step:
    """One link of a chain as inferred: what was applied, to what, giving what; ``stop``
    says why the chain could not be followed past it."""

    label: str
    before: str
    after: str
    node: cst.CSTNode
    stop: str | None = None


@dataclass
class Chain:
    owner: str                      # the class ("<module>" outside classes)
    name: str                       # "forward", "self.features", "nn.Sequential"
    node: cst.CSTNode
    steps: list[Step] = field(default_factory=list)
    checks: int = 0                 # comparisons of two known sizes or ranks
    mismatches: list[Mismatch] = field(default_factory=list)
    # the first layer with an input size, when only size-keeping layers come before it
    entry: Layer | None = None
    entry_closed: bool = False
    entry_spatial: bool = False     # a layer changing the last dimension came before it

    @property
    def stopped(self) -> str | None:
        return next((s.stop for s in self.steps if s.stop), None)


@dataclass
class SizeFacts:
    chains: list[Chain]
    # id() of the reported node -> mismatches reported there, one per message
    by_node: dict[int, list[Mismatch]]

    def at(self, node: cst.CSTNode, kind: str) -> list[Mismatch]:
        return [m for m in self.by_node.get(id(node), ()) if m.kind == kind]


def observe(ctx: FileContext, node: cst.Call | cst.Assign) -> None:
    """Note a call or assignment the engine's walk reached, so that :func:`size_facts`,
    asked once the walk is over (a rule's ``leave_Module``), needs no walk of its own.
    Several rules may note the same node: they run one after the other on it."""
    index: _Index = ctx.cached("size_index", _Index)
    if index.last is node:
        return
    index.last = node
    index.observed = True
    function = ctx.current_function
    index.scope[id(node)] = id(function) if function is not None else 0
    if type(node) is cst.Assign:
        index.assigns.append(node)
        return
    assert isinstance(node, cst.Call)
    index.calls.append(node)
    if function is not None:
        index.in_functions.add(id(node))
    func = node.func
    name = func.attr.value if type(func) is cst.Attribute else (
        func.value if type(func) is cst.Name else None)
    if name != "Sequential" or id(node) in index.nested:
        return
    if qualified(ctx, func, function) == "torch.nn.Sequential":
        index.sequentials.setdefault(id(function) if function else None, []).append(node)
        index.nested.update(id(n) for n in iter_nodes(node) if type(n) is cst.Call)


def size_facts(ctx: FileContext) -> SizeFacts:
    """The size chains of the file and their mismatches, computed once (after the walk,
    from what :func:`observe` noted; otherwise with a walk of its own)."""
    return ctx.cached("size_facts", lambda: _Analysis(ctx).run() if ctx.imports_from(
        "torch") else SizeFacts([], {}))


# ----------------------------------------------------------- the layer table
# the ranks (batch included) each N-d family accepts
def _accepted_ranks(layer: Layer) -> frozenset[int] | None:
    return accepted_ranks(layer.family, layer.dims)


_MAX_DEPTH = 4
# families with an input size, and those that keep the channels of what they receive
_SIZED = frozenset({"linear", "conv", "convT", "bn", "in", "gn", "ln", "rnn", "cell", "mha",
                    "same", "block"})
_KEEPERS = frozenset({"keep", "dropnd", "pool", "adaptive", "pad", "upsample"})


def _show(value: Value) -> str:
    parts = []
    if known(value.rank):
        parts.append(f"{value.rank}-D")
    if value.rank == 2:
        if known(value.features):
            parts.append(f"{value.features} features")
    else:
        if known(value.channels):
            parts.append(f"{value.channels} channels")
        if value.spatial is not None and all(known(s) for s in value.spatial):
            parts.append("x".join(str(s) for s in value.spatial))
        elif known(value.features):
            parts.append(f"{value.features} features")
    return " ".join(parts) if parts else "?"


# --------------------------------------------------------------- analysis
_Env = dict[str, object]


class _Analysis:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.chains: list[Chain] = []
        self.seen: set[tuple[int, str]] = set()
        self.by_node: dict[int, list[Mismatch]] = {}
        # (class, its __init__ arguments) -> what it takes and gives as a layer
        self.interfaces: dict[tuple[int, tuple[object, ...]], tuple[Layer, Value, str] | None] = {}

    @property
    def stated(self) -> dict[str | int, Value]:
        """The input sizes the file states for its models (see :func:`_stated_inputs`)."""
        return self.ctx.cached("size_stated", lambda: _stated_inputs(self))

    @property
    def classes(self) -> dict[str, cst.ClassDef]:
        """The module classes of the file, by name."""
        return self.ctx.cached("size_classes", lambda: {
            c.name.value: c for c in self.ctx.definitions()
            if isinstance(c, cst.ClassDef) and self.ctx.is_module_class(c)})

    def run(self) -> SizeFacts:
        for cls in self.classes.values():
            for env in self.construction_envs(cls):
                self.analyse_class(cls, env)
        self.analyse_outside_classes()
        return SizeFacts(self.chains, self.by_node)

    # ------------------------------------------------------------ evaluation
    def module_constant(self, name: str) -> object:
        found = global_value(self.ctx, name)
        if found is None:
            qual = self.ctx.resolve_module_level(cst.Name(name))
            return self.imported(qual) if qual is not None else Unknown(
                f"'{name}' is not a module-level constant")
        return self.ctx.cached(("size_constant", name),
                               lambda: _Scope(self, {}, None).eval(found[1], 0))

    def imported(self, qual: str) -> object:
        """The constant another module of the project defines (``from .config import
        HIDDEN``, ``config.HIDDEN``)."""
        if qual.startswith(("torch.", "builtins.")):
            return Unknown(f"'{qual}'")
        value = imported_constant(self.ctx, qual)
        return Unknown(f"'{qual}' is not a literal constant") if value is NOT_LITERAL else (
            list(value) if isinstance(value, list) else value)

    # ---------------------------------------------------------- constructions
    def construction_envs(self, cls: cst.ClassDef) -> list[_Env]:
        init = _method(cls, "__init__")
        if init is None:
            return [{}]
        params = parameters(init)[1:]
        if not params:
            return [{}]
        envs: list[_Env] = []
        keys: set[tuple[object, ...]] = set()

        def add(env: _Env) -> None:
            key = tuple(sorted((k, repr(v)) for k, v in env.items()))
            if key not in keys:
                keys.add(key)
                envs.append(env)

        by_name = self.ctx.cached("size_calls_by_name", lambda: _calls_by_name(self.ctx))
        built_here = 0
        for call in by_name.get(cls.name.value, ()):
            if self.ctx.local_module_class(call.func) is not cls:
                continue
            built_here += 1
            add(self.bind_arguments(init, call))
        if envs:  # built in this file: those are its sizes
            return envs
        unknown = {p.name.value: Unknown(f"parameter '{p.name.value}'") for p in params}
        if self.named_in_file(cls):  # passed to a builder, subclassed: built out of sight
            return [unknown]
        uses = class_uses(self.ctx, cls.name.value)
        for construction in uses.constructions:
            add(self.bind_values(init, construction))
        # built nowhere in the project: its defaults are not known to be its sizes (a
        # library class is built by its users, who may pass others)
        return envs or [unknown]

    def named_in_file(self, cls: cst.ClassDef) -> bool:
        """Is the class named in this file other than by its definition and calls of it (a
        subclass, ``build(Net)``, ``partial(Net)``, ``MODELS = {"net": Net}``), or
        decorated (a registry may build it)?"""
        if cls.decorators:
            return True
        return cls.name.value in self.ctx.cached("size_names_passed", lambda: _names_passed(
            self.ctx))

    def bind_values(self, function: cst.FunctionDef, construction: Construction) -> _Env:
        """The parameters of ``function`` (``__init__``) for a construction in another file
        (or none: the defaults)."""
        params = parameters(function, stars=False)[1:]
        env: _Env = {p.name.value: Unknown(f"parameter '{p.name.value}'") for p in params}
        if construction.starred:
            return env
        given: dict[str, object] = dict(construction.keywords)
        for param, value in zip(function.params.params[1:], construction.positional):
            given[param.name.value] = value
        for param in params:
            name = param.name.value
            if name in given:
                value = given[name]
                env[name] = Unknown(f"parameter '{name}'") if value is NOT_LITERAL else value
            elif param.default is not None:
                env[name] = _Scope(self, {}, None).eval(param.default, 0)
        return env

    def bind_arguments(self, function: cst.FunctionDef, call: cst.Call,
                       defaults: _Analysis | None = None) -> _Env:
        """The parameters of ``function`` for ``call`` of this file; the defaults are read
        in the file of ``defaults`` (the class's file, when it is another one)."""
        params = parameters(function, stars=False)[1:]
        env: _Env = {p.name.value: Unknown(f"parameter '{p.name.value}'") for p in params}
        if any(arg.star for arg in call.args):
            return env
        scope = _Scope(self, {}, None)
        # inside a function, a name may be a local of it: only literals are read there
        scope.locals_unknown = id(call) in index_of(self.ctx).in_functions
        given: dict[str, cst.BaseExpression] = {}
        positional = [a for a in call.args if a.keyword is None]
        for param, arg in zip(function.params.params[1:], positional):
            given[param.name.value] = arg.value
        for arg in call.args:
            if arg.keyword is not None:
                given[arg.keyword.value] = arg.value
        for param in params:
            name = param.name.value
            if name in given:
                env[name] = scope.eval(given[name], 0)
            elif param.default is not None:  # defaults are read at module level
                env[name] = _Scope(defaults or self, {}, None).eval(param.default, 0)
        return env

    # ------------------------------------------------------ classes as layers
    def block(self, call: cst.Call, function: cst.FunctionDef | None, depth: int) -> object:
        """A module class of the file used as a layer (``Block(64, 128)``): a :class:`Layer`
        taking its first layer's input size and giving the size its ``forward`` returns,
        when both are proven; built with constants only (literals, module constants: what
        the ``ast`` triage of TL510-TL512 counts), never with a parameter or a local."""
        assert isinstance(call.func, cst.Name)
        if not call.func.value[:1].isupper():
            return None
        if not all(arg.star == "" and _fixed(self.ctx, arg.value, function)
                   for arg in call.args):
            return Unknown(f"{call.func.value} built with arguments that are no constants")
        home: _Analysis = self
        cls = self.ctx.local_module_class(call.func)
        if cls is None:
            found = self.foreign_class(call.func)
            if found is None:
                return None
            home, cls = found
        init = _method(cls, "__init__")
        env = self.bind_arguments(init, call, home) if init is not None else {}
        key = (id(cls), tuple(sorted((k, repr(v)) for k, v in env.items())))
        interface = home.interfaces.get(key)
        if key not in home.interfaces:
            home.interfaces[key] = None  # a class built inside itself: unknown
            interface = home.interfaces[key] = home.interface(cls, env, depth)
        if interface is None:
            return Unknown(f"{cls.name.value}: sizes not proven")
        entry, out, gives = interface
        in_node: cst.CSTNode = call
        if isinstance(entry.in_node, cst.Name) and init is not None:
            names = [p.name.value for p in init.params.params[1:]]
            param = entry.in_node.value
            for position, arg in enumerate(a for a in call.args if a.keyword is None):
                if position < len(names) and names[position] == param:
                    in_node = arg.value
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == param:
                    in_node = arg.value
        out_size = out.channels if gives == "channels" else out.features
        return Layer(cls.name.value, call, "block", 0, entry.in_size, _size(out_size), in_node,
                     {"entry": entry, "out": out, "takes": entry.unit, "gives": gives})

    def foreign_class(self, func: cst.Name) -> tuple[_Analysis, cst.ClassDef] | None:
        """The module class another file of the project defines, that ``func`` names
        through an import, with the analysis of that file (parsed once a run)."""
        project = self.ctx.project
        if project is None:
            return None
        names = self.ctx.possible_qualified_names(func)
        if len(names) != 1 or names[0].startswith(("torch.", "builtins.")):
            return None
        module, _, name = names[0].rpartition(".")
        if not module or not project.knows_top_level(module.split(".", 1)[0]):
            return None
        path = project.project.find_module(module, project.roots)
        read = project.project.read(path) if path is not None and os.path.abspath(
            path) != project.path else None
        if path is None or read is None:
            return None
        data, dependency = read
        project.learned([dependency])
        other: _Analysis | None = project.project.derived(
            "size-analysis", dependency, lambda: _foreign_analysis(self.ctx, path, data))
        cls = other.classes.get(name) if other is not None else None
        return (other, cls) if other is not None and cls is not None else None

    def interface(self, cls: cst.ClassDef, env: _Env, depth: int
                  ) -> tuple[Layer, Value, str] | None:
        """The first sized layer of ``cls``'s forward chain and the value it returns,
        when the chain never stops and both sizes are known."""
        forward = _method(cls, "forward")
        if forward is None:
            return None
        params = parameters(forward, stars=False)[1:]
        if not params or any(p.default is None for p in params[1:]):
            return None
        scope = self.class_scope(cls, env, depth)
        chain = Chain(cls.name.value, "forward", forward)
        local = _Scope(self, {}, cls, forward)
        local.attrs = scope.attrs
        flow = _Flow(self, chain, local, {params[0].name.value: Value()})
        flow.run(forward.body.body)
        entry = chain.entry
        if chain.stopped or entry is None or not known(entry.in_size) or (
                entry.unit == "features" and chain.entry_spatial) or len(flow.returned) != 1:
            return None
        out = flow.returned[0]
        if not isinstance(out, Value):
            return None
        if out.rank == 2 or (not known(out.rank) and known(out.features)):
            gives = "features"
            out = Value(_UNKNOWN, _UNKNOWN, out.features, None, out.source)
        else:
            gives = "channels"
            out = Value(_UNKNOWN, out.channels, _UNKNOWN, None, out.source)
        size = out.channels if gives == "channels" else out.features
        return (entry, out, gives) if known(size) else None

    # ------------------------------------------------------------- classes
    def class_scope(self, cls: cst.ClassDef, env: _Env, depth: int) -> _Scope:
        """``__init__`` of ``cls`` run with ``env``: the layers and sizes on ``self``."""
        init = _method(cls, "__init__")
        scope = _Scope(self, dict(env), cls, init)
        scope.attrs.update(self.class_attributes(cls))
        if init is not None:
            scope.run(init.body.body, depth)
        for name in _assigned_outside_init(cls):
            scope.attrs[name] = Unknown(f"self.{name} is also assigned outside __init__")
        return scope

    def class_attributes(self, cls: cst.ClassDef) -> _Env:
        """``hidden = 64`` in the class body, read as ``self.hidden``: Unknown when a
        subclass may set another value (the class is named elsewhere in the project, or a
        class of this file derives from it)."""
        found: _Env = {}
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and (
                            isinstance(small.targets[0].target, cst.Name)):
                        name = small.targets[0].target.value
                        found[name] = Unknown(f"class attribute '{name}' set twice") if (
                            name in found) else _Scope(self, {}, None).eval(small.value, 0)
        if not found:
            return found
        derived = any(isinstance(c, cst.ClassDef) and any(
            isinstance(b.value, cst.Name) and b.value.value == cls.name.value
            for b in c.bases) for c in self.ctx.definitions())
        if derived or class_uses(self.ctx, cls.name.value).named_otherwise:
            return {name: Unknown(f"class attribute '{name}' (a subclass may change it)")
                    for name in found}
        return found

    def analyse_class(self, cls: cst.ClassDef, env: _Env) -> None:
        init = _method(cls, "__init__")
        scope = self.class_scope(cls, env, 0)
        owner = cls.name.value
        walked: set[int] = set()
        for attr, value in list(scope.attrs.items()):
            value = scope.attrs[attr] = _element(value) if isinstance(value, _Builder) else value
            if isinstance(value, Sequence_):
                walked.add(id(value.call))
                chain = Chain(owner, f"self.{attr}", value.call)
                self.walk_sequence(chain, value, Value())
                self.finish(chain)
        if init is not None:
            # Sequentials not bound to an attribute (inside a ModuleList, say), evaluated
            # with the parameters __init__ never rebinds
            body = _names_bound(init) - {p.name.value for p in parameters(init)}
            fixed = {k: v for k, v in env.items() if k not in body}
            self.loose_sequences(cls.name.value, init, fixed, cls, walked)
        forward = _method(cls, "forward")
        if forward is not None:
            self.analyse_forward(cls, forward, scope)

    def loose_sequences(self, owner: str, where: cst.CSTNode, env: _Env,
                        cls: cst.ClassDef | None, walked: set[int]) -> None:
        function = where if isinstance(where, cst.FunctionDef) else None
        for call in _outer_sequentials(self.ctx, where):
            if id(call) in walked:
                continue
            value = _Scope(self, dict(env), cls, function).eval(call, 0)
            if isinstance(value, Sequence_):
                chain = Chain(owner, "nn.Sequential", call)
                self.walk_sequence(chain, value, self.stated.get(id(call), Value()))
                self.finish(chain)

    def analyse_outside_classes(self) -> None:
        self.loose_sequences("<module>", self.ctx.module, {}, None, set())
        holding = index_of(self.ctx).sequentials.keys()  # functions with a Sequential
        if not any(key is not None for key in holding):
            return
        in_classes = {id(n) for c in self.ctx.definitions() if isinstance(c, cst.ClassDef)
                      and self.ctx.is_module_class(c) for n in iter_compound_statements(c)}
        for definition in self.ctx.definitions():
            if isinstance(definition, cst.FunctionDef) and id(definition) in holding and (
                    id(definition) not in in_classes):
                self.loose_sequences("<module>", definition, {}, None, set())

    def finish(self, chain: Chain) -> None:
        if chain.steps:
            self.chains.append(chain)
        for mismatch in chain.mismatches:
            key = (id(mismatch.node), mismatch.message)
            if key not in self.seen:
                self.seen.add(key)
                self.by_node.setdefault(id(mismatch.node), []).append(mismatch)

    # --------------------------------------------------------------- chains
    def walk_sequence(self, chain: Chain, seq: Sequence_, value: Value) -> Value | None:
        current: Value | None = value
        for element in seq.elements:
            if current is None:
                current = Value()
            if isinstance(element, Layer):
                current = self.apply(chain, element, current)
            elif isinstance(element, Sequence_):
                current = self.walk_sequence(chain, element, current)
            else:
                reason = element.reason if isinstance(element, Unknown) else "unknown element"
                chain.steps.append(Step("?", _show(current), "?", seq.call, stop=reason))
                current = Value(source="an unknown element")
        return current

    def apply(self, chain: Chain, layer: Layer, value: Value) -> Value | None:
        """``layer`` applied to ``value``: check, record, and give the output (None: a
        tuple or anything the chain cannot follow)."""
        before = _show(value)
        if not chain.entry_closed:
            if layer.family in _SIZED:
                chain.entry, chain.entry_closed = layer, True
            elif layer.family not in _KEEPERS:
                chain.entry_closed = True
            elif layer.family not in ("keep", "dropnd"):
                chain.entry_spatial = True
        self.check(chain, layer, value)
        out = _output(layer, value)
        step = Step(layer.label, before, _show(out) if out is not None else "?", layer.call)
        if out is None:
            step.stop = f"{layer.name} returns a tuple"
        chain.steps.append(step)
        return out

    def check(self, chain: Chain, layer: Layer, value: Value) -> None:
        ranks = _accepted_ranks(layer)
        if ranks is not None and known(value.rank):
            chain.checks += 1
            if value.rank not in ranks:
                self.rank_mismatch(chain, layer, value, ranks)
                return
        expected = layer.in_size
        if not known(expected):
            return
        if layer.family == "block" and layer.args["takes"] == "features" or layer.family in (
                "linear", "ln", "rnn", "cell", "mha", "same"):
            got = value.features
            unit = "features"
        elif layer.family == "block":
            if value.rank == 2:
                return
            got = value.channels
            unit = "channels"
        elif layer.family in ("conv", "convT", "bn", "gn") or (
                layer.family == "in" and _affine(layer)):
            if value.rank == 2 and layer.family not in ("bn", "gn"):
                return
            got = value.channels
            unit = "features" if value.rank == 2 else "channels"
        else:
            return
        if not known(got):
            return
        chain.checks += 1
        if got == expected:
            return
        kind = "flatten" if value.flattened and layer.family == "linear" else "size"
        if layer.family == "block":
            entry = layer.args["entry"]
            text = (f"{layer.label} receives {got} {unit} from {value.source}; its first layer "
                    f"{entry.label} takes {expected}")
            chain.mismatches.append(Mismatch(kind, layer.in_node, text))
            return
        argument = {"linear": "in_features", "conv": "in_channels", "convT": "in_channels",
                    "bn": "num_features", "in": "num_features", "gn": "num_channels",
                    "ln": "normalized_shape", "rnn": "input_size", "cell": "input_size",
                    "mha": "embed_dim", "same": "d_model"}[layer.family]
        text = (f"{layer.label} receives {got} {unit} from {value.source}; "
                f"{argument}={got} would make the chain consistent")
        chain.mismatches.append(Mismatch(kind, layer.in_node, text))

    def rank_mismatch(self, chain: Chain, layer: Layer, value: Value,
                      ranks: frozenset[int]) -> None:
        accepted = " or ".join(f"{r}D" for r in sorted(ranks))
        hint = ""
        if layer.family in ("bn", "in", "conv", "dropnd", "pool") and known(value.rank):
            n = value.rank - 2
            if 1 <= n <= 3 and value.rank != 2:
                hint = f"; {layer.name.replace(f'{layer.dims}d', f'{n}d')} takes {value.rank}D input"
            elif value.rank == 2 and layer.family == "bn":
                hint = "; BatchNorm1d takes 2D input"
            elif value.rank == 2 and layer.family == "dropnd":
                hint = "; nn.Dropout takes 2D input"
            elif value.rank == 2:
                hint = "; reshape the value first"
        text = (f"{layer.label} expects {accepted} input, got {value.rank}D input "
                f"from {value.source}{hint}")
        node = layer.call
        chain.mismatches.append(Mismatch("rank", node, text))

    # -------------------------------------------------------------- forward
    def analyse_forward(self, cls: cst.ClassDef, forward: cst.FunctionDef,
                        scope: _Scope) -> None:
        params = parameters(forward, stars=False)[1:]
        if not params:
            return
        chain = Chain(cls.name.value, "forward", forward)
        start = self.stated.get(cls.name.value, Value())
        local = _Scope(self, {}, cls, forward)
        local.attrs = scope.attrs
        flow = _Flow(self, chain, local, {params[0].name.value: start})
        flow.run(forward.body.body)
        if start.dataset and not (chain.steps and chain.steps[0].label.startswith(
                ("Conv2d(", "MaxPool2d", "AvgPool2d"))):
            # the dataset's images are this model's input only if it starts on images
            chain = Chain(cls.name.value, "forward", forward)
            flow = _Flow(self, chain, local, {params[0].name.value: Value()})
            flow.run(forward.body.body)
        elif cls.name.value not in self.stated and self.ctx.project is not None and (
                _flattens_images(chain)):
            # the input size may be stated in another file of the project (asked only of
            # the models that need it: the search reads other files)
            shapes = set(class_inputs(self.ctx, cls.name.value))
            value = _input_value(shapes.pop()) if len(shapes) == 1 else None
            if value is not None:
                chain = Chain(cls.name.value, "forward", forward)
                flow = _Flow(self, chain, local, {params[0].name.value: value})
                flow.run(forward.body.body)
        self.finish(chain)


def _foreign_analysis(ctx: FileContext, path: str, data: bytes) -> _Analysis | None:
    """The size analysis of another file of the project (its classes used as layers)."""
    from torchlint.analysis.context import FileContext
    from torchlint.source import DecodeError, SourceFile

    try:
        module = cst.parse_module(SourceFile.from_bytes(path, data).text)
    except (DecodeError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    project = ctx.project.project if ctx.project is not None else None
    return _Analysis(FileContext(path, module, ctx.options, project))


def _fixed(ctx: FileContext, node: cst.BaseExpression, function: cst.FunctionDef | None
           ) -> bool:
    """Is ``node`` made only of literals, module-level names (constants, imports) and their
    attributes, which no parameter or local of ``function`` shadows?"""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return True
        if function is not None and bound_in(ctx, function, node.value):
            return False
        return global_value(ctx, node.value) is not None or ctx.resolve_module_level(
            node) is not None
    if isinstance(node, cst.Attribute):
        return isinstance(node.value, (cst.Name, cst.Attribute)) and _fixed(
            ctx, node.value, function)
    if isinstance(node, cst.BinaryOperation):
        return _fixed(ctx, node.left, function) and _fixed(ctx, node.right, function)
    if isinstance(node, cst.UnaryOperation):
        return _fixed(ctx, node.expression, function)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _fixed(ctx, e.value, function)
                   for e in node.elements)
    return False


def _names_passed(ctx: FileContext) -> frozenset[str]:
    """Names (and last attributes) used as a value in this file: call arguments, assigned
    values, class bases, and the elements of containers among them."""
    found: set[str] = set()
    index = index_of(ctx)
    values: list[cst.CSTNode] = [a.value for call in index.calls for a in call.args]
    values += [a.value for a in index.assigns]
    for definition in ctx.definitions():
        if isinstance(definition, cst.ClassDef):
            values += [b.value for b in (*definition.bases, *definition.keywords)]
    while values:
        value = values.pop()
        if isinstance(value, cst.Name):
            found.add(value.value)
        elif isinstance(value, cst.Attribute):
            found.add(value.attr.value)
        elif isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            values += [e.value for e in value.elements]
        elif isinstance(value, cst.Dict):
            values += [e.value for e in value.elements if isinstance(e, cst.DictElement)]
        elif isinstance(value, (cst.IfExp, cst.BooleanOperation)):
            values += [c for c in children_of(value) if isinstance(c, cst.BaseExpression)]
    return frozenset(found)


def _affine(layer: Layer) -> bool:
    affine = layer.args.get("affine")
    tracked = layer.args.get("track_running_stats")
    return affine is True or tracked is True


def _output(layer: Layer, value: Value) -> Value | None:
    family = layer.family
    label = layer.label
    if family == "block":
        return replace(layer.args["out"], source=label)  # type: ignore[type-var]
    if family in ("linear", "bilinear", "same"):
        rank = value.rank if known(value.rank) else 2
        out = layer.out_size if family != "same" else layer.in_size
        channels = out if rank == 2 else value.channels
        return Value(rank, channels, out, None, label)
    if family in ("conv", "convT", "pool", "adaptive", "upsample", "pad"):
        n = layer.dims
        rank = value.rank if known(value.rank) else (n + 2 if n else _UNKNOWN)
        channels = layer.out_size if family in ("conv", "convT") else value.channels
        spatial = _spatial(layer, value, rank)
        features = spatial[-1] if spatial else _UNKNOWN
        source = label if family in ("conv", "convT") else value.source
        return Value(rank, channels, features, spatial, source)
    if family in ("bn", "in", "gn") and known(layer.in_size):
        # no cascades: what follows sees the size the layer declares
        channels = layer.in_size
        return replace(value, channels=channels, features=channels if value.rank == 2
                       else value.features, source=label, flattened=False)
    if family == "ln" and known(layer.in_size):
        return replace(value, features=layer.in_size, channels=layer.in_size
                       if value.rank == 2 else value.channels, source=label, flattened=False)
    if family in ("bn", "in", "gn", "ln", "dropnd") or family == "keep":
        return value
    if family == "flatten":
        start = layer.args.get("start_dim", 1)
        end = layer.args.get("end_dim", -1)
        if start != 1 or end != -1:
            return Value(source="a Flatten with other dimensions")
        return _flatten(value, "Flatten")
    if family == "embed":
        rank = value.rank + 1 if known(value.rank) else _UNKNOWN
        if layer.name == "EmbeddingBag":
            rank = 2
        return Value(rank, layer.out_size if rank == 2 else _UNKNOWN, layer.out_size, None,
                     label)
    if family in ("rnn", "mha"):
        return None
    if family == "cell":
        if layer.name == "LSTMCell":
            return None
        return Value(2, layer.out_size, layer.out_size, None, label)
    return Value(source=f"{layer.name}")


def _flatten(value: Value, how: str) -> Value:
    if value.rank == 2:
        return replace(value, flattened=True)
    if known(value.channels) and value.spatial is not None:
        total = _product([value.channels, *value.spatial])
        if known(total):
            shape = "x".join(str(s) for s in (value.channels, *value.spatial))
            return Value(2, total, total, None,
                         f"{how} of {shape} (after {value.source})", True)
    return Value(2, _UNKNOWN, _UNKNOWN, None, how, True)


def _spatial(layer: Layer, value: Value, rank: Size) -> tuple[Size, ...] | None:
    n = layer.dims or (len(value.spatial) if value.spatial is not None else 0)
    if not n:
        return None
    args = layer.args
    if layer.family == "adaptive":
        size = _per_dim(args.get("output_size"), n)
        if size is None:
            return None
        current = value.spatial if value.spatial is not None and len(value.spatial) == n \
            else (_UNKNOWN,) * n
        return tuple(current[i] if args.get("output_size") is None or s is None else s
                     for i, s in enumerate(size))
    if value.spatial is None or len(value.spatial) != n or not known(rank):
        return None
    if layer.family == "upsample":
        size = _per_dim(args.get("size"), n)
        if size is not None and all(known(s) for s in size):
            return size
        factor = _per_dim(args.get("scale_factor"), n)
        if factor is None:
            return None
        return tuple(s * f if known(s) and known(f) else _UNKNOWN
                     for s, f in zip(value.spatial, factor))
    if layer.family == "pad":
        padding = args.get("padding")
        if known(padding):
            return tuple(s + 2 * padding if known(s) else _UNKNOWN for s in value.spatial)
        if isinstance(padding, tuple) and len(padding) == 2 * n and all(
                known(p) for p in padding):
            extra = [padding[2 * i] + padding[2 * i + 1] for i in range(n)][::-1]
            return tuple(s + e if known(s) else _UNKNOWN for s, e in zip(value.spatial, extra))
        return None
    kernel = _per_dim(args.get("kernel_size"), n)
    if kernel is None:
        return None
    default_stride = kernel if layer.family == "pool" else 1
    stride = _per_dim(args.get("stride", default_stride), n)
    if args.get("stride") is None and "stride" in args:
        stride = kernel if layer.family == "pool" else None
    padding_arg = args.get("padding", 0)
    if padding_arg == "valid":
        padding_arg = 0
    if padding_arg == "same":
        return value.spatial if layer.family == "conv" else None
    padding = _per_dim(padding_arg, n)
    dilation = _per_dim(args.get("dilation", 1), n)
    extra = _per_dim(args.get("output_padding", 0), n)
    ceil = args.get("ceil_mode", False)
    if None in (stride, padding, dilation, extra) or not isinstance(ceil, bool):
        return None
    assert stride is not None and padding is not None and dilation is not None
    assert extra is not None
    out: list[Size] = []
    for i, size in enumerate(value.spatial):
        k, s, p, d, o = kernel[i], stride[i], padding[i], dilation[i], extra[i]
        if not all(known(v) for v in (size, k, s, p, d, o)) or s == 0:
            out.append(_UNKNOWN)
            continue
        assert isinstance(size, int) and isinstance(k, int) and isinstance(s, int)
        assert isinstance(p, int) and isinstance(d, int) and isinstance(o, int)
        if layer.family == "convT":
            out.append((size - 1) * s - 2 * p + d * (k - 1) + o + 1)
            continue
        span = size + 2 * p - d * (k - 1) - 1
        result = (math.ceil(span / s) if ceil else span // s) + 1
        if ceil and (result - 1) * s >= size + p:
            result -= 1
        out.append(result if result > 0 else _UNKNOWN)
    return tuple(out)


def _per_dim(value: object, n: int) -> tuple[Size, ...] | None:
    if value is None:
        return None
    if known(value):
        return (value,) * n  # type: ignore[return-value]
    if isinstance(value, tuple) and len(value) == n:
        return tuple(v if known(v) or v is None else _UNKNOWN for v in value)  # type: ignore[misc]
    return None


# --------------------------------------------------------------- scopes
class _Scope:
    """Straight-line evaluation of a block (``__init__``, a helper method, the module):
    names and ``self`` attributes bound to sizes, layers, lists of layers and
    Sequentials. Anything bound inside a branch or loop becomes Unknown."""

    def __init__(self, analysis: _Analysis, names: _Env, cls: cst.ClassDef | None,
                 function: cst.FunctionDef | None = None) -> None:
        self.analysis = analysis
        self.names = names
        self.cls = cls
        self.attrs: _Env = {}
        self.returned: object = Unknown("no return")
        self.function = function
        self.locals_unknown = False

    # ------------------------------------------------------------ statements
    def run(self, body: Sequence[cst.BaseStatement], depth: int) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small(small, depth)
            elif isinstance(stmt, cst.With):
                self.run(stmt.body.body, depth)
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                self.names[stmt.name.value] = Unknown("a local definition")
            else:
                self.forget(stmt, "assigned in a branch or loop")

    def forget(self, stmt: cst.CSTNode, reason: str) -> None:
        for node in iter_nodes(stmt):
            target: cst.BaseExpression | None = None
            if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
                target = node.target
            elif isinstance(node, (cst.For, cst.CompFor)):
                target = node.target
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                target = node.func.value
                if isinstance(target, cst.Name) and target.value == "self":
                    self.forget_self_call(node, reason)
                    continue
            elif isinstance(node, cst.NamedExpr):
                target = node.target
            if target is None:
                continue
            if isinstance(target, (cst.Tuple, cst.List)):
                for sub in iter_nodes(target):
                    if isinstance(sub, cst.Name):
                        self.names[sub.value] = Unknown(reason)
            elif isinstance(target, cst.Name):
                self.names[target.value] = Unknown(reason)
            attr = self_attribute(target)
            if attr is not None:
                self.attrs[attr] = Unknown(reason)

    def forget_self_call(self, call: cst.Call, reason: str) -> None:
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        if method == "add_module":
            name = get_arg(call, "name", 0)
            key = _string(name.value) if name is not None else None
            if key is not None:
                self.attrs[key] = Unknown(reason)
        elif self.cls is not None:
            helper = _method(self.cls, method)
            if helper is not None:
                for attr in _self_targets(helper):
                    self.attrs[attr] = Unknown(reason)

    def small(self, small: cst.BaseSmallStatement, depth: int) -> None:
        if isinstance(small, cst.Assign):
            value = self.eval(small.value, depth)
            for target in small.targets:
                self.bind(target.target, value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self.bind(small.target, self.eval(small.value, depth))
        elif isinstance(small, cst.AugAssign):
            self.augment(small, depth)
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            self.statement_call(small.value, depth)
        elif isinstance(small, cst.Return) and small.value is not None:
            self.returned = self.eval(small.value, depth)
        else:
            self.forget(small, "changed by an unknown statement")

    def bind(self, target: cst.BaseExpression, value: object) -> None:
        if isinstance(target, cst.Name):
            self.names[target.value] = value
            return
        attr = self_attribute(target)
        if attr is not None:
            self.attrs[attr] = value
            return
        self.forget(cst.AssignTarget(target), "an unpacked assignment")

    def augment(self, small: cst.AugAssign, depth: int) -> None:
        if isinstance(small.target, cst.Name) and isinstance(small.operator, cst.AddAssign):
            current = self.names.get(small.target.value)
            extra = self.eval(small.value, depth)
            if isinstance(current, list) and isinstance(extra, list):
                self.names[small.target.value] = current + extra
                return
        if isinstance(small.target, cst.Name):
            current = self.names.get(small.target.value)
            value = self.eval(cst.BinaryOperation(small.target, _AUG[type(small.operator)](),
                                                  small.value), depth) if type(
                small.operator) in _AUG and not isinstance(current, list) else Unknown(
                "changed in place")
            self.names[small.target.value] = value
            return
        self.forget(small, "changed in place")

    def statement_call(self, call: cst.Call, depth: int) -> None:
        func = call.func
        if not isinstance(func, cst.Attribute):
            self.forget(call, "changed by an unknown call")
            return
        owner = self.lookup_object(func.value)
        method = func.attr.value
        if isinstance(owner, list) and method == "append" and len(call.args) == 1:
            owner.append(self.eval(call.args[0].value, depth))
            return
        if isinstance(owner, list) and method == "extend" and len(call.args) == 1:
            extra = self.eval(call.args[0].value, depth)
            if isinstance(extra, list):
                owner.extend(extra)
                return
        if method == "add_module" and len(call.args) == 2:
            key = _string(call.args[0].value)
            module = self.eval(call.args[1].value, depth)
            if isinstance(owner, _Builder):
                owner.elements.append(module)
                return
            if isinstance(func.value, cst.Name) and func.value.value == "self" and key:
                self.attrs[key] = module
                return
        if isinstance(func.value, cst.Name) and func.value.value == "super":
            return
        if isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) and (
                func.value.func.value == "super"):
            return
        self.forget(call, "changed by an unknown call")

    def lookup_object(self, node: cst.BaseExpression) -> object:
        if isinstance(node, cst.Name):
            return self.names.get(node.value)
        attr = self_attribute(node)
        if attr is not None:
            return self.attrs.get(attr)
        return None

    # ----------------------------------------------------------- expressions
    def eval(self, node: cst.BaseExpression, depth: int) -> object:
        if isinstance(node, cst.Integer):
            return int(node.evaluated_value)
        if isinstance(node, cst.Name):
            return self.name(node.value)
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            return node.evaluated_value if isinstance(node, cst.SimpleString) else Unknown("")
        if isinstance(node, cst.Float):
            return float(node.evaluated_value)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.eval(node.expression, depth)
            return -inner if isinstance(inner, (int, float)) and not isinstance(
                inner, bool) else Unknown("negative of an unknown")
        if isinstance(node, cst.BinaryOperation):
            return _arithmetic(node.operator, self.eval(node.left, depth),
                               self.eval(node.right, depth))
        if isinstance(node, cst.Tuple):
            return tuple(self.eval(e.value, depth) if not isinstance(e, cst.StarredElement)
                         else Unknown("starred") for e in node.elements)
        if isinstance(node, cst.List):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return Unknown("a starred list")
            return [self.eval(e.value, depth) for e in node.elements]
        if isinstance(node, cst.Attribute):
            attr = self_attribute(node)
            if attr is not None:
                return self.attrs.get(attr, Unknown(f"self.{attr}"))
            qual = None if self.locals_unknown else qualified(
                self.analysis.ctx, node, self.function)
            return self.analysis.imported(qual) if qual is not None else Unknown(
                "an attribute")
        if isinstance(node, cst.Call):
            return self.call(node, depth)
        return Unknown("an expression")

    def name(self, name: str) -> object:
        if name in self.names:
            return self.names[name]
        if name in ("True", "False"):
            return name == "True"
        if name == "None":
            return None
        if self.locals_unknown or self.function is not None and bound_in(
                self.analysis.ctx, self.function, name):
            return Unknown(f"'{name}'")
        return self.analysis.module_constant(name)

    def call(self, call: cst.Call, depth: int) -> object:
        ctx = self.analysis.ctx
        qual = qualified(ctx, call.func, self.function)
        if qual is not None and qual.startswith("torch.nn.") and qual.count(".") == 2:
            leaf = qual[len("torch.nn."):]
            if leaf == "Sequential":
                return self.sequential(call, depth)
            if leaf in LAYERS or leaf in KEEP:
                return self.layer(leaf, call, depth)
            return Unknown(f"nn.{leaf}")
        if qual in ("collections.OrderedDict", "builtins.dict") or (
                isinstance(call.func, cst.Name) and call.func.value in ("OrderedDict", "dict")
                and qual is None):
            return self.ordered_dict(call, depth)
        if isinstance(call.func, cst.Name) and call.func.value == "int" and len(call.args) == 1:
            inner = self.eval(call.args[0].value, depth)
            return int(inner) if isinstance(inner, (int, float)) and not isinstance(
                inner, bool) else Unknown("int() of an unknown")
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and (
                call.func.value.value == "self") and self.cls is not None:
            helper = _method(self.cls, call.func.attr.value)
            if helper is not None and depth < _MAX_DEPTH:
                return self.helper(helper, call, depth + 1)
        if depth < _MAX_DEPTH and isinstance(call.func, cst.Name) and (
                self.cls is not None or id(call) in index_of(ctx).nested):
            block = self.analysis.block(call, self.function, depth + 1)
            if block is not None:
                return block
        return Unknown("an unknown call")

    def layer(self, leaf: str, call: cst.Call, depth: int) -> object:
        if leaf in KEEP:
            return Layer(leaf, call, "keep", 0, _UNKNOWN, _UNKNOWN, call)
        family, dims, names = LAYERS[leaf]
        if any(arg.star for arg in call.args):
            return Layer(leaf, call, family, dims, Unknown("starred arguments"),
                         Unknown("starred arguments"), call)
        args: dict[str, object] = {}
        nodes: dict[str, cst.CSTNode] = {}
        for position, name in enumerate(names):
            arg = get_arg(call, name, position)
            if arg is not None:
                args[name] = self.eval(arg.value, depth)
                nodes[name] = arg.value
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value not in args:
                args[arg.keyword.value] = self.eval(arg.value, depth)
        first = names[0] if names else ""
        in_size: object = _UNKNOWN
        out_size: object = _UNKNOWN
        lazy = leaf.startswith("Lazy")
        if family in ("linear", "conv", "convT"):
            in_size = _UNKNOWN if lazy else args.get(first, _UNKNOWN)
            out_size = args.get(names[0] if lazy else names[1], _UNKNOWN)
        elif family == "bilinear":
            out_size = args.get("out_features", _UNKNOWN)
        elif family in ("bn", "in"):
            in_size = out_size = args.get("num_features", _UNKNOWN)
        elif family == "gn":
            in_size = out_size = args.get("num_channels", _UNKNOWN)
        elif family == "ln":
            shape = args.get("normalized_shape", _UNKNOWN)
            if isinstance(shape, (tuple, list)) and len(shape) == 1:
                shape = shape[0]
            in_size = out_size = shape if known(shape) else _UNKNOWN
        elif family == "embed":
            out_size = args.get("embedding_dim", _UNKNOWN)
        elif family in ("rnn", "cell"):
            in_size = args.get("input_size", _UNKNOWN)
            hidden = args.get("proj_size") or args.get("hidden_size", _UNKNOWN)
            positional = [a for a in call.args if a.keyword is None]
            directions = args.get("bidirectional", False)
            if len(positional) > 3 or not isinstance(directions, bool):
                hidden = _UNKNOWN
            out_size = hidden * 2 if known(hidden) and directions else hidden
        elif family in ("mha", "same"):
            in_size = out_size = args.get(first, _UNKNOWN)
            if family == "mha" and any(k in args for k in ("kdim", "vdim")):
                in_size = _UNKNOWN
        in_node = nodes.get(first, call)
        if family == "gn":
            in_node = nodes.get("num_channels", call)
        return Layer(leaf, call, family, dims, _size(in_size), _size(out_size), in_node, args)

    def sequential(self, call: cst.Call, depth: int) -> object:
        elements: list[object] = []
        for arg in call.args:
            if arg.keyword is not None:
                return Unknown("nn.Sequential with keywords")
            value = self.eval(arg.value, depth)
            if arg.star == "*":
                if not isinstance(value, list):
                    return Unknown("nn.Sequential of an unknown list")
                elements.extend(value)
            elif isinstance(value, _OrderedLayers):
                elements.extend(value.elements)
            elif arg.star:
                return Unknown("nn.Sequential of unknown arguments")
            else:
                elements.append(value)
        if not call.args:
            return _Builder(call, [])
        return Sequence_(call, tuple(_element(e) for e in elements))

    def ordered_dict(self, call: cst.Call, depth: int) -> object:
        if len(call.args) != 1 or call.args[0].keyword is not None:
            return Unknown("a dict")
        items = call.args[0].value
        if not isinstance(items, (cst.List, cst.Tuple)):
            return Unknown("a dict of unknown items")
        elements = []
        for item in items.elements:
            pair = item.value
            if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                return Unknown("a dict of unknown items")
            elements.append(self.eval(pair.elements[1].value, depth))
        return _OrderedLayers(elements)

    def helper(self, helper: cst.FunctionDef, call: cst.Call, depth: int) -> object:
        env = self.analysis.bind_arguments(helper, call)
        scope = _Scope(self.analysis, {}, self.cls, helper)
        if any(arg.star for arg in call.args):
            return Unknown("a helper called with starred arguments")
        positional = [a for a in call.args if a.keyword is None]
        for param, arg in zip(helper.params.params[1:], positional):
            env[param.name.value] = self.eval(arg.value, depth)
        for arg in call.args:
            if arg.keyword is not None:
                env[arg.keyword.value] = self.eval(arg.value, depth)
        scope.names.update(env)
        scope.attrs = self.attrs
        if any(_contains_return(s) for s in helper.body.body
               if isinstance(s, cst.BaseCompoundStatement)):
            return Unknown("a helper returning from a branch")
        scope.run(helper.body.body, depth)
        returned = scope.returned
        if isinstance(returned, _Builder):
            return Sequence_(returned.call, tuple(_element(e) for e in returned.elements))
        return returned


_AUG = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract,
        cst.MultiplyAssign: cst.Multiply, cst.FloorDivideAssign: cst.FloorDivide}


@dataclass
class _Builder:
    """``nn.Sequential()`` filled by ``add_module`` calls in order."""

    call: cst.Call
    elements: list[object]


@dataclass
class _OrderedLayers:
    elements: list[object]


def _element(value: object) -> object:
    if isinstance(value, (Layer, Sequence_)):
        return value
    if isinstance(value, _Builder):
        return Sequence_(value.call, tuple(_element(e) for e in value.elements))
    if isinstance(value, Unknown):
        return value
    return Unknown("an element that is not a known layer")


def _size(value: object) -> Size:
    if known(value):
        return value  # type: ignore[return-value]
    if isinstance(value, Unknown):
        return value
    return _UNKNOWN


def _arithmetic(operator: cst.BaseBinaryOp, left: object, right: object) -> object:
    numbers = (int, float)
    if not (isinstance(left, numbers) and isinstance(right, numbers)) or isinstance(
            left, bool) or isinstance(right, bool):
        return Unknown("arithmetic on an unknown")
    try:
        if isinstance(operator, cst.Add):
            return left + right
        if isinstance(operator, cst.Subtract):
            return left - right
        if isinstance(operator, cst.Multiply):
            return left * right
        if isinstance(operator, cst.FloorDivide):
            return left // right
        if isinstance(operator, cst.Divide):
            return left / right
        if isinstance(operator, cst.Power) and isinstance(right, int) and 0 <= right < 64:
            return left ** right
    except (ZeroDivisionError, OverflowError):
        pass
    return Unknown("arithmetic")


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    found = None
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            if found is not None:
                return None
            found = stmt
    return found


_BLOCKS = (cst.BaseStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.Finally)


def _small_statements(function: cst.FunctionDef) -> Iterator[cst.BaseSmallStatement]:
    """Every small statement of ``function``, in blocks at any depth, without walking
    into expressions."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from node.body
            continue
        stack.extend(c for c in children_of(node) if isinstance(c, _BLOCKS))


def _self_targets(function: cst.FunctionDef) -> Iterator[str]:
    """The ``self`` attributes ``function`` assigns (or adds with ``add_module``)."""
    for small in _small_statements(function):
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            targets = [small.target]
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                    "add_module", "register_module") and self_attribute(call.func) is None and (
                    isinstance(call.func.value, cst.Name) and call.func.value.value == "self"):
                name = get_arg(call, "name", 0)
                key = _string(name.value) if name is not None else None
                if key is not None:
                    yield key
        for target in targets:
            elements = [e.value for e in target.elements] if isinstance(
                target, (cst.Tuple, cst.List)) else [target]
            for element in elements:
                attr = self_attribute(element)
                if attr is not None:
                    yield attr


def _assigned_outside_init(cls: cst.ClassDef) -> set[str]:
    """Attributes a method other than ``__init__`` may reassign after construction."""
    names: set[str] = set()
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value != "__init__":
            names.update(_self_targets(stmt))
    return names


def _binds(function: cst.FunctionDef, name: str, *, parameters_too: bool = True) -> bool:
    return (parameters_too and any(p.name.value == name for p in parameters(function))) or (
        binds_anywhere(function.body, name))


def qualified(ctx: FileContext, expr: cst.BaseExpression,
              function: cst.FunctionDef | None) -> str | None:
    """What ``expr`` names through the file's imports, wherever the walk is: None when
    ``function`` binds its first name (a parameter ``nn`` is not torch.nn)."""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    if function is not None and bound_in(ctx, function, root.value):
        return None
    return ctx.resolve_module_level(expr)


def bound_in(ctx: FileContext, function: cst.FunctionDef, name: str) -> bool:
    """Does ``function`` bind ``name`` (a parameter, or anywhere in its body, nested
    functions included)? One walk per function."""
    return name in ctx.cached(("size_bound_names", id(function)),
                              lambda: _names_bound(function))


def _names_bound(function: cst.FunctionDef) -> frozenset[str]:
    """Parameters and names bound by the statements of ``function`` (walrus and
    comprehension targets aside: they never rebind a module such as ``nn``)."""
    names = {p.name.value for p in parameters(function)}
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        names.update(bound_names(node))
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                names.update(bound_names(small))
            continue
        stack.extend(c for c in children_of(node) if isinstance(c, _BLOCKS))
    return frozenset(names)


@dataclass
class _Index:
    """What one walk of the file finds for the analysis: assignments and calls in source
    order, and the ``nn.Sequential`` calls not nested in another one, by the function
    (None: module level) they are in."""

    assigns: list[cst.Assign] = field(default_factory=list)
    calls: list[cst.Call] = field(default_factory=list)
    sequentials: dict[int | None, list[cst.Call]] = field(default_factory=dict)
    nested: set[int] = field(default_factory=set)   # calls inside a Sequential found
    in_functions: set[int] = field(default_factory=set)  # calls inside a function
    scope: dict[int, int] = field(default_factory=dict)  # node -> its function's id (0: none)
    last: cst.CSTNode | None = None
    observed: bool = False


def _index(ctx: FileContext) -> _Index:
    index = _Index()
    calls, assigns = index.calls, index.assigns
    nested = index.nested
    # (node, the function it is in): functions and classes change it, nothing else
    stack: list[tuple[cst.CSTNode, cst.FunctionDef | None]] = [(ctx.module, None)]
    while stack:
        scope, function = stack.pop()
        inner = [scope]
        while inner:
            node = inner.pop()
            kind = type(node)
            if kind is cst.Call or kind is cst.Assign:
                index.scope[id(node)] = id(function) if function is not None else 0
            if kind is cst.Call:
                calls.append(node)  # type: ignore[arg-type]
                if function is not None:
                    index.in_functions.add(id(node))
                func = node.func  # type: ignore[attr-defined]
                name = func.attr.value if type(func) is cst.Attribute else (
                    func.value if type(func) is cst.Name else None)
                if name == "Sequential" and id(node) not in nested and qualified(
                        ctx, func, function) == "torch.nn.Sequential":
                    index.sequentials.setdefault(id(function) if function else None,
                                                 []).append(node)  # type: ignore[arg-type]
                    nested.update(id(n) for n in iter_nodes(node) if type(n) is cst.Call)
            elif kind is cst.Assign:
                assigns.append(node)  # type: ignore[arg-type]
            elif node is not scope and (kind is cst.FunctionDef or kind is cst.ClassDef):
                stack.append((node, node if kind is cst.FunctionDef else None))  # type: ignore[arg-type]
                continue
            inner.extend(reversed(children_of(node)))
    return index


def _outer_sequentials(ctx: FileContext, where: cst.CSTNode) -> list[cst.Call]:
    """``nn.Sequential(...)`` calls directly in ``where`` (a function, or the module for
    module level: nested functions and classes aside) not nested in another one."""
    key = id(where) if isinstance(where, cst.FunctionDef) else None
    return index_of(ctx).sequentials.get(key, [])


def _last_name(func: cst.BaseExpression) -> str | None:
    if type(func) is cst.Name:
        return func.value  # type: ignore[attr-defined]
    if type(func) is cst.Attribute:
        return func.attr.value  # type: ignore[attr-defined]
    return None


def _calls_by_name(ctx: FileContext) -> dict[str, list[cst.Call]]:
    """The calls of a bare name (``Net(...)``), by that name."""
    found: dict[str, list[cst.Call]] = {}
    for call in index_of(ctx).calls:
        if type(call.func) is cst.Name:
            found.setdefault(call.func.value, []).append(call)  # type: ignore[attr-defined]
    return found


def index_of(ctx: FileContext) -> _Index:
    index: _Index = ctx.cached("size_index", lambda: _index(ctx))
    return index if index.observed or index.calls or index.assigns else _index(ctx)


def _contains_return(stmt: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Return) for n in iter_nodes(stmt))


# ------------------------------------------------------------ forward flow
class _Flow:
    """The values flowing through ``forward``: names bound to a :class:`Value`."""

    def __init__(self, analysis: _Analysis, chain: Chain, scope: _Scope,
                 values: dict[str, Value]) -> None:
        self.analysis = analysis
        self.chain = chain
        self.scope = scope
        self.values: dict[str, Value | Unknown] = dict(values)
        self.returned: list[Value | Unknown | None] = []  # what each return gives

    def run(self, body: Sequence[cst.BaseStatement]) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.small(small)
            elif isinstance(stmt, cst.With):
                self.run(stmt.body.body)
            else:
                self.branch(stmt)

    def branch(self, stmt: cst.CSTNode) -> None:
        bound = {n.value for node in iter_nodes(stmt)
                 if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.For, cst.NamedExpr))
                 for n in iter_nodes(node.target) if isinstance(n, cst.Name)}
        for name in bound:
            if name in self.values:
                if isinstance(self.values[name], Value):
                    self.chain.steps.append(Step("branch", _show(self.values[name]), "?",
                                                 stmt, stop="a branch or loop rebinds "
                                                 f"'{name}'"))
                self.values[name] = Unknown("a branch")

    def small(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Tuple):
                self.unpack(small.targets[0].target, small.value)
                return
            value = self.eval(small.value)
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    self.set(target.target.value, value, small)
                else:
                    self.forget(target.target)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            name = small.target.value
            other = self.eval(small.value)
            if name in self.values and (isinstance(other, Value) or _number(small.value)) and (
                    isinstance(small.operator, (cst.AddAssign, cst.MultiplyAssign))):
                return
            self.set(name, Unknown("changed in place") if name in self.values else None, small)
        elif isinstance(small, cst.Return) and small.value is not None:
            returned = small.value
            self.values.pop("<return>", None)
            parts = [e.value for e in returned.elements] if isinstance(
                returned, cst.Tuple) else [returned]
            for part in parts:
                flowing = [self.values[n.value] for n in iter_nodes(part) if isinstance(
                    n, cst.Name) and isinstance(self.values.get(n.value), Value)]
                result = self.eval(part)
                if isinstance(result, Unknown) and flowing:
                    self.chain.steps.append(Step(result.reason, _show(flowing[0]), "?", small,
                                                 stop=result.reason))
                self.returned.append(result if len(parts) == 1 else None)
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and (
                small.value is not None):
            self.set(small.target.value, self.eval(small.value), small)

    def forget(self, target: cst.BaseExpression) -> None:
        for node in iter_nodes(target):
            if isinstance(node, cst.Name) and node.value in self.values:
                self.values[node.value] = Unknown("unpacked")

    def set(self, name: str, value: Value | Unknown | None, node: cst.CSTNode) -> None:
        previous = self.values.get(name)
        if isinstance(value, Unknown) and isinstance(previous, Value):
            self.chain.steps.append(Step(value.reason, _show(previous), "?", node,
                                         stop=value.reason))
        if value is None:
            self.values.pop(name, None)
        else:
            self.values[name] = value

    def unpack(self, target: cst.Tuple, value_node: cst.BaseExpression) -> None:
        first = target.elements[0].value if target.elements else None
        out: Value | Unknown | None = None
        if isinstance(value_node, cst.Call):
            module = self.module_of(value_node.func)
            if isinstance(module, Layer) and module.family in ("rnn", "mha"):
                out = self.apply_tuple(module, value_node)
            else:
                out = self.eval(value_node)
                if isinstance(out, Value):
                    out = Unknown("unpacked")
        for element in target.elements:
            if isinstance(element.value, cst.Name):
                self.values.pop(element.value.value, None)
        if isinstance(first, cst.Name) and out is not None:
            self.values[first.value] = out

    def apply_tuple(self, layer: Layer, call: cst.Call) -> Value | Unknown:
        value = self.argument(call)
        if value is None:
            return Unknown("not a flowing value")
        if isinstance(value, Unknown):
            value = Value()
        before = _show(value)
        self.analysis.check(self.chain, layer, value)
        rank = value.rank if known(value.rank) else _UNKNOWN
        out = Value(rank, layer.out_size if rank == 2 else _UNKNOWN, layer.out_size, None,
                    layer.label)
        self.chain.steps.append(Step(layer.label, before, _show(out), layer.call))
        return out

    def module_of(self, func: cst.BaseExpression) -> object:
        attr = self_attribute(func)
        if attr is None:
            return None
        return self.scope.attrs.get(attr, Unknown(f"self.{attr} is not a known layer"))

    def argument(self, call: cst.Call) -> Value | Unknown | None:
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        return self.eval(call.args[0].value)

    def eval(self, node: cst.BaseExpression) -> Value | Unknown | None:
        """The value ``node`` computes from the flowing values (None: none flows in)."""
        if isinstance(node, cst.Name):
            return self.values.get(node.value)
        if isinstance(node, cst.Call):
            return self.call(node)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.eval(node.left), self.eval(node.right)
            if isinstance(left, Value) and isinstance(right, Value):
                return _merged(left, right)
            if isinstance(left, Value) and _number(node.right):
                return left
            if isinstance(right, Value) and _number(node.left):
                return right
            return self.stop_if_flowing(node, (left, right), "arithmetic with another value")
        if isinstance(node, cst.Subscript):
            return self.subscript(node)
        inner = [self.eval(c) for c in _expressions(node)]
        return self.stop_if_flowing(node, inner, "an expression")

    def stop_if_flowing(self, node: cst.CSTNode, values: Sequence[object],
                        reason: str) -> Unknown | None:
        """Unknown(reason) when a flowing value goes into ``node``; None when none does."""
        if any(isinstance(v, (Value, Unknown)) for v in values):
            return Unknown(reason)
        return None

    def subscript(self, node: cst.Subscript) -> Value | Unknown | None:
        base = self.eval(node.value)
        if not isinstance(base, Value):
            return base
        indices = [e.slice for e in node.slice]
        dropped = 0
        for i, index in enumerate(indices):
            if isinstance(index, cst.Index) and _number(index.value):
                dropped += 1
            elif isinstance(index, cst.Slice) and index.lower is None and index.upper is None \
                    and index.step is None:
                continue
            else:
                return self.stop_if_flowing(node, [base], "indexing")
        last_kept = isinstance(indices[-1], cst.Slice) or (
            known(base.rank) and len(indices) < base.rank)  # type: ignore[operator]
        if not last_kept or dropped == 0:
            return self.stop_if_flowing(node, [base], "indexing")
        # the features stay; the rank is left unknown (the ast triage of TL512 counts no
        # indexing among the places a rank comes from)
        return Value(_UNKNOWN, _UNKNOWN, base.features, None, base.source)

    def call(self, call: cst.Call) -> Value | Unknown | None:
        module = self.module_of(call.func)
        if module is not None:
            return self.call_module(call, module)
        ctx = self.analysis.ctx
        qual = qualified(ctx, call.func, self.scope.function)
        first = self.argument(call)
        if isinstance(call.func, cst.Attribute) and qual is None:
            receiver = self.eval(call.func.value)
            if isinstance(receiver, Value):
                return self.method(call, receiver)
            if receiver is not None:
                return receiver if isinstance(receiver, Unknown) else None
        if qual in _KEEP_FUNCTIONS and isinstance(first, Value):
            self.chain.steps.append(Step(_short(qual), _show(first), _show(first), call))
            return first
        if qual in ("torch.flatten",) and isinstance(first, Value):
            start = get_arg(call, "start_dim", 1)
            end = get_arg(call, "end_dim", 2)
            if start is not None and _int(start.value) == 1 and end is None:
                return self.flattened(call, first, "torch.flatten")
            return self.stop_if_flowing(call, [first], "a reshape")
        if qual in _SPATIAL_FUNCTIONS and isinstance(first, Value):
            spatial = self.functional_pool(qual or "", call, first)
            out = Value(first.rank, first.channels, spatial[-1] if spatial else _UNKNOWN,
                        spatial, first.source)
            self.chain.steps.append(Step(_short(qual or ""), _show(first), _show(out), call))
            return out
        values = [self.eval(a.value) for a in call.args]
        return self.stop_if_flowing(call, values, f"{_short(qual) if qual else 'a call'}")

    def functional_pool(self, qual: str, call: cst.Call, value: Value
                        ) -> tuple[Size, ...] | None:
        """The spatial sizes after ``F.max_pool2d(x, k, s, p)`` / ``F.avg_pool2d``."""
        leaf = qual.rsplit(".", 1)[1]
        if not leaf.startswith(("max_pool", "avg_pool")) or any(a.star for a in call.args):
            return None
        names = ("input",) + (MAX_POOL if leaf.startswith("max") else AVG_POOL)
        args: dict[str, object] = {}
        for position, name in enumerate(names[1:], start=1):
            arg = get_arg(call, name, position)
            if arg is not None:
                args[name] = self.scope.eval(arg.value, 0)
        pool = Layer(leaf, call, "pool", int(leaf[-2]), _UNKNOWN, _UNKNOWN, call, args)
        return _spatial(pool, value, value.rank)

    def flattened(self, call: cst.CSTNode, value: Value, how: str) -> Value:
        out = _flatten(value, how)
        self.chain.steps.append(Step(how, _show(value), _show(out), call))
        return out

    def method(self, call: cst.Call, value: Value) -> Value | Unknown | None:
        assert isinstance(call.func, cst.Attribute)
        name = call.func.attr.value
        if name in _KEEP_METHODS:
            self.chain.steps.append(Step(f".{name}()", _show(value), _show(value), call))
            return value
        if name in ("view", "reshape") and len(call.args) == 2 and not any(
                a.keyword or a.star for a in call.args):
            size = self.scope.eval(call.args[1].value, 0)
            if known(size) and size > 0:  # type: ignore[operator]
                out = Value(2, size, size, None, f"{call.func.attr.value}(-1, {size})", True)
                self.chain.steps.append(Step(f".{name}()", _show(value), _show(out), call))
                return out  # type: ignore[return-value]
            if size == -1:
                return self.flattened(call, value, f".{name}()")
        if name == "flatten" and len(call.args) == 1 and _int(call.args[0].value) == 1:
            return self.flattened(call, value, ".flatten(1)")
        return self.stop_if_flowing(call, [value], f"a reshape (.{name})"
                                    if name in _RESHAPES else f".{name}()")

    def call_module(self, call: cst.Call, module: object) -> Value | Unknown | None:
        value = self.argument(call)
        if value is None:
            if isinstance(module, (Layer, Sequence_)):
                value = Value()
            else:
                return None
        if isinstance(value, Unknown):
            self.chain.steps.append(Step(value.reason, "?", "?", call, stop=value.reason))
            value = Value()
        if isinstance(module, Layer):
            if len(call.args) != 1:
                return self.stop_if_flowing(call, [value], f"{module.name} with more arguments")
            out = self.analysis.apply(self.chain, module, value)
            return out if out is not None else Unknown(f"{module.name} returns a tuple")
        if isinstance(module, Sequence_):
            out = self.analysis.walk_sequence(self.chain, module, value)
            return out if out is not None else Unknown("a tuple")
        reason = module.reason if isinstance(module, Unknown) else "an unknown module"
        return self.stop_if_flowing(call, [value], reason)



def _expressions(node: cst.CSTNode) -> list[cst.BaseExpression]:
    return [c for c in node.children if isinstance(c, cst.BaseExpression)] + [
        e.value for c in node.children if isinstance(c, (cst.Element, cst.Arg))
        for e in (c,)]


def _merged(left: Value, right: Value) -> Value:
    """``x + f(x)``: one value of the sizes either side proves (a residual sum takes the
    sizes of both; where both are known, the left one's)."""
    if left.rank == right.rank and left.channels == right.channels and (
            left.features == right.features) and left.spatial == right.spatial:
        return left
    if known(left.rank) and known(right.rank) and left.rank != right.rank:
        return left
    pick = right if not known(left.channels) and not known(left.features) else left
    other = left if pick is right else right
    return replace(pick, rank=pick.rank if known(pick.rank) else other.rank,
                   channels=pick.channels if known(pick.channels) else other.channels,
                   features=pick.features if known(pick.features) else other.features,
                   spatial=pick.spatial if pick.spatial is not None else other.spatial)


def _number(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.expression,
                                                            (cst.Integer, cst.Float)))


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def _short(qual: str | None) -> str:
    if qual is None:
        return "a call"
    return qual.replace("torch.nn.functional.", "F.")


# ------------------------------------------------------------ stated inputs
_SUMMARIES = frozenset({"torchsummary.summary", "torchinfo.summary"})
_FACTORIES = INPUT_FACTORIES | {"torch.randint"}


def _stated_inputs(analysis: _Analysis) -> dict[str | int, Value]:
    """Input sizes the file states for a model: a dummy input passed to the model
    (``model(torch.randn(1, 3, 32, 32))``, ``torch.onnx.export(model, x, ...)``), keyed by
    the class (or a module-level Sequential's variable). Two different sizes: none."""
    ctx = analysis.ctx
    # names are keyed by the function they are assigned in, and used only when assigned
    # once there: ``model`` of one test function is not ``model`` of the next
    instances: dict[tuple[int, str], str | int] = {}
    found: dict[str | int, set[tuple[int, ...]]] = {}
    tensors: dict[tuple[int, str], tuple[int, ...]] = {}
    index = index_of(ctx)
    counts = Counter((index.scope.get(id(a), -1), t.target.value) for a in index.assigns
                     for t in a.targets if isinstance(t.target, cst.Name))
    for node in index.assigns:
        if len(node.targets) == 1 and isinstance(
                node.targets[0].target, cst.Name):
            name = (index.scope.get(id(node), -1), node.targets[0].target.value)
            if counts[name] != 1:
                continue
            value = node.value
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
                    value.func.attr.value in INSTANCE_METHODS):
                value = value.func.value
            if isinstance(value, cst.Call):
                cls = ctx.local_module_class(value.func)
                if cls is not None:
                    instances[name] = cls.name.value
                elif qualified(ctx, value.func, None) == "torch.nn.Sequential":
                    instances[name] = id(value)
                shape = _factory_shape(analysis, value)
                if shape is not None:
                    tensors[name] = shape
    for node in index.calls:
        if not node.args:
            continue
        model: str | int | None = None
        shape_node: cst.BaseExpression | None = None
        where = index.scope.get(id(node), -1)
        if isinstance(node.func, cst.Name) and (where, node.func.value) in instances:
            model, shape_node = instances[where, node.func.value], node.args[0].value
        elif isinstance(node.func, cst.Call) and (cls := ctx.local_module_class(
                node.func.func)) is not None:
            model, shape_node = cls.name.value, node.args[0].value
        elif qualified(ctx, node.func, None) == "torch.onnx.export" and len(node.args) > 1 and (
                isinstance(node.args[0].value, cst.Name)):
            model = instances.get((where, node.args[0].value.value))
            shape_node = node.args[1].value
        shape: tuple[int, ...] | None = None
        summary = qualified(ctx, node.func, None)
        if summary in _SUMMARIES and isinstance(node.args[0].value, cst.Name):
            # torchsummary's input_size leaves the batch out, torchinfo's includes it
            size = get_arg(node, "input_size", 1)
            value = _Scope(analysis, {}, None).eval(size.value, 0) if size else None
            if isinstance(value, list):
                value = tuple(value)
            if isinstance(value, tuple) and value and all(known(v) for v in value):
                model = instances.get((where, node.args[0].value.value))
                shape = (1, *value) if summary == "torchsummary.summary" else value
                shape_node = None
        elif model is None or shape_node is None:
            continue
        if model is None:
            continue
        if shape is None and isinstance(shape_node, cst.Name):
            shape = tensors.get((where, shape_node.value))
        elif shape is None and isinstance(shape_node, cst.Call):
            shape = _factory_shape(analysis, shape_node)
        if shape is not None:
            found.setdefault(model, set()).add(shape)
    stated: dict[str | int, Value] = {}
    if not found:
        image = _dataset_image(analysis, index)
        models = {m for m in instances.values() if isinstance(m, str)}
        if image is not None and len(models) == 1:
            channels, height, width = image
            stated[models.pop()] = Value(4, channels, width, (height, width),
                                         "the dataset's images", dataset=True)
    for model, shapes in found.items():
        if len(shapes) == 1:
            (shape,) = shapes
            stated[model] = _input_value(shape)
    return {model: value for model, value in stated.items() if value is not None}


def _input_value(shape: tuple[int, ...]) -> Value | None:
    """What a dummy input of ``shape`` says of a model's input."""
    if len(shape) >= 3:
        return Value(len(shape), shape[1], shape[-1], tuple(shape[2:]),
                     f"the input {tuple(shape)}")
    if len(shape) == 2:
        return Value(2, shape[1], shape[1], None, f"the input {tuple(shape)}")
    return None


def _flattens_images(chain: Chain) -> bool:
    """The chain starts on images (a conv or pool first) and flattens them: the spatial
    size of its input decides the features its Linear receives."""
    return bool(chain.steps) and chain.steps[0].label.startswith(
        ("Conv", "MaxPool", "AvgPool")) and any(
        word in step.label for step in chain.steps for word in ("flatten", "Flatten", "view",
                                                                 "reshape"))


def _dataset_image(analysis: _Analysis, index: _Index) -> tuple[Size, int, int] | None:
    """(channels, height, width) of the images of every dataset the file loads through a
    ``DataLoader``, when they provably agree: a dataset of a known size, or a literal
    ``Resize``/``CenterCrop``/``RandomCrop`` in its transform."""
    ctx = analysis.ctx
    if not any(isinstance(c.func, (cst.Name, cst.Attribute)) and _last_name(c.func) == (
            "DataLoader") and qualified(ctx, c.func, None) == "torch.utils.data.DataLoader"
               for c in index.calls):
        return None
    sizes: set[tuple[Size, int, int]] = set()
    leaves = {q.rsplit(".", 1)[1] for q in _DATASETS} | {"ImageFolder"}
    for call in index.calls:
        if _last_name(call.func) not in leaves:
            continue
        qual = qualified(ctx, call.func, None)
        if qual is None or not qual.startswith("torchvision.datasets."):
            continue
        base: tuple[Size, Size, Size] = _DATASETS.get(qual, (_UNKNOWN, _UNKNOWN, _UNKNOWN))
        if qual.endswith(".ImageFolder"):
            base = (3, _UNKNOWN, _UNKNOWN)
        transform = get_arg(call, "transform")
        image = _transformed(analysis, index, base, transform.value if transform else None)
        if image is None:
            return None
        sizes.add(image)
    if len(sizes) != 1:
        return None
    return sizes.pop()


def _transformed(analysis: _Analysis, index: _Index, image: tuple[Size, Size, Size],
                 transform: cst.BaseExpression | None) -> tuple[Size, int, int] | None:
    ctx = analysis.ctx
    if isinstance(transform, cst.Name):
        bound = [a.value for a in index.assigns if len(a.targets) == 1 and isinstance(
            a.targets[0].target, cst.Name) and a.targets[0].target.value == transform.value]
        transform = bound[0] if len(bound) == 1 else None
        if transform is None:
            return None
    steps: list[cst.BaseExpression] = []
    if isinstance(transform, cst.Call) and qualified(
            ctx, transform.func, None) == "torchvision.transforms.Compose":
        arg = transform.args[0].value if transform.args else None
        if not isinstance(arg, (cst.List, cst.Tuple)):
            return None
        steps = [e.value for e in arg.elements]
    elif transform is not None:
        steps = [transform]
    channels, height, width = image
    scope = _Scope(analysis, {}, None)
    for step in steps:
        if not isinstance(step, cst.Call):
            return None
        qual = qualified(ctx, step.func, None)
        if qual in _KEEP_TRANSFORMS:
            continue
        if qual == "torchvision.transforms.Grayscale":
            arg = get_arg(step, "num_output_channels", 0)
            channels = scope.eval(arg.value, 0) if arg else 1  # type: ignore[assignment]
            channels = channels if known(channels) else _UNKNOWN
            continue
        if qual not in _CROPS:
            return None
        arg = get_arg(step, "size", 0)
        size = scope.eval(arg.value, 0) if arg else _UNKNOWN
        if isinstance(size, (list, tuple)) and len(size) == 1:
            size = size[0]
        if known(size):
            if qual.endswith(".Resize") and not (known(height) and height == width):
                height = width = _UNKNOWN  # the shorter side: the other depends on the image
            else:
                height = width = size  # type: ignore[assignment]
        elif isinstance(size, (list, tuple)) and len(size) == 2 and all(known(v) for v in size):
            height, width = size  # type: ignore[assignment]
        else:
            return None
    if known(height) and known(width):
        return channels, height, width  # type: ignore[return-value]
    return None


def _factory_shape(analysis: _Analysis, call: cst.Call) -> tuple[int, ...] | None:
    qual = qualified(analysis.ctx, call.func, None)
    if qual not in _FACTORIES:
        return None
    args = [a for a in call.args if a.keyword is None]
    if qual == "torch.randint":
        size = get_arg(call, "size", 2)
        if size is None:
            return None
        args = [size]
    scope = _Scope(analysis, {}, None)
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        values = scope.eval(args[0].value, 0)
        values = tuple(values) if isinstance(values, list) else values
    else:
        values = tuple(scope.eval(a.value, 0) for a in args)
    if isinstance(values, tuple) and values and all(known(v) for v in values):
        return values  # type: ignore[return-value]
    return None
