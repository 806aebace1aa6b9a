"""The ``ast`` checks of the size rules (TL510-TL512): before libcst parses a file, is
there a place where the rule can really report? They share one mirror of the size analysis
(``torchlint.analysis.sizes``), run once per file: the same chains (``nn.Sequential``
elements, the value flowing through ``forward``), the same evaluation of sizes, the same
places where a chain stops. What the analysis may learn from other files (constructor
arguments, imported constants, dummy inputs) is a size known here only by its spelling
(:class:`_Sym`): two sizes of one spelling are equal, any other pair may disagree. Each
check errs only towards True (see :func:`torchlint.engine.triage.check`).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from torchlint.analysis.ast_names import (
    end as _end,
    self_attribute as _self_attribute,
    start as _start,
    target_names as _target_names,
)
from torchlint.analysis.layer_table import (
    AVG_POOL,
    CROPS,
    DATASETS,
    INPUT_FACTORIES,
    INSTANCE_METHODS,
    KEEP,
    KEEP_FUNCTIONS,
    KEEP_METHODS,
    KEEP_TRANSFORMS,
    LAYERS,
    MAX_POOL,
    RESHAPES,
    SPATIAL_FUNCTIONS,
    accepted_ranks,
)
from torchlint.analysis.options import Options
from torchlint.analysis.project_sizes import project_files, project_inputs
from torchlint.analysis.spelling import from_elsewhere as _from_elsewhere
from torchlint.engine.triage import FileFacts

__all__ = ["may_flag_tl510", "may_flag_tl511", "may_flag_tl512"]


# ------------------------------------------------------------------ TL510-TL512
def may_flag_tl510(facts: FileFacts, options: Options) -> bool:
    return "size" in _size_kinds(facts, options)


def may_flag_tl511(facts: FileFacts, options: Options) -> bool:
    return "flatten" in _size_kinds(facts, options)


def may_flag_tl512(facts: FileFacts, options: Options) -> bool:
    return "rank" in _size_kinds(facts, options)


def _size_kinds(facts: FileFacts, options: Options) -> frozenset[str]:
    """The kinds of mismatch ("size", "flatten", "rank") the size analysis may find
    (computed once per file and options: the three rules ask in turn)."""
    return facts.once(("size kinds", options), lambda: _find_size_kinds(facts, options))


def _find_size_kinds(facts: FileFacts, options: Options) -> frozenset[str]:
    kinds: set[str] = set()
    if facts.tree is not None and "torch" in facts.top_modules:
        try:
            _Mirror(facts, options, kinds).run()
        except _AllFound:
            pass
        except Exception:  # noqa: BLE001 - a shape this mirror cannot read: the rules may fire
            kinds.update(_ALL)
    return frozenset(kinds)


_ALL = frozenset({"size", "flatten", "rank"})


class _AllFound(Exception):
    """Every kind is found: nothing more to learn from the file."""


# --- the values: a size known here, one known only by its spelling, or surely unknown
class _Unknown:
    """What the analysis can never prove here (its ``Unknown``)."""

    def __repr__(self) -> str:
        return "UNK"


UNK = _Unknown()


class _NamingUnknown(_Unknown):
    """An unknown value of a ``forward`` chain whose reason (the label of the step that
    stops on it) may name a flatten, a view or a reshape: such a step makes the analysis
    ask the project for an input (``_flattens_images``)."""


UNK_NAMING = _NamingUnknown()


def _names_flatten(text: str) -> bool:
    return any(word in text for word in _FLATTENS)


@dataclass(frozen=True)
class _Sym:
    """A value the analysis may know (from a construction, an imported constant, a stated
    input) but this check does not: ``key`` its spelling (None: anything). A product of
    named factors is kept as a coefficient and the sorted factors, so that ``4 * c`` and
    ``c * 4`` are one size."""

    key: object = None

    def __repr__(self) -> str:
        return f"Sym({self.key!r})"


WILD = _Sym()


def _int(value: object) -> bool:
    return type(value) is int


def _maybe(value: object) -> bool:
    """May the analysis know ``value`` as a size?"""
    return type(value) is int or type(value) is _Sym


def _may_differ(left: object, right: object) -> bool:
    if not (_maybe(left) and _maybe(right)):
        return False
    if type(left) is int and type(right) is int:
        return left != right
    return not (type(left) is _Sym and left == right and left.key is not None)  # type: ignore[union-attr]


def _join(left: object, right: object) -> object:
    """One value covering both (the analysis may reach either)."""
    if left == right and (type(left) is not _Sym or left.key is not None):  # type: ignore[union-attr]
        return left
    return WILD


def _if_rank2(rank: object, two: object, other: object) -> object:
    """``two if rank == 2 else other``, both when the rank is known only by spelling."""
    if type(rank) is _Sym:
        return _join(two, other)
    return two if rank == 2 else other


def _monomial(value: object) -> tuple[object, tuple[str, ...]] | None:
    if type(value) is int:
        return value, ()
    if type(value) is _Sym and type(value.key) is tuple and value.key[0] == "*":  # type: ignore[union-attr,index]
        return value.key[1], value.key[2]  # type: ignore[union-attr,index]
    if type(value) is _Sym and value.key is not None:  # type: ignore[union-attr]
        return 1, (repr(value.key),)  # type: ignore[union-attr]
    return None


def _symbolic(op: type, left: object, right: object) -> object:
    """Arithmetic where one side is a :class:`_Sym`."""
    if left is UNK or right is UNK or type(left) is bool or type(right) is bool:
        return UNK
    if not all(type(v) in (int, float, _Sym) for v in (left, right)):
        return UNK
    if op is ast.Mult:
        a, b = _monomial(left), _monomial(right)
        if a is not None and b is not None:
            coefficient = a[0] * b[0]  # type: ignore[operator]
            factors = tuple(sorted(a[1] + b[1]))
            if not factors:
                return coefficient
            if coefficient == 1 and len(factors) == 1 and type(left) is _Sym and (
                    _monomial(left) == (1, factors)):
                return left
            if coefficient == 1 and len(factors) == 1 and type(right) is _Sym and (
                    _monomial(right) == (1, factors)):
                return right
            return _Sym(("*", coefficient, factors))
    if WILD in (left, right):
        return WILD
    return _Sym((op.__name__, left, right))


# --- layers and sequences, as the analysis builds them
@dataclass(frozen=True)
class _Layer:
    name: str
    family: str
    dims: int
    in_size: object
    out_size: object
    args: tuple[tuple[str, object], ...] = ()

    def arg(self, name: str, default: object = None) -> object:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.args)


@dataclass(frozen=True)
class _Seq:
    elements: tuple[object, ...]


@dataclass
class _Builder:
    """``nn.Sequential()`` filled by ``add_module``."""

    elements: list[object]


@dataclass
class _Ordered:
    elements: list[object]


_KEEPERS = frozenset({"keep", "dropnd", "pool", "adaptive", "pad", "upsample"})
_SIZED = frozenset({"linear", "conv", "convT", "bn", "in", "gn", "ln", "rnn", "cell", "mha",
                    "same", "block"})
_MAX_DEPTH = 4
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class _Value:
    """A tensor flowing through a chain (the analysis's ``Value``); ``spatial`` a tuple,
    None (unknown) or WILD (any); ``flattened`` True, False or None (either)."""

    rank: object = UNK
    channels: object = UNK
    features: object = UNK
    spatial: object = None
    flattened: bool | None = False


_FLATTENS = ("flatten", "Flatten", "view", "reshape")
_FLATTENING = re.compile(r"^.*(?:flatten|Flatten|view|reshape).*$", re.M)
_FACTORIES = INPUT_FACTORIES | {"torch.randint"}
_SUMMARIES = frozenset({"torchsummary.summary", "torchinfo.summary"})
_FRESH = _Value()
_ANY = _Value(WILD, WILD, WILD, WILD, None)


class _Mirror:
    """The size analysis of one file, on the ``ast`` tree (see the module's docstring)."""

    def __init__(self, facts: FileFacts, options: Options, kinds: set[str]) -> None:
        self.facts = facts
        self.kinds = kinds
        self.tree: ast.Module = facts.tree  # type: ignore[assignment]
        self.module_classes = facts.module_classes(options)
        self.classes = [c for c in facts.nodes(ast.ClassDef)
                        if c.name in self.module_classes]  # type: ignore[attr-defined]
        # the models this file may state an input size for (classes, and whether a
        # Sequential assigned to a name)
        # model -> its stated input: a class by name, a Sequential by id() of its call
        self.stated: dict[object, _Value] = {}
        self.interfaces: dict[tuple[int, str], object] = {}
        self.quiet = 0
        # words in the steps' labels and reasons the analysis reads: a flatten, a view or
        # reshape; a first step on images (a layer, a class or a reason naming one)
        words = "\n" + "\n".join(facts.names)
        self._flattening = set(_FLATTENING.findall(words))
        self._class_flattens: dict[int, bool] = {}
        self._flatten_marks: list[tuple[int, int]] | None = None
        self._module_flattens: bool | None = None
        self.conv_words = any(w in words for w in ("\nConv", "\nMaxPool", "\nAvgPool"))
        self.constants: dict[str, object] = {}
        self._module_values: dict[str, object] | None = None
        self._functions: list[tuple[tuple[int, int], tuple[int, int], ast.AST]] | None = None
        self._bound: dict[int, frozenset[str]] = {}
        self._stores: dict[int, list[str]] = {}
        self._sequentials: list[ast.Call] | None = None
        self._nested: set[int] | None = None

    @property
    def module_values(self) -> dict[str, object]:
        if self._module_values is None:
            self._module_values = _module_values(self.tree)
        return self._module_values

    @property
    def functions(self) -> list[tuple[tuple[int, int], tuple[int, int], ast.AST]]:
        if self._functions is None:
            self._functions = sorted(
                ((_start(f), _end(f), f) for f in self.facts.nodes(*_FUNCTIONS)),
                key=lambda item: item[0])
        return self._functions

    @property
    def function_starts(self) -> list[tuple[int, int]]:
        memo = getattr(self, "_function_starts", None)
        if memo is None:
            memo = self._function_starts = [start for start, _, _ in self.functions]
        return memo  # type: ignore[no-any-return]

    @property
    def nested(self) -> set[int]:
        """The calls inside a Sequential call."""
        if self._nested is None:
            self._nested = {id(inner) for call in self.sequentials()
                            for arg in (*call.args, *(k.value for k in call.keywords))
                            for inner in ast.walk(arg) if type(inner) is ast.Call}
        return self._nested

    @property
    def flattening_imports(self) -> bool:
        """Does an import of the file name a flatten, view or reshape (a qualified name the
        analysis may quote in a reason)?"""
        memo = getattr(self, "_flattening_imports", None)
        if memo is None:
            memo = self._flattening_imports = bool(self._flattening) and any(
                _names_flatten(q) for quals in self.facts.bindings.values() for q in quals)
        return memo  # type: ignore[no-any-return]

    def flatten_marks(self) -> list[tuple[int, int]]:
        """Where an identifier of the file names a flatten, view or reshape."""
        if self._flatten_marks is None:
            hits, nodes = self._flattening, self.facts.nodes
            marks: list[tuple[int, int]] = []
            if hits:
                marks = [(n.lineno, n.col_offset) for n in nodes(ast.Attribute) if n.attr in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(ast.Name) if n.id in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(ast.arg) if n.arg in hits]  # type: ignore[attr-defined]
                marks += [(n.lineno, n.col_offset) for n in nodes(*_FUNCTIONS, ast.ClassDef)
                          if n.name in hits]  # type: ignore[attr-defined]
            self._flatten_marks = sorted(marks)
        return self._flatten_marks

    def marked(self, start: tuple[int, int], end: tuple[int, int]) -> int:
        """How many identifiers naming a flatten lie between ``start`` and ``end``."""
        marks = self.flatten_marks()
        return bisect.bisect_right(marks, end) - bisect.bisect_left(marks, start)

    def unknown_module_flattens(self, cls: ast.ClassDef | None, forward: ast.AST | None,
                                attr: str) -> bool:
        """May the reason the analysis gives for ``self.<attr>``, an unknown module, name a
        flatten, view or reshape? It quotes the attribute, or what ``__init__``, a helper, a
        class attribute or a module-level constant built it from: an identifier of the
        class outside ``forward``, of the module's own code, or an import."""
        if _names_flatten(attr) or self.flattening_imports:
            return True
        if cls is None or not self._flattening:
            return False
        memo = self._class_flattens.get(id(cls))
        if memo is None:
            inside = self.marked(_start(cls), _end(cls))
            if forward is not None:
                inside -= self.marked(_start(forward), _end(forward))
            memo = inside > 0
            if not memo:
                if self._module_flattens is None:
                    in_defs = sum(self.marked(_start(d), _end(d)) for d in self.tree.body
                                  if type(d) in _FUNCTIONS or type(d) is ast.ClassDef)
                    self._module_flattens = len(self.flatten_marks()) > in_defs
                memo = self._module_flattens
            self._class_flattens[id(cls)] = memo
        return memo

    def stated_inputs(self) -> None:
        """Mirrors ``_stated_inputs``: a model called on a tensor factory's result (or a
        name assigned one in the same function), exported to ONNX or summarised; every
        model built here when the file loads a torchvision dataset. A model gets the one
        shape stated for it; none for several; any for sizes known only by spelling."""
        facts = self.facts
        assigns = [a for a in facts.nodes(ast.Assign)]
        scope = {id(a): id(self.enclosing(a)) for a in assigns}
        counts: dict[tuple[int, str], int] = {}
        for node in assigns:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    key = (scope[id(node)], target.id)
                    counts[key] = counts.get(key, 0) + 1
        instances: dict[tuple[int, str], set[object]] = {}
        tensors: dict[tuple[int, str], ast.Call] = {}
        for node in assigns:
            targets = node.targets  # type: ignore[attr-defined]
            if len(targets) != 1 or type(targets[0]) is not ast.Name:
                continue
            key = (scope[id(node)], targets[0].id)
            value = node.value  # type: ignore[attr-defined]
            while type(value) is ast.Call and type(value.func) is ast.Attribute and (
                    value.func.attr in INSTANCE_METHODS):
                value = value.func.value
            if counts[key] != 1 or type(value) is not ast.Call:
                continue
            func = value.func
            quals = facts.qualnames_of(func)
            built: set[object] = {func.id} if type(func) is ast.Name and (
                func.id in self.module_classes) else set()
            if "torch.nn.Sequential" in quals:
                built.add(id(value))
            if built:
                instances[key] = built
            if quals & _FACTORIES:
                tensors[key] = value

        def shapes(arg: ast.expr, where: int) -> list[object]:
            if type(arg) is ast.Name:
                found = tensors.get((where, arg.id))
                return [self.factory_shape(found)] if found is not None else []
            if type(arg) is ast.Call and facts.qualnames_of(arg.func) & _FACTORIES:  # type: ignore[attr-defined]
                return [self.factory_shape(arg)]  # type: ignore[arg-type]
            return []

        names = {name for _, name in instances}
        found: dict[object, list[object]] = {}
        for call in facts.nodes(ast.Call):
            args = call.args  # type: ignore[attr-defined]
            if not args:
                continue
            func = call.func  # type: ignore[attr-defined]
            models: set[object] = set()
            given: list[object] = []
            if type(func) is ast.Name and func.id in names:
                where = id(self.enclosing(call))
                models = instances.get((where, func.id), set())
                given = shapes(args[0], where)
            elif type(func) is ast.Call and type(func.func) is ast.Name and (
                    func.func.id in self.module_classes):
                models, given = {func.func.id}, shapes(args[0], id(self.enclosing(call)))
            elif type(args[0]) is ast.Name and args[0].id in names:
                quals = facts.qualnames_of(func)
                where = id(self.enclosing(call))
                if "torch.onnx.export" in quals and len(args) > 1:
                    models = instances.get((where, args[0].id), set())
                    given = shapes(args[1], where)
                elif quals & _SUMMARIES:
                    models, given = instances.get((where, args[0].id), set()), [WILD]
            given = [g for g in given if g is not None]
            for model in models if given else ():
                found.setdefault(model, []).extend(given)
        # no shape stated: a torchvision dataset's images are the input of the one model
        classes = {m for built in instances.values() for m in built if type(m) is str}
        dataset: tuple[str, _Value] | None = None
        if len(classes) == 1 and any(q.startswith("torchvision.datasets.") for q in facts.calls) \
                and all(g is WILD for given in found.values() for g in given):
            image = self.dataset_image() if not found else WILD
            if isinstance(image, tuple):
                channels, height, width = image
                dataset = classes.pop(), _Value(4, channels, width, (height, width), False)
            elif image is WILD:
                found.setdefault(classes.pop(), []).append(WILD)
        for model, given in found.items():
            distinct = set(given)
            if WILD in distinct:
                self.stated[model] = _ANY
            elif len(distinct) == 1:
                value = _input_value(distinct.pop())  # type: ignore[arg-type]
                if value is not None:
                    self.stated[model] = value
        if dataset is not None:
            self.stated[dataset[0]] = dataset[1]

    def dataset_image(self) -> object:
        """Mirrors ``_dataset_image``: (channels, height, width) of the images of every
        torchvision dataset the file loads through a ``DataLoader``, when they agree (the
        channels may be UNK); None where the analysis proves none; WILD where a size is
        known here only by its spelling or a callee may mean several things."""
        facts = self.facts
        calls = list(facts.nodes(ast.Call))
        if not any(_last_name(c.func) == "DataLoader" and "torch.utils.data.DataLoader" in (  # type: ignore[attr-defined]
                facts.qualnames_of(c.func)) for c in calls):  # type: ignore[attr-defined]
            return None
        leaves = {q.rsplit(".", 1)[1] for q in DATASETS} | {"ImageFolder"}
        sizes: set[object] = set()
        for call in calls:
            if _last_name(call.func) not in leaves:  # type: ignore[attr-defined]
                continue
            quals = facts.qualnames_of(call.func)  # type: ignore[attr-defined]
            if not any(q.startswith("torchvision.datasets.") for q in quals):
                continue
            if len(quals) != 1:
                return WILD
            qual = next(iter(quals))
            base: tuple[object, object, object] = (3, UNK, UNK) if qual.endswith(
                ".ImageFolder") else DATASETS.get(qual, (UNK, UNK, UNK))
            image = self.transformed(base, _arg(call, "transform", None))  # type: ignore[arg-type]
            if image is None or image is WILD:
                return image
            sizes.add(image)
        return sizes.pop() if len(sizes) == 1 else None

    def transformed(self, image: tuple[object, object, object], transform: ast.expr | None
                    ) -> object:
        """Mirrors ``_transformed``: the image after ``transform`` (None: unknown)."""
        facts = self.facts
        if type(transform) is ast.Name:
            bound = [a.value for a in facts.nodes(ast.Assign)  # type: ignore[attr-defined]
                     if len(a.targets) == 1 and type(a.targets[0]) is ast.Name  # type: ignore[attr-defined]
                     and a.targets[0].id == transform.id]  # type: ignore[attr-defined]
            if len(bound) != 1:
                return None
            transform = bound[0]
        steps: list[ast.expr] = []
        if type(transform) is ast.Call:
            quals = facts.qualnames_of(transform.func)  # type: ignore[attr-defined]
            if "torchvision.transforms.Compose" in quals:
                if len(quals) != 1:
                    return WILD
                given = [*transform.args, *(k.value for k in transform.keywords)]  # type: ignore[attr-defined]
                if not given or type(given[0]) not in (ast.List, ast.Tuple):
                    return None
                steps = list(given[0].elts)  # type: ignore[attr-defined]
            else:
                steps = [transform]
        elif transform is not None:
            steps = [transform]
        channels, height, width = image
        scope = _Scope(self, {}, None)
        for step in steps:
            if type(step) is not ast.Call:
                return None
            quals = facts.qualnames_of(step.func)  # type: ignore[attr-defined]
            if len(quals) > 1 and quals & (KEEP_TRANSFORMS | CROPS | {
                    "torchvision.transforms.Grayscale"}):
                return WILD
            qual = next(iter(quals), None)
            if qual in KEEP_TRANSFORMS:
                continue
            if qual == "torchvision.transforms.Grayscale":
                arg = _arg(step, "num_output_channels", 0)  # type: ignore[arg-type]
                channels = scope.eval(arg, 0) if arg is not None else 1
                if type(channels) is _Sym:
                    return WILD
                channels = channels if type(channels) is int else UNK
                continue
            if qual not in CROPS:
                return None
            arg = _arg(step, "size", 0)  # type: ignore[arg-type]
            size = scope.eval(arg, 0) if arg is not None else UNK
            if isinstance(size, (list, tuple)) and len(size) == 1:
                size = size[0]
            if type(size) is _Sym or isinstance(size, (list, tuple)) and any(
                    type(v) is _Sym for v in size):
                return WILD
            if type(size) is int:
                if qual.endswith(".Resize") and not (type(height) is int and height == width):
                    height = width = UNK  # the shorter side: the other depends on the image
                else:
                    height = width = size
            elif isinstance(size, (list, tuple)) and len(size) == 2 and all(
                    type(v) is int for v in size):
                height, width = size
            else:
                return None
        if type(height) is int and type(width) is int:
            return channels, height, width
        return None

    def factory_shape(self, call: ast.Call) -> object:
        """Mirrors ``_factory_shape``: the literal shape a tensor factory is given (WILD:
        sizes known only by their spelling; None: none the analysis knows)."""
        args = [a for a in call.args]
        if "torch.randint" in self.facts.qualnames_of(call.func):
            size = _arg(call, "size", 2)
            if size is None:
                return None
            args = [size]
        if any(type(a) is ast.Starred for a in args):
            return None
        scope = _Scope(self, {}, None)
        if len(args) == 1 and type(args[0]) in (ast.Tuple, ast.List):
            values = scope.eval(args[0], 0)
            values = tuple(values) if isinstance(values, list) else values
        else:
            values = tuple(scope.eval(a, 0) for a in args)
        if not isinstance(values, tuple) or not values or not all(_maybe(v) for v in values):
            return None
        return values if all(type(v) is int for v in values) else WILD

    def found(self, kind: str) -> None:
        if self.quiet:
            return
        self.kinds.add(kind)
        if self.kinds >= _ALL:
            raise _AllFound

    # ------------------------------------------------------------ names
    def sequentials(self) -> list[ast.Call]:
        """The calls that may build an ``nn.Sequential``."""
        if self._sequentials is None:
            found: list[ast.Call] = []
            if "Sequential" in self.facts.call_words:
                for call in self.facts.nodes(ast.Call):
                    func = call.func  # type: ignore[attr-defined]
                    kind = type(func)
                    if (kind is ast.Attribute and func.attr == "Sequential" or kind is ast.Name
                            and func.id == "Sequential") and "torch.nn.Sequential" in (
                            self.facts.qualnames_of(func)):
                        found.append(call)  # type: ignore[arg-type]
            self._sequentials = found
        return self._sequentials

    def bound_in(self, function: ast.AST | None, name: str) -> bool:
        """Does ``function`` bind ``name``: a parameter, or a statement anywhere inside
        (nested functions too; comprehension and ``:=`` targets aside)?"""
        if function is None:
            return False
        names = self._bound.get(id(function))
        if names is None:
            names = self._bound[id(function)] = frozenset(
                _parameters(function)).union(*(_binds(s) for s in _statements(function)))
        return name in names

    def self_stores(self, function: ast.AST) -> list[str]:
        """The ``self`` attributes assigned inside ``function`` (nested blocks too, as the
        analysis walks them: not into ``match`` cases nor ``except*`` clauses)."""
        found = self._stores.get(id(function))
        if found is None:
            found = self._stores[id(function)] = [
                attr for stmt in _statements(function, libcst_blocks=True)
                if type(stmt) in (ast.Assign, ast.AugAssign, ast.AnnAssign)
                for target in (stmt.targets if type(stmt) is ast.Assign else [stmt.target])  # type: ignore[attr-defined]
                for element in (target.elts if type(target) in (ast.Tuple, ast.List) else [target])
                for attr in [_self_attribute(element)] if attr is not None]
        return found

    def enclosing(self, node: ast.AST) -> ast.AST | None:
        """The innermost function around ``node`` (None: module level)."""
        at = _start(node)
        functions = self.functions
        # the latest function starting before ``node`` that ends after it is the innermost
        index = bisect.bisect_left(self.function_starts, at) - 1
        while index >= 0:
            _, end, function = functions[index]
            if at <= end:
                return function
            index -= 1
        return None

    def quals(self, expr: ast.expr, function: ast.AST | None) -> set[str]:
        root = expr
        while type(root) is ast.Attribute:
            root = root.value  # type: ignore[attr-defined]
        if type(root) is not ast.Name or self.bound_in(function, root.id):  # type: ignore[attr-defined]
            return set()
        return self.facts.qualnames_of(expr)

    def module_constant(self, name: str) -> object:
        if name in self.constants:
            return self.constants[name]
        self.constants[name] = WILD  # a constant defined through itself
        values = self.module_values.get(name)
        if values is not None:
            value = _Scope(self, {}, None).eval(values, 0) if isinstance(
                values, ast.expr) else WILD
        else:
            quals = self.facts.qualnames_of(ast.Name(name, ast.Load()))
            value = self.imported(quals)
        self.constants[name] = value
        return value

    def imported(self, quals: set[str]) -> object:
        foreign = sorted(q for q in quals if _from_elsewhere(q))
        if not foreign:
            return UNK
        return _Sym(("import", foreign[0])) if len(foreign) == 1 else WILD

    # ------------------------------------------------------------ the file
    def run(self) -> None:
        if "input" in self.facts.size_sites:
            self.stated_inputs()
        for cls in self.classes:
            self.analyse_class(cls)  # type: ignore[arg-type]
        spans = [(_start(c), _end(c)) for c in self.classes]
        in_classes = {id(f) for start, end, f in self.functions
                      if any(a <= start and end <= b for a, b in spans)}
        for scope, calls in self.outer_sequentials().items():
            if scope is None:
                function = None
            else:
                function = scope
                if id(function) in in_classes:
                    continue
            for call in calls:
                value = _Scope(self, {}, None, function).eval(call, 0)
                if isinstance(value, _Seq):
                    for start in self.starts(call):
                        self.walk_sequence(value, start)

    def starts(self, call: ast.Call) -> tuple[_Value, ...]:
        """What a Sequential outside a class's attributes is walked from: nothing known,
        and the input stated for it (the analysis walks the one it has)."""
        stated = self.stated.get(id(call))
        return (_FRESH,) if stated is None else (_FRESH, stated)

    def outer_sequentials(self) -> dict[ast.AST | None, list[ast.Call]]:
        """Sequential calls not nested in another, by the function they are in."""
        memo = getattr(self, "_outer", None)
        if memo is not None:
            return memo  # type: ignore[no-any-return]
        found: dict[ast.AST | None, list[ast.Call]] = {}
        for call in self.sequentials():
            if id(call) in self.nested:
                continue
            function = self.enclosing(call)
            if "torch.nn.Sequential" in self.quals(call.func, function):
                found.setdefault(function, []).append(call)
        self._outer = found
        return found

    # ------------------------------------------------------------ classes
    def analyse_class(self, cls: ast.ClassDef) -> None:
        init = _method(cls, "__init__")
        env: dict[str, object] = {}
        if init is not None:
            params = _parameters(init)[1:]
            # a decorated class built nowhere in this file: a registry builds it out of
            # sight (the analysis reads it so too for a class this file names otherwise,
            # read here as built with any sizes)
            if cls.decorator_list and cls.name not in self.called_names():
                env = {p: UNK for p in params}
            else:
                env = {p: _Sym(("param", cls.name, p)) for p in params}
        scope = self.class_scope(cls, env, 0)
        walked: set[int] = set()
        for attr, value in list(scope.attrs.items()):
            if isinstance(value, _Builder):
                value = scope.attrs[attr] = _element(value)
            if isinstance(value, _Seq):
                walked.add(id(value))
                self.walk_sequence(value, _FRESH)
        if init is not None:  # Sequentials not bound to an attribute
            for call in self.outer_sequentials().get(init, ()):
                value = _Scope(self, dict(env), cls, init).eval(call, 0)
                if isinstance(value, _Seq) and id(value) not in walked:
                    for start in self.starts(call):
                        self.walk_sequence(value, start)
        forward = _method(cls, "forward")
        if forward is not None and _parameters(forward, stars=False)[1:]:
            local = _Scope(self, {}, cls, forward)
            local.attrs = scope.attrs
            # an input stated in this file, or in another file of the project for a chain
            # that starts on images and flattens them
            stated = self.stated.get(cls.name)
            flow = _Flow(self, local, _FRESH, asks=stated is None)
            flow.run(forward.body)
            if stated is not None:
                _Flow(self, local, stated).run(forward.body)
            elif flow.first_images and flow.flattens:
                # from any input, the chain may find what it has not: only then does an
                # input stated elsewhere matter (asking the project reads its files)
                more = self.found_from_any(local, forward) - self.kinds
                if more and self.inputs_elsewhere(cls.name):
                    for kind in sorted(more):
                        self.found(kind)

    def found_from_any(self, local: _Scope, forward: ast.FunctionDef) -> set[str]:
        """The kinds the chain of ``forward`` finds from any input (found aside, not yet
        counted)."""
        kinds = self.kinds
        self.kinds = set(kinds)
        try:
            _Flow(self, local, _ANY).run(forward.body)
        except _AllFound:
            pass
        finally:
            trial, self.kinds = self.kinds, kinds
        return trial

    def inputs_elsewhere(self, name: str) -> bool:
        """May another file of the project state an input for the model class ``name``
        (where the analysis asks, ``class_inputs``)? It may when the project is not known."""
        facts = self.facts
        if not facts.project_known:
            return True
        project = facts.project
        if project is None:
            return False
        files = facts.once("project files", lambda: project_files(project))
        return bool(project_inputs(project, files, name))

    def called_names(self) -> frozenset[str]:
        """The bare names called in the file (``Net(...)``)."""
        memo = getattr(self, "_called", None)
        if memo is None:
            memo = self._called = frozenset(
                c.func.id for c in self.facts.nodes(ast.Call)  # type: ignore[attr-defined]
                if type(c.func) is ast.Name)  # type: ignore[attr-defined]
        return memo  # type: ignore[no-any-return]

    def class_scope(self, cls: ast.ClassDef, env: dict[str, object], depth: int) -> _Scope:
        """``__init__`` of ``cls`` run with ``env``: the layers and sizes on ``self``."""
        init = _method(cls, "__init__")
        scope = _Scope(self, dict(env), cls, init)
        scope.attrs.update(self.class_attributes(cls))
        if init is not None:
            scope.run(init.body, depth)
        for stmt in cls.body:
            if type(stmt) in _FUNCTIONS and stmt.name != "__init__":  # type: ignore[attr-defined]
                for name in self.self_stores(stmt):
                    scope.attrs[name] = UNK
        return scope

    def interface(self, cls: ast.ClassDef, env: dict[str, object], depth: int) -> object:
        """Mirrors ``interface``: a class of the file used as a layer takes its first
        layer's input size and gives what its ``forward`` returns. UNK where the analysis
        surely proves nothing (no ``forward``), a block layer where this mirror follows it
        exactly, else a layer taking and giving anything."""
        forward = _method(cls, "forward")
        if forward is None:
            return UNK
        params = _parameters(forward, stars=False)[1:]
        defaults = len(forward.args.defaults) + sum(
            d is not None for d in forward.args.kw_defaults)
        if not params or len(params) - 1 > defaults:
            return UNK
        wild = _Layer(cls.name, "wild", 0, WILD, WILD)
        key = (id(cls), repr(sorted(env.items())))
        if key in self.interfaces:
            return self.interfaces[key] or wild
        self.interfaces[key] = None  # a class built inside itself
        self.quiet += 1  # the analysis reports nothing of an interface's chain
        try:
            local = _Scope(self, {}, cls, forward)
            local.attrs = self.class_scope(cls, env, depth).attrs
            flow = _Flow(self, local, _FRESH)
            flow.run(forward.body)
        finally:
            self.quiet -= 1
        # a chain the analysis surely stops: no interface (the block is an unknown module)
        found: object = UNK if flow.surely_stopped else wild
        entry = flow.entry
        out = flow.returned[0] if len(flow.returned) == 1 else None
        if not flow.stopped and entry is not None and type(entry.in_size) is int and not (
                flow.entry_spatial and _takes(entry) == "features") and isinstance(
                out, _Value) and out.rank is not WILD and type(out.rank) is not _Sym:
            gives = "features" if out.rank == 2 or out.rank is UNK and _maybe(
                out.features) else "channels"
            size = out.features if gives == "features" else out.channels
            if _maybe(size):
                found = _Layer(cls.name, "block", 0, entry.in_size, size,
                               (("takes", _takes(entry)), ("gives", gives)))
        self.interfaces[key] = found
        return found

    def class_attributes(self, cls: ast.ClassDef) -> dict[str, object]:
        found: dict[str, object] = {}
        for stmt in cls.body:
            if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(  # type: ignore[attr-defined]
                    stmt.targets[0]) is ast.Name:  # type: ignore[attr-defined]
                name = stmt.targets[0].id  # type: ignore[attr-defined]
                found[name] = UNK if name in found else _Scope(self, {}, None).eval(
                    stmt.value, 0)  # type: ignore[attr-defined]
        if found and any(type(b) is ast.Name and b.id == cls.name  # type: ignore[attr-defined]
                         for c in self.facts.nodes(ast.ClassDef) for b in c.bases):  # type: ignore[attr-defined]
            return {name: UNK for name in found}
        # another file of the project may name the class (a subclass): then unknown
        return {name: _Sym(("class", cls.name, name)) if type(value) in (int, float) else value
                for name, value in found.items()}

    # ------------------------------------------------------------ chains
    def walk_sequence(self, seq: _Seq, value: _Value | None,
                      flow: _Flow | None = None) -> _Value | None:
        current = value
        for element in seq.elements:
            if current is None:
                current = _FRESH
            if isinstance(element, _Layer):
                current = self.apply(element, current, flow)
            elif isinstance(element, _Seq):
                current = self.walk_sequence(element, current, flow)
            else:
                if flow is not None:
                    flow.stopped = flow.surely_stopped = True
                current = _FRESH
        return current

    def apply(self, layer: _Layer, value: _Value, flow: _Flow | None = None
              ) -> _Value | None:
        if flow is not None and (_names_flatten(layer.name) or layer.family == "wild" and (
                self.flattening_imports)):
            flow.flattens = True  # (a class of another file is labelled by its own name)
        if flow is not None and not flow.entry_closed:  # the first layer with a size
            if layer.family in _SIZED:
                flow.entry, flow.entry_closed = layer, True
            elif layer.family == "wild":
                flow.stopped = True  # (its interface is not known here)
            elif layer.family not in _KEEPERS:
                flow.entry_closed = True
            elif layer.family not in ("keep", "dropnd"):
                flow.entry_spatial = True
        self.check(layer, value)
        out = _output(layer, value)
        if out is None and flow is not None:
            flow.stopped = flow.surely_stopped = True
        return out

    def check(self, layer: _Layer, value: _Value) -> None:
        if layer.family == "wild":  # a class used as a layer: its sizes are not read here
            if _maybe(value.channels) or _maybe(value.features):
                self.found("size")
            return
        ranks = accepted_ranks(layer.family, layer.dims)
        if ranks is not None and _maybe(value.rank):
            if type(value.rank) is int:
                if value.rank not in ranks:
                    self.found("rank")
                    return
            else:
                self.found("rank")
        expected = layer.in_size
        if not _maybe(expected):
            return
        family = layer.family
        if family == "block" and layer.arg("takes") == "features" or family in (
                "linear", "ln", "rnn", "cell", "mha", "same"):
            got = value.features
        elif family == "block":
            if value.rank == 2:
                return
            got = value.channels
        elif family in ("conv", "convT", "bn", "gn") or family == "in" and (
                _maybe_true(layer.arg("affine")) or _maybe_true(
                layer.arg("track_running_stats"))):
            if value.rank == 2 and family not in ("bn", "gn"):
                return
            got = value.channels
        else:
            return
        if not _may_differ(got, expected):
            return
        if family == "linear" and value.flattened is not False:
            self.found("flatten")
        if family != "linear" or value.flattened is not True:
            self.found("size")


def _takes(layer: _Layer) -> str:
    """The unit of the size a layer takes (the analysis's ``Layer.unit``)."""
    if layer.family == "block":
        return str(layer.arg("gives"))
    return "channels" if layer.family in ("conv", "convT", "bn", "in", "gn") else "features"


def _maybe_true(value: object) -> bool:
    return value is True or type(value) is _Sym


def _output(layer: _Layer, value: _Value) -> _Value | None:
    family = layer.family
    if family == "wild":
        return _Value(UNK, WILD, WILD, None, False)
    if family == "block":
        features = layer.arg("gives") == "features"
        return _Value(UNK, UNK if features else layer.out_size,
                      layer.out_size if features else UNK, None, False)
    if family in ("linear", "bilinear", "same"):
        rank = value.rank if _maybe(value.rank) else 2
        out = layer.out_size if family != "same" else layer.in_size
        channels = _if_rank2(rank, out, value.channels)
        return _Value(rank, channels, out, None, False)
    if family in ("conv", "convT", "pool", "adaptive", "upsample", "pad"):
        n = layer.dims
        rank = value.rank if _maybe(value.rank) else (n + 2 if n else UNK)
        channels = layer.out_size if family in ("conv", "convT") else value.channels
        spatial = _spatial(layer, value, rank)
        if spatial is WILD:
            features: object = WILD
        else:
            features = spatial[-1] if spatial else UNK  # type: ignore[index]
        return _Value(rank, channels, features, spatial, False)
    if family in ("bn", "in", "gn") and _maybe(layer.in_size):
        channels = layer.in_size
        if type(channels) is int:
            features = _if_rank2(value.rank, channels, value.features)
            return replace(value, channels=channels, features=features, flattened=False)
        return _Value(value.rank, _join(channels, value.channels),
                      _join(channels, value.features), value.spatial,
                      None if value.flattened is not False else False)
    if family == "ln" and _maybe(layer.in_size):
        size = layer.in_size
        if type(size) is int:
            channels = _if_rank2(value.rank, size, value.channels)
            return replace(value, features=size, channels=channels, flattened=False)
        return _Value(value.rank, _join(size, value.channels), _join(size, value.features),
                      value.spatial, None if value.flattened is not False else False)
    if family in ("bn", "in", "gn", "ln", "dropnd", "keep"):
        return value
    if family == "flatten":
        start, end = layer.arg("start_dim", 1), layer.arg("end_dim", -1)
        if type(start) is _Sym or type(end) is _Sym:
            return _Value(2, WILD, WILD, None, None)
        if start != 1 or end != -1:
            return _FRESH
        return _flatten(value)
    if family == "embed":
        if layer.name == "EmbeddingBag":
            rank: object = 2
        elif type(value.rank) is int:
            rank = value.rank + 1  # type: ignore[operator]
        else:
            rank = WILD if type(value.rank) is _Sym else UNK
        return _Value(rank, _if_rank2(rank, layer.out_size, UNK), layer.out_size, None, False)
    if family in ("rnn", "mha"):
        return None
    if family == "cell":
        return _Value(2, layer.out_size, layer.out_size, None, False)
    return _FRESH


def _input_value(shape: tuple[int, ...]) -> _Value | None:
    """What a dummy input of ``shape`` says of a model's input."""
    if len(shape) >= 3:
        return _Value(len(shape), shape[1], shape[-1], tuple(shape[2:]), False)
    if len(shape) == 2:
        return _Value(2, shape[1], shape[1], None, False)
    return None


def _flatten(value: _Value) -> _Value:
    if value.rank == 2:
        return replace(value, flattened=True)
    if type(value.rank) is _Sym or value.spatial is WILD:
        return _Value(2, WILD, WILD, None, True if value.rank != 2 else None)
    if _maybe(value.channels) and value.spatial is not None:
        sizes = [value.channels, *value.spatial]  # type: ignore[misc]
        if all(type(s) is int for s in sizes):
            total = 1
            for s in sizes:
                total *= s  # type: ignore[operator]
            return _Value(2, total, total, None, True)
        if all(_maybe(s) for s in sizes):
            total = sizes[0]
            for s in sizes[1:]:
                total = _symbolic(ast.Mult, total, s) if type(total) is _Sym or type(
                    s) is _Sym else total * s  # type: ignore[operator]
            return _Value(2, total, total, None, True)
    return _Value(2, UNK, UNK, None, True)


def _per_dim(value: object, n: int) -> tuple[object, ...] | None:
    if value is None:
        return None
    if type(value) is int:
        return (value,) * n
    if type(value) is _Sym:
        return (WILD,) * n
    if isinstance(value, tuple) and len(value) == n:
        return tuple(v if type(v) in (int, _Sym) or v is None else UNK for v in value)
    return None


def _spatial(layer: _Layer, value: _Value, rank: object) -> object:
    """The spatial sizes after ``layer`` (None: unknown, WILD: any)."""
    n = layer.dims or (len(value.spatial) if isinstance(value.spatial, tuple) else 0)
    if value.spatial is WILD and not layer.dims:
        return WILD
    if not n:
        return None
    if layer.family == "adaptive":
        output = layer.arg("output_size")
        size = _per_dim(output, n)
        if size is None:
            return None
        current = value.spatial if isinstance(value.spatial, tuple) and len(
            value.spatial) == n else (WILD if value.spatial is WILD else UNK,) * n
        return tuple(current[i] if s is None else s for i, s in enumerate(size))
    if value.spatial is WILD:
        return WILD
    if not isinstance(value.spatial, tuple) or len(value.spatial) != n or not _maybe(rank):
        return None
    if any(type(v) is _Sym for _, v in layer.args) or any(
            isinstance(v, tuple) and any(type(e) is _Sym for e in v) for _, v in layer.args):
        return WILD
    return _exact_spatial(layer, value.spatial, n)


def _exact_spatial(layer: _Layer, spatial: tuple[object, ...], n: int) -> object:
    """The analysis's arithmetic, where every argument is known here; a size known only by
    its spelling gives WILD."""
    if any(type(s) is _Sym for s in spatial):
        return WILD
    if layer.family == "upsample":
        size = _per_dim(layer.arg("size"), n)
        if size is not None and all(type(s) is int for s in size):
            return size
        factor = _per_dim(layer.arg("scale_factor"), n)
        if factor is None:
            return None
        return tuple(s * f if type(s) is int and type(f) is int else UNK  # type: ignore[operator]
                     for s, f in zip(spatial, factor))
    if layer.family == "pad":
        padding = layer.arg("padding")
        if type(padding) is int:
            return tuple(s + 2 * padding if type(s) is int else UNK for s in spatial)  # type: ignore[operator]
        if isinstance(padding, tuple) and len(padding) == 2 * n and all(
                type(p) is int for p in padding):
            extra = [padding[2 * i] + padding[2 * i + 1] for i in range(n)][::-1]
            return tuple(s + e if type(s) is int else UNK for s, e in zip(spatial, extra))  # type: ignore[operator]
        return None
    kernel = _per_dim(layer.arg("kernel_size"), n)
    if kernel is None:
        return None
    default_stride = kernel if layer.family == "pool" else 1
    stride = _per_dim(layer.arg("stride", default_stride), n)
    if layer.arg("stride") is None and layer.has("stride"):
        stride = kernel if layer.family == "pool" else None
    padding_arg = layer.arg("padding", 0)
    if padding_arg == "valid":
        padding_arg = 0
    if padding_arg == "same":
        return spatial if layer.family == "conv" else None
    padding = _per_dim(padding_arg, n)
    dilation = _per_dim(layer.arg("dilation", 1), n)
    extra = _per_dim(layer.arg("output_padding", 0), n)
    ceil = layer.arg("ceil_mode", False)
    if None in (stride, padding, dilation, extra) or not isinstance(ceil, bool):
        return None
    out: list[object] = []
    for i, size in enumerate(spatial):
        k, s, p, d, o = kernel[i], stride[i], padding[i], dilation[i], extra[i]  # type: ignore[index]
        if not all(type(v) is int for v in (size, k, s, p, d, o)) or s == 0:
            out.append(UNK)
            continue
        if layer.family == "convT":
            out.append((size - 1) * s - 2 * p + d * (k - 1) + o + 1)  # type: ignore[operator]
            continue
        span = size + 2 * p - d * (k - 1) - 1  # type: ignore[operator]
        result = (-(-span // s) if ceil else span // s) + 1  # type: ignore[operator]
        if ceil and (result - 1) * s >= size + p:  # type: ignore[operator]
            result -= 1
        out.append(result if result > 0 else UNK)
    return tuple(out)


def _element(value: object) -> object:
    if isinstance(value, (_Layer, _Seq)):
        return value
    if isinstance(value, _Builder):
        return _Seq(tuple(_element(e) for e in value.elements))
    return UNK


# ------------------------------------------------------------------ the tree
def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    found = None
    for stmt in cls.body:
        if type(stmt) in _FUNCTIONS and stmt.name == name:  # type: ignore[attr-defined]
            if found is not None:
                return None
            found = stmt
    return found  # type: ignore[return-value]


def _parameters(function: ast.AST, *, stars: bool = True) -> list[str]:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    found = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if stars:
        found += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return found


_BINDERS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
            ast.AsyncWith, ast.Import, ast.ImportFrom, *_FUNCTIONS, ast.ClassDef,
            ast.ExceptHandler)


def _statements(function: ast.AST, *, libcst_blocks: bool = False) -> Iterator[ast.AST]:
    """The statements (and except clauses) inside ``function``, at any depth, nested
    functions and classes too, without walking into expressions; with ``libcst_blocks``
    only those the analysis's walk of blocks reaches (no ``match`` case, no ``except*``
    clause)."""
    stack: list[ast.AST] = []
    for field in _block_fields(type(function)):
        stack.extend(getattr(function, field))
    skipped = (getattr(ast, "Match", None), getattr(ast, "TryStar", None))
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in _block_fields(type(stmt)):
            if libcst_blocks and type(stmt) in skipped and field in ("cases", "handlers"):
                continue
            stack.extend(getattr(stmt, field))


_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


def _block_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that hold statements (or except clauses, cases)."""
    fields = _BLOCK_FIELDS.get(kind)
    if fields is None:
        fields = _BLOCK_FIELDS[kind] = tuple(
            f for f in ("body", "orelse", "finalbody", "handlers", "cases")
            if f in kind._fields and kind is not ast.Lambda and kind is not ast.IfExp)  # type: ignore[attr-defined]
    return fields


def _binds(node: ast.AST) -> Iterator[str]:
    """The names a statement (or except clause) binds at its own level."""
    kind = type(node)
    if kind is ast.Assign:
        targets: list[ast.AST] = list(node.targets)  # type: ignore[attr-defined]
    elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
        targets = [node.target]  # type: ignore[attr-defined]
    elif kind in (ast.With, ast.AsyncWith):
        targets = [i.optional_vars for i in node.items if i.optional_vars]  # type: ignore[attr-defined]
    elif kind in (ast.Import, ast.ImportFrom):
        for alias in node.names:  # type: ignore[attr-defined]
            yield alias.asname or alias.name.split(".", 1)[0]
        return
    else:
        if getattr(node, "name", None):
            yield node.name  # type: ignore[attr-defined]
        return
    for target in targets:
        yield from _target_names(target)


def _module_values(tree: ast.Module) -> dict[str, object]:
    """Name -> its value when a single ``name = value`` is its only module-level binding,
    else None (bound otherwise or more than once); absent when never bound."""
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        stmt = stack.pop()
        kind = type(stmt)
        if kind in _FUNCTIONS or kind is ast.ClassDef:
            counts[stmt.name] = counts.get(stmt.name, 0) + 2  # type: ignore[attr-defined]
            continue
        if kind is ast.Assign and len(stmt.targets) == 1 and type(  # type: ignore[attr-defined]
                stmt.targets[0]) is ast.Name:  # type: ignore[attr-defined]
            name = stmt.targets[0].id  # type: ignore[attr-defined]
            counts[name] = counts.get(name, 0) + 1
            values[name] = stmt.value  # type: ignore[attr-defined]
            continue
        if kind in _BINDERS:
            for name in _binds(stmt):
                counts[name] = counts.get(name, 0) + (1 if kind in (ast.Import, ast.ImportFrom)
                                                     else 2)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, field, ()) or ():
                if isinstance(child, ast.stmt):
                    stack.append(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    if type(child) is ast.ExceptHandler and child.name:
                        counts[child.name] = counts.get(child.name, 0) + 2
                    stack.extend(child.body)
    found: dict[str, object] = {}
    for name, count in counts.items():
        found[name] = values.get(name) if count == 1 else None
    return found


def _last_name(func: ast.expr) -> str | None:
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined,no-any-return]
    if type(func) is ast.Attribute:
        return func.attr  # type: ignore[attr-defined,no-any-return]
    return None


def _string(node: ast.expr | None) -> str | None:
    if type(node) is ast.Constant and type(node.value) is str:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    return None


def _arg(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    """Mirrors ``get_arg`` (a ``*args`` before the position hides it)."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is None:
        return None
    for index, arg in enumerate(call.args):
        if type(arg) is ast.Starred:
            return None
        if index == position:
            return arg
    return None


def _contains_return(stmt: ast.AST) -> bool:
    return any(type(n) is ast.Return for n in ast.walk(stmt))


def _number(node: ast.expr) -> bool:
    if type(node) is ast.UnaryOp:
        node = node.operand  # type: ignore[attr-defined]
    return type(node) is ast.Constant and type(node.value) in (int, float)  # type: ignore[attr-defined]


def _int_literal(node: ast.expr) -> int | None:
    if type(node) is ast.Constant and type(node.value) is int:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    return None


_AUG = {ast.Add, ast.Sub, ast.Mult, ast.FloorDiv}


# ------------------------------------------------------------------ scopes
class _Scope:
    """Mirrors the analysis's straight-line evaluation (``_Scope``)."""

    def __init__(self, mirror: _Mirror, names: dict[str, object], cls: ast.ClassDef | None,
                 function: ast.AST | None = None) -> None:
        self.mirror = mirror
        self.names = names
        self.cls = cls
        self.function = function
        self.attrs: dict[str, object] = {}
        self.returned: object = UNK
        self.locals_unknown = False  # inside a function, only literals are read

    def run(self, body: Iterable[ast.stmt], depth: int) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind in (ast.With, ast.AsyncWith):
                self.run(stmt.body, depth)  # type: ignore[attr-defined]
            elif kind in _FUNCTIONS or kind is ast.ClassDef:
                self.names[stmt.name] = UNK  # type: ignore[attr-defined]
            elif kind in (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try,
                          getattr(ast, "TryStar", ast.Try), getattr(ast, "Match", ast.Try)):
                self.forget(stmt)
            else:
                self.small(stmt, depth)

    def forget(self, stmt: ast.AST) -> None:
        """What ``stmt`` may rebind becomes unknown: the targets of its statements (and of
        itself), the receivers of the method calls they are. Calls and ``:=`` deeper in
        expressions, which the analysis forgets too, are left known here (known is the
        side that errs towards a finding)."""
        for node in (stmt, *_statements(stmt)):
            if type(node) is ast.Expr:
                node = node.value  # type: ignore[attr-defined]
            kind = type(node)
            targets: list[ast.expr] = []
            if kind is ast.Assign:
                targets = list(node.targets)  # type: ignore[attr-defined]
            elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
                targets = [node.target]  # type: ignore[attr-defined]
            elif kind is ast.Call and type(node.func) is ast.Attribute:  # type: ignore[attr-defined]
                target = node.func.value  # type: ignore[attr-defined]
                if type(target) is ast.Name and target.id == "self":
                    self.forget_self_call(node)  # type: ignore[arg-type]
                    continue
                targets = [target]
            for target in targets:
                if type(target) in (ast.Tuple, ast.List):
                    for sub in ast.walk(target):
                        if type(sub) is ast.Name:
                            self.names[sub.id] = UNK  # type: ignore[attr-defined]
                elif type(target) is ast.Name:
                    self.names[target.id] = UNK  # type: ignore[attr-defined]
                attr = _self_attribute(target)
                if attr is not None:
                    self.attrs[attr] = UNK

    def forget_self_call(self, call: ast.Call) -> None:
        method = call.func.attr  # type: ignore[attr-defined]
        if method == "add_module":
            key = _string(_arg(call, "name", 0))
            if key is not None:
                self.attrs[key] = UNK
        elif self.cls is not None:
            helper = _method(self.cls, method)
            if helper is not None:
                for attr in self.mirror.self_stores(helper):
                    self.attrs[attr] = UNK

    def small(self, stmt: ast.stmt, depth: int) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            value = self.eval(stmt.value, depth)  # type: ignore[attr-defined]
            for target in stmt.targets:  # type: ignore[attr-defined]
                self.bind(target, value)
        elif kind is ast.AnnAssign and stmt.value is not None:  # type: ignore[attr-defined]
            self.bind(stmt.target, self.eval(stmt.value, depth))  # type: ignore[attr-defined]
        elif kind is ast.AugAssign:
            self.augment(stmt, depth)  # type: ignore[arg-type]
        elif kind is ast.Expr and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
            self.statement_call(stmt.value, depth)  # type: ignore[attr-defined]
        elif kind is ast.Return and stmt.value is not None:  # type: ignore[attr-defined]
            self.returned = self.eval(stmt.value, depth)  # type: ignore[attr-defined]
        else:
            self.forget(stmt)

    def bind(self, target: ast.expr, value: object) -> None:
        if type(target) is ast.Name:
            self.names[target.id] = value  # type: ignore[attr-defined]
            return
        attr = _self_attribute(target)
        if attr is not None:
            self.attrs[attr] = value
            return
        if type(target) in (ast.Tuple, ast.List):
            for sub in ast.walk(target):
                if type(sub) is ast.Name:
                    self.names[sub.id] = UNK  # type: ignore[attr-defined]

    def augment(self, stmt: ast.AugAssign, depth: int) -> None:
        target = stmt.target
        if type(target) is ast.Name:
            current = self.names.get(target.id)
            if type(stmt.op) is ast.Add:
                extra = self.eval(stmt.value, depth)
                if isinstance(current, list) and isinstance(extra, list):
                    self.names[target.id] = current + extra
                    return
            if type(stmt.op) in _AUG and not isinstance(current, list):
                self.names[target.id] = self.eval(
                    ast.BinOp(target, stmt.op, stmt.value), depth)
            else:
                self.names[target.id] = UNK
            return
        self.forget(stmt)

    def statement_call(self, call: ast.Call, depth: int) -> None:
        func = call.func
        if type(func) is not ast.Attribute:
            self.forget(call)
            return
        owner = self.lookup(func.value)
        method = func.attr
        given = [a.value if type(a) is ast.Starred else a for a in call.args] + [
            k.value for k in call.keywords]
        if isinstance(owner, list) and method == "append" and len(given) == 1:
            owner.append(self.eval(given[0], depth))
            return
        if isinstance(owner, list) and method == "extend" and len(given) == 1:
            extra = self.eval(given[0], depth)
            if isinstance(extra, list):
                owner.extend(extra)
                return
        if method == "add_module" and len(given) == 2:
            key = _string(given[0])
            module = self.eval(given[1], depth)
            if isinstance(owner, _Builder):
                owner.elements.append(module)
                return
            if type(func.value) is ast.Name and func.value.id == "self" and key:
                self.attrs[key] = module
                return
        if type(func.value) is ast.Name and func.value.id == "super":
            return
        if type(func.value) is ast.Call and type(func.value.func) is ast.Name and (
                func.value.func.id == "super"):
            return
        self.forget(call)

    def lookup(self, node: ast.expr) -> object:
        if type(node) is ast.Name:
            return self.names.get(node.id)  # type: ignore[attr-defined]
        attr = _self_attribute(node)
        return self.attrs.get(attr) if attr is not None else None

    # ------------------------------------------------------------ expressions
    def eval(self, node: ast.expr, depth: int) -> object:
        kind = type(node)
        if kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            return value if type(value) in (int, float, str, bool) or value is None else UNK
        if kind is ast.Name:
            return self.name(node.id)  # type: ignore[attr-defined]
        if kind is ast.UnaryOp and type(node.op) is ast.USub:  # type: ignore[attr-defined]
            inner = self.eval(node.operand, depth)  # type: ignore[attr-defined]
            if type(inner) in (int, float):
                return -inner  # type: ignore[operator]
            return _symbolic(ast.Sub, 0, inner) if type(inner) is _Sym else UNK
        if kind is ast.BinOp:
            return self.arithmetic(node, depth)  # type: ignore[arg-type]
        if kind is ast.Tuple:
            return tuple(UNK if type(e) is ast.Starred else self.eval(e, depth)
                         for e in node.elts)  # type: ignore[attr-defined]
        if kind is ast.List:
            if any(type(e) is ast.Starred for e in node.elts):  # type: ignore[attr-defined]
                return UNK
            return [self.eval(e, depth) for e in node.elts]  # type: ignore[attr-defined]
        if kind is ast.Attribute:
            attr = _self_attribute(node)
            if attr is not None:
                return self.attrs.get(attr, UNK)
            if self.locals_unknown:
                return UNK
            return self.mirror.imported(self.mirror.quals(node, self.function))
        if kind is ast.Call:
            return self.call(node, depth)  # type: ignore[arg-type]
        return UNK

    def arithmetic(self, node: ast.BinOp, depth: int) -> object:
        left, right = self.eval(node.left, depth), self.eval(node.right, depth)
        op = type(node.op)
        if type(left) is _Sym or type(right) is _Sym:
            return _symbolic(op, left, right)
        if type(left) not in (int, float) or type(right) not in (int, float):
            return UNK
        try:
            if op is ast.Add:
                return left + right  # type: ignore[operator]
            if op is ast.Sub:
                return left - right  # type: ignore[operator]
            if op is ast.Mult:
                return left * right  # type: ignore[operator]
            if op is ast.FloorDiv:
                return left // right  # type: ignore[operator]
            if op is ast.Div:
                return left / right  # type: ignore[operator]
            if op is ast.Pow and type(right) is int and 0 <= right < 64:
                return left ** right  # type: ignore[operator]
        except (ZeroDivisionError, OverflowError):
            pass
        return UNK

    def name(self, name: str) -> object:
        if name in self.names:
            return self.names[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        if self.locals_unknown or self.mirror.bound_in(self.function, name):
            return UNK
        return self.mirror.module_constant(name)

    def call(self, call: ast.Call, depth: int) -> object:
        func = call.func
        quals = self.mirror.quals(func, self.function)
        leaves = sorted(q[len("torch.nn."):] for q in quals
                        if q.startswith("torch.nn.") and q.count(".") == 2)
        if leaves:
            leaf = leaves[0]
            if leaf == "Sequential":
                return self.sequential(call, depth)
            if leaf in LAYERS or leaf in KEEP:
                return self.layer(leaf, call, depth)
            return UNK
        if quals & {"collections.OrderedDict", "builtins.dict"} or (
                type(func) is ast.Name and func.id in ("OrderedDict", "dict") and not quals):
            return self.ordered_dict(call, depth)
        if type(func) is ast.Name and func.id == "int" and len(call.args) == 1:
            inner = self.eval(call.args[0], depth)
            if type(inner) in (int, float):
                return int(inner)  # type: ignore[call-overload]
            return _Sym(("int", inner)) if type(inner) is _Sym and inner != WILD else (
                WILD if inner == WILD else UNK)
        if type(func) is ast.Attribute and type(func.value) is ast.Name and (
                func.value.id == "self") and self.cls is not None:
            helper = _method(self.cls, func.attr)
            if helper is not None and depth < _MAX_DEPTH:
                return self.helper(helper, call, depth + 1)
        if depth < _MAX_DEPTH and type(func) is ast.Name and (
                self.cls is not None or id(call) in self.mirror.nested):
            return self.block(call, depth)
        return UNK

    def block(self, call: ast.Call, depth: int) -> object:
        """A module class used as a layer (``Block(64, 128)``): one of this file is
        followed as the analysis follows it; one of another file may take and give
        anything."""
        func: ast.Name = call.func  # type: ignore[assignment]
        if not func.id[:1].isupper():
            return UNK
        if any(type(a) is ast.Starred for a in call.args) or not all(
                self.fixed(a) for a in (*call.args, *(k.value for k in call.keywords))):
            return UNK
        if self.mirror.bound_in(self.function, func.id):
            return UNK
        local = [c for c in self.mirror.classes if c.name == func.id]  # type: ignore[attr-defined]
        if len(local) == 1 and not self.mirror.facts.qualnames_of(func):
            return self.mirror.interface(local[0], self.arguments(local[0], call), depth)  # type: ignore[arg-type]
        if local or any(_from_elsewhere(q) for q in self.mirror.facts.qualnames_of(func)):
            return _Layer(func.id, "wild", 0, WILD, WILD)
        return UNK

    def arguments(self, cls: ast.ClassDef, call: ast.Call) -> dict[str, object]:
        """Mirrors ``bind_arguments``: ``__init__``'s parameters for ``call``; inside a
        function only literals are read, the defaults at module level."""
        init = _method(cls, "__init__")
        if init is None:
            return {}
        env: dict[str, object] = {p: UNK for p in _parameters(init, stars=False)[1:]}
        module = _Scope(self.mirror, {}, None)
        positional = [*init.args.posonlyargs, *init.args.args]
        for param, default in zip(positional[len(positional) - len(init.args.defaults):],
                                  init.args.defaults):
            env[param.arg] = module.eval(default, 0)
        for param, default in zip(init.args.kwonlyargs, init.args.kw_defaults):
            if default is not None:
                env[param.arg] = module.eval(default, 0)
        scope = _Scope(self.mirror, {}, None)
        scope.locals_unknown = self.function is not None
        for param, arg in zip(init.args.args[1:], call.args):
            env[param.arg] = scope.eval(arg, 0)
        for kw in call.keywords:
            if kw.arg is not None and kw.arg in env:
                env[kw.arg] = scope.eval(kw.value, 0)
        return env

    def fixed(self, node: ast.expr) -> bool:
        """Literals, module-level names no local shadows, and their attributes."""
        kind = type(node)
        if kind is ast.Constant:
            return True
        if kind is ast.Name:
            name = node.id  # type: ignore[attr-defined]
            if name in ("True", "False", "None"):
                return True
            if self.mirror.bound_in(self.function, name):
                return False
            return name in self.mirror.module_values or bool(
                self.mirror.facts.qualnames_of(node))
        if kind is ast.Attribute:
            return type(node.value) in (ast.Name, ast.Attribute) and self.fixed(node.value)  # type: ignore[attr-defined]
        if kind is ast.BinOp:
            return self.fixed(node.left) and self.fixed(node.right)  # type: ignore[attr-defined]
        if kind is ast.UnaryOp:
            return self.fixed(node.operand)  # type: ignore[attr-defined]
        if kind in (ast.Tuple, ast.List):
            return all(type(e) is not ast.Starred and self.fixed(e) for e in node.elts)  # type: ignore[attr-defined]
        return False

    def layer(self, leaf: str, call: ast.Call, depth: int) -> object:
        if leaf in KEEP:
            return _Layer(leaf, "keep", 0, UNK, UNK)
        family, dims, names = LAYERS[leaf]
        if any(type(a) is ast.Starred for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return _Layer(leaf, family, dims, UNK, UNK)
        args: dict[str, object] = {}
        for position, name in enumerate(names):
            arg = _arg(call, name, position)
            if arg is not None:
                args[name] = self.eval(arg, depth)
        for kw in call.keywords:
            if kw.arg is not None and kw.arg not in args:
                args[kw.arg] = self.eval(kw.value, depth)
        first = names[0] if names else ""
        in_size: object = UNK
        out_size: object = UNK
        lazy = leaf.startswith("Lazy")
        if family in ("linear", "conv", "convT"):
            in_size = UNK if lazy else args.get(first, UNK)
            out_size = args.get(names[0] if lazy else names[1], UNK)
        elif family == "bilinear":
            out_size = args.get("out_features", UNK)
        elif family in ("bn", "in"):
            in_size = out_size = args.get("num_features", UNK)
        elif family == "gn":
            in_size = out_size = args.get("num_channels", UNK)
        elif family == "ln":
            shape = args.get("normalized_shape", UNK)
            if isinstance(shape, (tuple, list)) and len(shape) == 1:
                shape = shape[0]
            in_size = out_size = shape if _maybe(shape) else UNK
        elif family == "embed":
            out_size = args.get("embedding_dim", UNK)
        elif family in ("rnn", "cell"):
            in_size = args.get("input_size", UNK)
            proj = args.get("proj_size")
            hidden = args.get("hidden_size", UNK)
            if type(proj) is _Sym:
                hidden = WILD
            elif proj:
                hidden = proj
            positional = [a for a in call.args if type(a) is not ast.Starred]
            directions = args.get("bidirectional", False)
            if len(positional) > 3:
                hidden = UNK
            elif type(directions) is _Sym:
                hidden = WILD if _maybe(hidden) else UNK
            elif type(directions) is not bool:
                hidden = UNK
            elif directions:
                hidden = hidden * 2 if type(hidden) is int else (
                    _symbolic(ast.Mult, hidden, 2) if type(hidden) is _Sym else UNK)
            out_size = hidden
        elif family in ("mha", "same"):
            in_size = out_size = args.get(first, UNK)
            if family == "mha" and ("kdim" in args or "vdim" in args):
                in_size = WILD if any(type(args.get(k)) is _Sym for k in ("kdim", "vdim")) \
                    and _maybe(in_size) else UNK
        return _Layer(leaf, family, dims, _size(in_size), _size(out_size),
                      tuple((k, _frozen(v)) for k, v in args.items()))

    def sequential(self, call: ast.Call, depth: int) -> object:
        if call.keywords:
            return UNK
        elements: list[object] = []
        for arg in call.args:
            if type(arg) is ast.Starred:
                value = self.eval(arg.value, depth)
                if not isinstance(value, list):
                    return UNK
                elements.extend(value)
                continue
            value = self.eval(arg, depth)
            if isinstance(value, _Ordered):
                elements.extend(value.elements)
            else:
                elements.append(value)
        if not call.args:
            return _Builder([])
        return _Seq(tuple(_element(e) for e in elements))

    def ordered_dict(self, call: ast.Call, depth: int) -> object:
        if len(call.args) != 1 or call.keywords or type(call.args[0]) is ast.Starred:
            return UNK
        items = call.args[0]
        if type(items) not in (ast.List, ast.Tuple):
            return UNK
        elements = []
        for item in items.elts:  # type: ignore[attr-defined]
            if type(item) is not ast.Tuple or len(item.elts) != 2:  # type: ignore[attr-defined]
                return UNK
            elements.append(self.eval(item.elts[1], depth))  # type: ignore[attr-defined]
        return _Ordered(elements)

    def helper(self, helper: ast.FunctionDef, call: ast.Call, depth: int) -> object:
        if any(type(a) is ast.Starred for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return UNK
        params = _parameters(helper, stars=False)[1:]
        env: dict[str, object] = {p: UNK for p in params}
        defaults = helper.args.defaults
        positional = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        for name, default in zip(positional[len(positional) - len(defaults):], defaults):
            env[name] = _Scope(self.mirror, {}, None).eval(default, 0)
        for name, default in zip((a.arg for a in helper.args.kwonlyargs),
                                 helper.args.kw_defaults):
            if default is not None:
                env[name] = _Scope(self.mirror, {}, None).eval(default, 0)
        for name, arg in zip(helper.args.args[1:], call.args):
            env[name.arg] = self.eval(arg, depth)
        for kw in call.keywords:
            env[kw.arg] = self.eval(kw.value, depth)  # type: ignore[index]
        if any(_contains_return(s) for s in helper.body if type(s) not in (
                ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            return UNK
        scope = _Scope(self.mirror, env, self.cls, helper)
        scope.attrs = self.attrs
        scope.run(helper.body, depth)
        returned = scope.returned
        if isinstance(returned, _Builder):
            return _Seq(tuple(_element(e) for e in returned.elements))
        return returned


def _size(value: object) -> object:
    return value if _maybe(value) else UNK


def _frozen(value: object) -> object:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, (tuple, int, float, str, bool, _Sym, _Unknown)) or value is None:
        return value
    return UNK


# ------------------------------------------------------------------ forward
class _Flow:
    """Mirrors ``_Flow``: the values flowing through ``forward``."""

    def __init__(self, mirror: _Mirror, scope: _Scope, start: _Value, *,
                 asks: bool = False) -> None:
        self.mirror = mirror
        # whether the steps naming a flatten matter (the chain may ask the project for an
        # input): only then are the reasons of unknown values told apart
        self.asks = asks
        self.scope = scope
        function = scope.function
        first = _parameters(function, stars=False)[1]  # type: ignore[arg-type]
        self.values: dict[str, object] = {first: start}  # _Value, UNK or absent
        self.first_images: bool | None = None  # the first step may be on images
        # what a class used as a layer passes on: whether the chain stops, its first layer
        # with a size (and whether only size-keeping ones come before it), what it returns
        self.stopped = False
        # a stop the analysis surely makes too (not one for a class this mirror does not
        # follow); a step whose label may name a flatten, view or reshape
        self.surely_stopped = False
        self.flattens = False
        self.entry: _Layer | None = None
        self.entry_closed = False
        self.entry_spatial = False
        self.returned: list[object] = []

    def step(self, images: bool) -> None:
        if self.first_images is None:
            self.first_images = images

    def stop(self, reason: object = UNK) -> None:
        """A step the chain stops at (the analysis's too), labelled by the reason of the
        unknown ``reason``: it may name a class or a layer."""
        self.stopped = self.surely_stopped = True
        self.flattens = self.flattens or reason is UNK_NAMING
        self.step(self.mirror.conv_words)

    def flatten_step(self) -> None:
        """A step labelled by a flatten, view or reshape."""
        self.flattens = True
        self.step(False)

    def run(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind in (ast.With, ast.AsyncWith):
                self.run(stmt.body)  # type: ignore[attr-defined]
            elif kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr,
                          ast.Pass, ast.Assert, ast.Delete, ast.Raise, ast.Global,
                          ast.Nonlocal, ast.Import, ast.ImportFrom, ast.Break,
                          ast.Continue):
                self.small(stmt)
            else:
                self.branch(stmt)

    def branch(self, stmt: ast.stmt) -> None:
        # the names the analysis reads as rebound: targets of assignments (an annotated
        # one is no AssignTarget of libcst), augmented assignments and for loops
        bound: set[str] = set()
        for node in (stmt, *_statements(stmt)):  # (``:=`` aside: known errs towards a finding)
            kind = type(node)
            if kind is ast.Assign:
                targets: list[ast.AST] = list(node.targets)  # type: ignore[attr-defined]
            elif kind in (ast.AugAssign, ast.For, ast.AsyncFor):
                targets = [node.target]  # type: ignore[attr-defined]
            else:
                continue
            bound.update(n.id for t in targets for n in ast.walk(t) if type(n) is ast.Name)  # type: ignore[attr-defined]
        for name in bound:
            if name in self.values:
                if isinstance(self.values[name], _Value):
                    self.stop()
                self.values[name] = UNK

    def small(self, stmt: ast.stmt) -> None:
        kind = type(stmt)
        if kind is ast.Assign:
            targets = stmt.targets  # type: ignore[attr-defined]
            if len(targets) == 1 and type(targets[0]) is ast.Tuple:
                self.unpack(targets[0], stmt.value)  # type: ignore[attr-defined]
                return
            value = self.eval(stmt.value)  # type: ignore[attr-defined]
            for target in targets:
                if type(target) is ast.Name:
                    self.set(target.id, value)
                else:
                    for node in ast.walk(target):
                        if type(node) is ast.Name and node.id in self.values:
                            self.values[node.id] = UNK
        elif kind is ast.AugAssign and type(stmt.target) is ast.Name:  # type: ignore[attr-defined]
            name = stmt.target.id  # type: ignore[attr-defined]
            other = self.eval(stmt.value)  # type: ignore[attr-defined]
            if name in self.values and (isinstance(other, _Value) or _number(
                    stmt.value)) and type(stmt.op) in (ast.Add, ast.Mult):  # type: ignore[attr-defined]
                return
            self.set(name, UNK if name in self.values else None)
        elif kind is ast.Return and stmt.value is not None:  # type: ignore[attr-defined]
            value = stmt.value  # type: ignore[attr-defined]
            parts = value.elts if type(value) is ast.Tuple else [value]
            for part in parts:
                flowing = any(type(n) is ast.Name and isinstance(self.values.get(n.id), _Value)
                              for n in ast.walk(part))
                result = self.eval(part)
                if isinstance(result, _Unknown) and flowing:
                    self.stop(result)
                self.returned.append(result if len(parts) == 1 else None)
        elif kind is ast.AnnAssign and type(stmt.target) is ast.Name and (  # type: ignore[attr-defined]
                stmt.value is not None):  # type: ignore[attr-defined]
            self.set(stmt.target.id, self.eval(stmt.value))  # type: ignore[attr-defined]

    def set(self, name: str, value: object) -> None:
        if isinstance(value, _Unknown) and isinstance(self.values.get(name), _Value):
            self.stop(value)
        if value is None:
            self.values.pop(name, None)
        else:
            self.values[name] = value

    def unpack(self, target: ast.Tuple, value_node: ast.expr) -> None:
        first = target.elts[0] if target.elts else None
        out: object = None
        if type(value_node) is ast.Call:
            module = self.module_of(value_node.func)  # type: ignore[attr-defined]
            if isinstance(module, _Layer) and module.family in ("rnn", "mha"):
                out = self.apply_tuple(module, value_node)  # type: ignore[arg-type]
            else:
                out = self.eval(value_node)
                if isinstance(out, _Value):
                    out = UNK
        for element in target.elts:
            if type(element) is ast.Name:
                self.values.pop(element.id, None)
        if type(first) is ast.Name and out is not None:
            self.values[first.id] = out

    def apply_tuple(self, layer: _Layer, call: ast.Call) -> object:
        value = self.argument(call)
        if value is None:
            return UNK
        if not isinstance(value, _Value):
            value = _FRESH
        self.step(layer.name.startswith(("Conv", "MaxPool", "AvgPool")))
        self.flattens = self.flattens or _names_flatten(layer.name)
        self.mirror.check(layer, value)
        rank = value.rank if _maybe(value.rank) else UNK
        return _Value(rank, _if_rank2(rank, layer.out_size, UNK), layer.out_size, None, False)

    def module_of(self, func: ast.expr) -> object:
        attr = _self_attribute(func)
        if attr is None:
            return None
        return self.scope.attrs.get(attr, UNK)

    def argument(self, call: ast.Call) -> object:
        if not call.args or type(call.args[0]) is ast.Starred:
            return None
        return self.eval(call.args[0])

    def eval(self, node: ast.expr) -> object:
        kind = type(node)
        if kind is ast.Name:
            return self.values.get(node.id)  # type: ignore[attr-defined]
        if kind is ast.Call:
            return self.call(node)  # type: ignore[arg-type]
        if kind is ast.BinOp:
            left, right = self.eval(node.left), self.eval(node.right)  # type: ignore[attr-defined]
            if isinstance(left, _Value) and isinstance(right, _Value):
                return _merged(left, right)
            if isinstance(left, _Value) and _number(node.right):  # type: ignore[attr-defined]
                return left
            if isinstance(right, _Value) and _number(node.left):  # type: ignore[attr-defined]
                return right
            return _stop(left, right)
        if kind is ast.Subscript:
            return self.subscript(node)  # type: ignore[arg-type]
        inner = [self.eval(c) for c in _expressions(node)]
        return _stop(*inner)

    def subscript(self, node: ast.Subscript) -> object:
        base = self.eval(node.value)
        if not isinstance(base, _Value):
            return base
        indices = node.slice.elts if type(node.slice) is ast.Tuple else [node.slice]  # type: ignore[attr-defined]
        dropped = 0
        for index in indices:
            if _number(index):
                dropped += 1
            elif type(index) is ast.Slice and index.lower is None and index.upper is None \
                    and index.step is None:  # type: ignore[attr-defined]
                continue
            else:
                return UNK
        if dropped == 0:
            return UNK
        kept = type(indices[-1]) is ast.Slice or (
            type(base.rank) is int and len(indices) < base.rank)  # type: ignore[operator]
        if not kept and type(base.rank) is not _Sym:
            return UNK
        return _Value(UNK, UNK, base.features, None, False)

    def call(self, call: ast.Call) -> object:
        module = self.module_of(call.func)
        if module is not None:
            return self.call_module(call, module)
        quals = self.mirror.quals(call.func, self.scope.function)
        first = self.argument(call)
        func = call.func
        if type(func) is ast.Attribute and not quals:
            receiver = self.eval(func.value)
            if isinstance(receiver, _Value):
                return self.method(call, receiver)
            if receiver is not None:
                return receiver if isinstance(receiver, _Unknown) else None
        if isinstance(first, _Value):
            if quals & KEEP_FUNCTIONS:
                self.step(False)
                return first
            if "torch.flatten" in quals:
                start = _arg(call, "start_dim", 1)
                end = _arg(call, "end_dim", 2)
                if start is not None and _int_literal(start) == 1 and end is None:
                    self.flatten_step()
                    return _flatten(first)
                self.step(False)
                return UNK_NAMING  # ("a reshape")
            spatial_functions = quals & SPATIAL_FUNCTIONS
            if spatial_functions:
                self.step(False)
                spatial = self.functional_pool(min(spatial_functions), call, first)
                features = WILD if spatial is WILD else (spatial[-1] if spatial else UNK)  # type: ignore[index]
                return _Value(first.rank, first.channels, features, spatial, first.flattened)
        values = [self.eval(a.value if type(a) is ast.Starred else a) for a in call.args]
        values += [self.eval(k.value) for k in call.keywords]
        stopped = _stop(first, *values)
        if stopped is UNK and self.asks and (any(_names_flatten(q) for q in quals) or any(
                _names_flatten(n.id if type(n) is ast.Name else n.attr)  # type: ignore[attr-defined]
                for n in ast.walk(func) if type(n) in (ast.Name, ast.Attribute))):
            return UNK_NAMING  # (the callee names the step)
        return stopped

    def functional_pool(self, qual: str, call: ast.Call, value: _Value) -> object:
        leaf = qual.rsplit(".", 1)[1]
        if not leaf.startswith(("max_pool", "avg_pool")) or any(
                type(a) is ast.Starred for a in call.args):
            return None
        names = ("input",) + (MAX_POOL if leaf.startswith("max") else AVG_POOL)
        args: dict[str, object] = {}
        for position, name in enumerate(names[1:], start=1):
            arg = _arg(call, name, position)
            if arg is not None:
                args[name] = _frozen(self.scope.eval(arg, 0))
        if any(k.arg is None for k in call.keywords):
            return WILD if value.spatial is not None else None
        pool = _Layer(leaf, "pool", int(leaf[-2]), UNK, UNK, tuple(args.items()))
        return _spatial(pool, value, value.rank)

    def method(self, call: ast.Call, value: _Value) -> object:
        name = call.func.attr  # type: ignore[attr-defined]
        if name in KEEP_METHODS:
            self.step(False)
            return value
        plain = not call.keywords and not any(type(a) is ast.Starred for a in call.args)
        if name in ("view", "reshape") and len(call.args) == 2 and plain:
            size = self.scope.eval(call.args[1], 0)
            if type(size) is int and size > 0:
                self.flatten_step()
                return _Value(2, size, size, None, True)
            if size == -1:
                self.flatten_step()
                return _flatten(value)
            if type(size) is _Sym:
                self.flatten_step()
                return _Value(2, WILD, WILD, None, True)
        if name == "flatten" and len(call.args) == 1 and _int_literal(call.args[0]) == 1 and (
                not call.keywords):
            self.flatten_step()
            return _flatten(value)
        # "a reshape (.view)", ".contiguous()"
        return UNK_NAMING if name in RESHAPES or _names_flatten(name) else UNK

    def call_module(self, call: ast.Call, module: object) -> object:
        value = self.argument(call)
        if value is None:
            if isinstance(module, (_Layer, _Seq)):
                value = _FRESH
            else:
                return None
        if not isinstance(value, _Value):
            self.stop(value)
            value = _FRESH
        if isinstance(module, _Layer):
            # "Flatten with more arguments", "... returns a tuple"
            unknown = UNK_NAMING if _names_flatten(module.name) else UNK
            if len(call.args) + len(call.keywords) != 1:
                return unknown
            self.step(module.name.startswith(("Conv", "MaxPool", "AvgPool")))
            out = self.mirror.apply(module, value, self)
            return out if out is not None else unknown
        if isinstance(module, _Seq):
            images = _first_images(module)
            if images is not None:
                self.step(images)
            out = self.mirror.walk_sequence(module, value, self)
            return out if out is not None else UNK
        if self.asks and self.mirror.unknown_module_flattens(
                self.scope.cls, self.scope.function, str(_self_attribute(call.func))):
            return UNK_NAMING
        return UNK


def _first_images(seq: _Seq) -> bool | None:
    """Is the first step of walking ``seq`` a conv or pool layer (None: it has none)?"""
    for element in seq.elements:
        if isinstance(element, _Layer):
            return element.name.startswith(("Conv", "MaxPool", "AvgPool"))
        if isinstance(element, _Seq):
            found = _first_images(element)
            if found is not None:
                return found
            continue
        return False
    return None


def _stop(*values: object) -> object:
    """UNK when a flowing value goes in; None when none does."""
    return UNK if any(isinstance(v, (_Unknown, _Value)) for v in values) else None


def _expressions(node: ast.AST) -> list[ast.expr]:
    """What the analysis evaluates of an expression it does not follow (the children
    libcst holds as expressions, elements or arguments): a comparison's left side, a
    comprehension's elements (not what it iterates), an attribute's object, nothing of a
    dict or an f-string. Never more: a flowing value met here stops the chain."""
    kind = type(node)
    if kind is ast.Compare:
        return [node.left]  # type: ignore[attr-defined]
    if kind in (ast.Dict, ast.JoinedStr):
        return []
    if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
        return [node.elt]  # type: ignore[attr-defined]
    if kind is ast.DictComp:
        return [node.key, node.value]  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        return [node.value]  # type: ignore[attr-defined]
    found: list[ast.expr] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            found.append(child.value if type(child) is ast.Starred else child)  # type: ignore[attr-defined]
        elif type(child) is ast.keyword:
            found.append(child.value)  # type: ignore[attr-defined]
    return found


def _merged(left: _Value, right: _Value) -> _Value:
    """Mirrors ``_merged`` (``x + f(x)``: the sizes either side proves, the left one's
    where both do); a size known only by spelling gives either side's."""
    if left == right:
        return left
    parts = (left.rank, left.channels, left.features, right.rank, right.channels,
             right.features)
    if all(type(p) is int or p is UNK for p in parts):
        if type(left.rank) is int and type(right.rank) is int and left.rank != right.rank:
            return left
        pick = right if left.channels is UNK and left.features is UNK else left
        other = left if pick is right else right
        return replace(pick, rank=pick.rank if pick.rank is not UNK else other.rank,
                       channels=pick.channels if pick.channels is not UNK else other.channels,
                       features=pick.features if pick.features is not UNK else other.features,
                       spatial=pick.spatial if pick.spatial is not None else other.spatial)
    return _Value(_join(left.rank, right.rank), _join(left.channels, right.channels),
                  _join(left.features, right.features),
                  left.spatial if left.spatial == right.spatial else WILD,
                  left.flattened if left.flattened == right.flattened else None)
