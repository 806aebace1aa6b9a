"""The screen's ``ast`` checks of the training rules about values (TL201, TL202, TL207,
TL212, TL214-TL217): each is true on every file its rule can flag, and follows the rule's
own decision closely enough that most files naming the rule's words never reach libcst
for it.

A check starts from the rare nodes the rule reports at (``total += x``, ``xs.append(x)``,
a loss call, an in-place write), finds where they stand by their positions (a node starts
inside the span of every node that holds it), and errs only towards true:

- a name's value is any value the file assigns to that name, anywhere (the rules follow
  the assignments before the node in its own scope);
- a callee imported from another module than torch may be a module class of the project,
  a name spelled like a model or a loss may be one, and a class of this file whose base
  may be a module class may be one;
- only the surest exclusions of the rules are mirrored: ``torch.no_grad()`` and its kin
  around the node, never a guess about what a function returns or who calls it.

Imports neither libcst nor a rule (the screen runs before either is loaded).
"""

from __future__ import annotations

import ast
import re
import weakref
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from functools import cached_property, lru_cache

from torchlint.analysis.ast_names import (
    end as _end,
    last_name as _word,
    self_attribute as _self_attribute,
    start as _start,
)
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import model_names_pattern
from torchlint.engine.triage import FileFacts

_EMPTY: frozenset[str] = frozenset()
_LOSS = frozenset({"loss"})
_MODEL = frozenset({"model"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_WITHS = (ast.With, ast.AsyncWith)

# What rules/training/graph.py says of values (TL201, TL202): the methods that keep a
# loss's graph, the attributes that carry none, the words of a container's name
_GRAPH_KEEPING = frozenset({"mean", "sum", "squeeze", "view", "reshape", "float", "double",
                            "half", "clone", "abs", "to", "cuda", "cpu"})
_GRAPHLESS = frozenset({"data", "shape", "grad", "device", "dtype", "ndim", "is_cuda",
                        "requires_grad", "grad_fn", "is_leaf", "names", "layout"})
_CONTAINER_HINTS = ("dict", "list", "losses", "map", "values", "terms", "items")
_CONTAINER_WORDS = frozenset({"dict", "list", "defaultdict", "Counter", "OrderedDict"})
# the grad-mode contexts of torch_facts: those that surely turn gradients off, and the
# switch (``set_grad_enabled(flag)``) that may
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                      "torch.autograd.grad_mode.no_grad",
                      "torch.autograd.grad_mode.inference_mode"})
_SET_GRAD = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                       "torch.autograd.grad_mode.set_grad_enabled"})
_DATA_WORDS = ("loader", "dataset", "batches")


# ------------------------------------------------------------------ positions
def _in_body(position: tuple[int, int], body: list[ast.stmt]) -> bool:
    return bool(body) and _start(body[0]) <= position <= _end(body[-1])


def _after(node: ast.AST, scope: ast.AST | None) -> bool:
    """``node`` starts after the start of ``scope`` (None: the module)."""
    return scope is None or _start(node) > _start(scope)


# ------------------------------------------------------------------ names
def _dotted(node: ast.AST) -> bool:
    """``a`` or ``a.b.c``."""
    while type(node) is ast.Attribute:
        node = node.value  # type: ignore[attr-defined]
    return type(node) is ast.Name


def _root_name(node: ast.AST) -> str | None:
    """``y`` for ``y``, ``y[0]``, ``y[:, 1][0]``."""
    while type(node) is ast.Subscript:
        node = node.value  # type: ignore[attr-defined]
    return node.id if type(node) is ast.Name else None  # type: ignore[attr-defined]


def _is_string(node: ast.AST) -> bool:
    return type(node) is ast.JoinedStr or type(node) is ast.Constant and isinstance(
        node.value, (str, bytes))  # type: ignore[attr-defined]


def _loss_function(qual: str) -> bool:
    """A functional loss of torch (a superset of torch_facts.LOSS_FUNCTIONS)."""
    if not qual.startswith("torch.nn.functional."):
        return False
    leaf = qual[len("torch.nn.functional."):]
    return "loss" in leaf or "entropy" in leaf or leaf == "kl_div"


def _loss_class(qual: str) -> bool:
    return qual.startswith("torch.nn.") and qual.endswith("Loss") and qual.count(".") == 2


def _layer_class(qual: str) -> bool:
    """A ``torch.nn`` class, or a name from another module than torch (a class of the
    project may be a module class)."""
    if qual.startswith(("torch.nn.", "torch.nn.parallel.")):
        return qual.rsplit(".", 1)[1][:1].isupper()
    return not qual.startswith(("torch.", "builtins."))


@lru_cache(maxsize=8)
def _model_name(words: frozenset[str]) -> re.Pattern[str]:
    """A superset of torch_facts.is_model_name: the prefilter's model-name pattern."""
    return re.compile(model_names_pattern(words), re.IGNORECASE)


# ------------------------------------------------------------------ one file
def _file(facts: FileFacts, options: Options) -> _File:
    """What the checks ask of the file, computed once for the file (and options)."""
    return facts.once((_File, options), lambda: _File(weakref.proxy(facts), options))


class _File:
    def __init__(self, facts: FileFacts, options: Options) -> None:
        self.facts = facts
        self.options = options
        self.torch = "torch" in facts.top_modules
        self._classes: frozenset[str] | None = None
        self._state: dict[str, tuple[frozenset[str], bool]] = {}
        self._functions: list[ast.AST] | None = None
        self._function_starts: list[tuple[int, int]] = []
        self._data_loops: dict[int, bool] = {}
        self.losses: dict[str, bool] | None = None

    # ---------------------------------------------------------- indexes
    @property
    def module_classes(self) -> frozenset[str]:
        if self._classes is None:
            self._classes = self.facts.module_classes(self.options)
        return self._classes

    @cached_property
    def names(self) -> dict[str, list[ast.expr]]:
        """Every value the file assigns to a name (``x = v``, ``x: T = v``, ``a, x = u, v``;
        ``a, x = f()`` gives ``x`` the call)."""
        names: dict[str, list[ast.expr]] = {}
        for node in self.facts.nodes(ast.Assign, ast.AnnAssign):
            value = node.value  # type: ignore[attr-defined]
            if value is not None:
                for target in node.targets if type(node) is ast.Assign else (  # type: ignore[attr-defined]
                        node.target,):  # type: ignore[attr-defined]
                    _bind(target, value, names)
        return names

    @cached_property
    def attributes(self) -> dict[str, list[ast.expr]]:
        """Every value the file assigns to ``self.X`` (augmented assignments too), by X."""
        attributes: dict[str, list[ast.expr]] = {}
        for node in self.facts.nodes(ast.Assign, ast.AnnAssign, ast.AugAssign):
            value = node.value  # type: ignore[attr-defined]
            if value is not None:
                for target in node.targets if type(node) is ast.Assign else (  # type: ignore[attr-defined]
                        node.target,):  # type: ignore[attr-defined]
                    attr = _self_attribute(target)
                    if attr is not None:
                        attributes.setdefault(attr, []).append(value)
        return attributes

    @cached_property
    def appends(self) -> list[ast.Attribute]:
        """The ``x.append`` attributes (fewer to test than the calls)."""
        return [node for node in self.facts.nodes(ast.Attribute)  # type: ignore[misc]
                if node.attr == "append"]  # type: ignore[attr-defined]

    @cached_property
    def append_calls(self) -> dict[int, ast.Call]:
        """The calls of :attr:`appends`, by the id of their attribute."""
        attribute = ast.Attribute
        return {id(call.func): call for call in self.facts.nodes(ast.Call)  # type: ignore[attr-defined,misc]
                if type(call.func) is attribute and call.func.attr == "append"}  # type: ignore[attr-defined]

    @cached_property
    def training_calls(self) -> list[ast.Call]:
        """The ``x.backward(...)`` and ``x.step(...)`` calls."""
        if "backward" not in self.facts.method_calls and "step" not in self.facts.method_calls:
            return []
        attribute = ast.Attribute
        return [call for call in self.facts.nodes(ast.Call)  # type: ignore[misc]
                if type(call.func) is attribute and call.func.attr in ("backward", "step")]  # type: ignore[attr-defined]

    @cached_property
    def backpropagated(self) -> frozenset[str]:
        """The names ``name.backward()`` is called on."""
        return frozenset(call.func.value.id for call in self.training_calls  # type: ignore[attr-defined]
                         if call.func.attr == "backward"  # type: ignore[attr-defined]
                         and type(call.func.value) is ast.Name)  # type: ignore[attr-defined]

    # ---------------------------------------------------------- where a node stands
    def function_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost def holding ``node`` (spans nest: the last def to start before
        the node that has not ended there)."""
        if self._functions is None:
            self._functions = sorted(self.facts.nodes(*_FUNCTIONS), key=_start)
            self._function_starts = [_start(f) for f in self._functions]
        position = _start(node)
        for index in range(bisect_left(self._function_starts, position) - 1, -1, -1):
            function = self._functions[index]
            if _end(function) >= position:
                return function
        return None

    def loops_around(self, node: ast.AST) -> list[ast.AST]:
        """The loops whose bodies hold ``node``, in any scope."""
        position = _start(node)
        return [loop for loop in self.facts.nodes(*_LOOPS)
                if _in_body(position, loop.body)]  # type: ignore[attr-defined]

    def grad_off(self, node: ast.AST, scope: ast.AST | None) -> bool:
        """``node`` surely runs with gradients off, as the rules read it: inside a ``with``
        of its scope entering ``torch.no_grad()`` or ``set_grad_enabled(...)``, or in a
        function decorated with ``torch.no_grad()``."""
        position = _start(node)
        for block in self.facts.nodes(*_WITHS):
            if _after(block, scope) and _in_body(position, block.body) and any(  # type: ignore[attr-defined]
                    self._turns_off(item.context_expr, True)
                    for item in block.items):  # type: ignore[attr-defined]
                return True
        return scope is not None and any(
            self._turns_off(d, False) for d in scope.decorator_list)  # type: ignore[attr-defined]

    def _turns_off(self, item: ast.expr, switched: bool) -> bool:
        target = item.func if type(item) is ast.Call else item  # type: ignore[attr-defined]
        quals = self.facts.qualnames_of(target)
        if not quals:
            return False
        if quals <= _NO_GRAD:
            if type(item) is ast.Call:  # ``inference_mode(False)`` leaves them on
                first = item.args[0] if item.args else (  # type: ignore[attr-defined]
                    item.keywords[0].value if item.keywords else None)  # type: ignore[attr-defined]
                return not (type(first) is ast.Constant and first.value is False)  # type: ignore[union-attr]
            return True
        return switched and quals <= _SET_GRAD

    def method_of(self, function: ast.AST | None) -> bool:
        """``function`` is a method (a def directly in a class body) other than
        ``__init__``."""
        if function is None or function.name == "__init__":  # type: ignore[attr-defined]
            return False
        position = _start(function)
        holder: ast.AST | None = None
        for scope in self.facts.nodes(ast.ClassDef, *_FUNCTIONS):
            if scope is not function and _start(scope) < position <= _end(scope) and (
                    _after(scope, holder)):
                holder = scope
        return type(holder) is ast.ClassDef

    # ---------------------------------------------------------- graph values
    def kinds(self, node: ast.AST, depth: int = 0) -> frozenset[str]:
        """What graph ``node`` may hold: "loss", "model" (graph.py's graph_value, over
        every value a name may have)."""
        if depth > 6:
            return _EMPTY
        kind = type(node)
        if kind is ast.Call:
            found = self.call_kinds(node)  # type: ignore[arg-type]
            func = node.func  # type: ignore[attr-defined]
            if "loss" not in found and type(func) is ast.Attribute and (
                    func.attr in _GRAPH_KEEPING) and "loss" in self.kinds(func.value, depth + 1):
                found = found | _LOSS
            return found
        if kind is ast.Name:
            return self.name_state(node.id)[0]  # type: ignore[attr-defined]
        if kind is ast.BinOp:
            if type(node.op) in (ast.Mult, ast.Div, ast.Add, ast.Sub) and (  # type: ignore[attr-defined]
                    "loss" in self.kinds(node.left, depth + 1)  # type: ignore[attr-defined]
                    or "loss" in self.kinds(node.right, depth + 1)):  # type: ignore[attr-defined]
                return _LOSS
            return _EMPTY
        if kind is ast.Attribute:  # ``outputs.loss`` of a model's output
            if "loss" in node.attr.lower() and self.derived(node.value, depth + 1):  # type: ignore[attr-defined]
                return _LOSS
            return _EMPTY
        if kind is ast.Subscript:  # ``out["loss"]``
            key = node.slice  # type: ignore[attr-defined]
            if type(key) is ast.Constant and isinstance(key.value, str) and (
                    "loss" in key.value.lower()) and self.derived(node.value, depth + 1):  # type: ignore[attr-defined]
                return _LOSS
            return _EMPTY
        if kind is ast.NamedExpr:
            return self.kinds(node.value, depth + 1)  # type: ignore[attr-defined]
        return _EMPTY

    def derived(self, node: ast.AST, depth: int = 0) -> bool:
        """``node`` may be built from a graph call (graph.py's _graph_derived)."""
        if depth > 6:
            return False
        kind = type(node)
        if kind is ast.Call:
            if self.call_kinds(node):  # type: ignore[arg-type]
                return True
            func = node.func  # type: ignore[attr-defined]
            return type(func) is ast.Attribute and func.attr in _GRAPH_KEEPING and (
                self.derived(func.value, depth + 1))
        if kind is ast.Attribute:
            return node.attr not in _GRAPHLESS and self.derived(node.value, depth + 1)  # type: ignore[attr-defined]
        if kind is ast.Subscript:
            return self.derived(node.value, depth + 1)  # type: ignore[attr-defined]
        if kind is ast.BinOp:
            return self.derived(node.left, depth + 1) or self.derived(  # type: ignore[attr-defined]
                node.right, depth + 1)  # type: ignore[attr-defined]
        if kind is ast.Name:
            return self.name_state(node.id)[1]  # type: ignore[attr-defined]
        return False

    def call_kinds(self, call: ast.Call) -> frozenset[str]:
        """A loss call (a torch loss function, a name spelling a loss, an instance of a loss
        class) or a model call (a name spelling a model, an instance of a layer class, a
        layer built and called at once)."""
        func = call.func
        if type(func) is ast.Call:  # ``nn.MSELoss()(a, b)``, ``Net()(x)``
            return self.built(func)
        word = _word(func)
        if word is None:
            return _EMPTY
        found: frozenset[str] = _EMPTY
        if any(_loss_function(q) for q in self.facts.qualnames_of(func)):
            found = _LOSS
        if self.torch:
            lowered = word.lower()
            if "loss" in lowered or "criteri" in lowered:
                found = found | _LOSS
            if not word[:1].isupper() and _model_name(self.options.model_names).search(word):
                found = found | _MODEL
        if type(func) is ast.Name:
            values: Iterable[ast.expr] = self.names.get(word, ())
        else:
            attr = _self_attribute(func)
            values = self.attributes.get(attr, ()) if attr is not None else ()
        for value in values:  # an instance: ``crit = nn.L1Loss()``, ``self.head = Head()``
            if type(value) is ast.Call:
                found = found | self.built(value)  # type: ignore[arg-type]
        return found

    def built(self, call: ast.Call) -> frozenset[str]:
        """What an instance built by ``call`` is: a loss (a torch loss class) or a model (a
        layer class: of torch.nn, of the project, a module class of this file)."""
        func = call.func
        quals = self.facts.qualnames_of(func)
        if any(_loss_class(q) for q in quals):
            return _LOSS
        if any(_layer_class(q) for q in quals) or (
                type(func) is ast.Name and func.id in self.module_classes):
            return _MODEL
        return _EMPTY

    def name_state(self, name: str) -> tuple[frozenset[str], bool]:
        """The kinds of graph a name may hold, and whether it may be built from a graph
        call, over every value the file assigns to it: a fixed point over the names its
        values read."""
        state = self._state.get(name)
        if state is not None:
            return state
        group = [name]
        seen = {name}
        for current in group:
            for value in self.names.get(current, ()):
                for read in _followed(value):
                    if read not in seen and read not in self._state:
                        seen.add(read)
                        group.append(read)
        for current in group:
            self._state[current] = (_EMPTY, False)
        changed = True
        while changed:
            changed = False
            for current in group:
                new = self._name_value(current)
                if new != self._state[current]:
                    self._state[current] = new
                    changed = True
        return self._state[name]

    def _name_value(self, name: str) -> tuple[frozenset[str], bool]:
        values = self.names.get(name, ())
        derived = any(self.derived(v) for v in values)
        lowered = name.lower()
        if "loss" in lowered:  # a loss-named value built from a graph call
            kinds = _EMPTY if not derived else _MODEL if any(
                hint in lowered for hint in _CONTAINER_HINTS) else _LOSS
        else:
            kinds = frozenset(k for v in values for k in self.kinds(v))
        if name in self.backpropagated:  # backpropagated: it holds a graph
            kinds = kinds | _LOSS
        return kinds, derived

    # ---------------------------------------------------------- totals
    def total(self, values: Iterable[ast.expr], container: bool) -> bool:
        """One of the values starts a total: a number or a tensor (graph.py's
        is_number_or_tensor, for any torch call), or for ``total[k] += x`` a container
        (``{}``, ``[]``, ``dict(...)``, ``defaultdict(float)``)."""
        return any(self._container(v) if container else self._number_or_tensor(v)
                   for v in values)

    def _number_or_tensor(self, value: ast.expr) -> bool:
        if type(value) is ast.UnaryOp:
            value = value.operand  # type: ignore[attr-defined]
        kind = type(value)
        if kind is ast.Constant:
            return type(value.value) in (int, float)  # type: ignore[attr-defined]
        if kind is not ast.Call:
            return False
        func = value.func  # type: ignore[attr-defined]
        if type(func) is ast.Name and func.id in ("float", "int"):
            return True
        if type(func) is ast.Attribute and type(func.value) is ast.Call:
            return True  # ``torch.zeros(1).squeeze_()``
        return any(q.startswith("torch.") for q in self.facts.qualnames_of(func))

    @staticmethod
    def _container(value: ast.expr) -> bool:
        kind = type(value)
        if kind in (ast.Dict, ast.List, ast.DictComp, ast.ListComp):
            return True
        return kind is ast.Call and _word(value.func) in _CONTAINER_WORDS  # type: ignore[attr-defined]

    # ---------------------------------------------------------- loops
    def trains_or_walks_data(self, loops: list[ast.AST]) -> bool:
        """One of the loops backpropagates or steps (a ``.backward()`` or ``.step()`` call
        in its body) or walks data (a loader, dataset or batches in what it iterates)."""
        training = self.training_calls
        for loop in loops:
            body = loop.body  # type: ignore[attr-defined]
            if any(_in_body(_start(call), body) for call in training):
                return True
            if type(loop) is not ast.While:
                data = self._data_loops.get(id(loop))
                if data is None:
                    data = self._data_loops[id(loop)] = _walks_data(loop.iter)  # type: ignore[attr-defined]
                if data:
                    return True
        return False


def _bind(target: ast.expr, value: ast.expr, names: dict[str, list[ast.expr]]) -> None:
    """What ``target = value`` gives each name it binds (see :attr:`_File.names`)."""
    kind = type(target)
    if kind is ast.Name:
        names.setdefault(target.id, []).append(value)  # type: ignore[attr-defined]
        return
    if kind is not ast.Tuple and kind is not ast.List:
        return
    elements = target.elts  # type: ignore[attr-defined]
    if type(value) in (ast.Tuple, ast.List) and len(value.elts) == len(elements) and not any(  # type: ignore[attr-defined]
            type(e) is ast.Starred for e in (*elements, *value.elts)):  # type: ignore[attr-defined]
        for element, item in zip(elements, value.elts):  # type: ignore[attr-defined]
            if type(element) is ast.Name:
                names.setdefault(element.id, []).append(item)
        return
    if type(value) is ast.Call:  # ``loss, out = model(x)``
        for element in elements:
            if type(element) is ast.Starred:
                element = element.value
            if type(element) is ast.Name:
                names.setdefault(element.id, []).append(value)


def _followed(node: ast.AST) -> Iterator[str]:
    """The names :meth:`_File.kinds` and :meth:`_File.derived` may read in ``node``: the
    operands of arithmetic, the objects of attributes and subscripts, the receivers of
    methods that keep a graph (never a call's arguments)."""
    todo = [node]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is ast.Name:
            yield node.id  # type: ignore[attr-defined]
        elif kind is ast.BinOp:
            todo += (node.left, node.right)  # type: ignore[attr-defined]
        elif kind is ast.Attribute or kind is ast.Subscript or kind is ast.NamedExpr:
            todo.append(node.value)  # type: ignore[attr-defined]
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in _GRAPH_KEEPING:
                todo.append(func.value)


def _walks_data(iterable: ast.expr) -> bool:
    for node in ast.walk(iterable):
        word = _word(node)
        if word is not None and any(w in word.lower() for w in _DATA_WORDS):
            return True
    return False


# ------------------------------------------------------------------ TL202
def may_flag_tl202(facts: FileFacts, options: Options) -> bool:
    """A running total (``total += x``, ``total = total + x``, ``stats[k] += x``,
    ``self.total += x``) that may grow by a graph value where gradients may be on: in a
    loop for a local total started as a number, a tensor or a container, in a method
    other than ``__init__`` for a total kept on ``self``."""
    file = _file(facts, options)
    for node in facts.nodes(ast.AugAssign):
        if type(node.op) is ast.Add and _summed(  # type: ignore[attr-defined]
                file, node, node.target, node.value):  # type: ignore[attr-defined]
            return True
    for node in facts.nodes(ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        if type(value) is ast.BinOp and type(value.op) is ast.Add and len(  # type: ignore[attr-defined]
                node.targets) == 1:  # type: ignore[attr-defined]
            target = node.targets[0]  # type: ignore[attr-defined]
            left = value.left  # type: ignore[attr-defined]
            if type(target) is ast.Name and type(left) is ast.Name and left.id == target.id and (
                    _summed(file, node, target, value.right)):  # type: ignore[attr-defined]
                return True
    return False


def _summed(file: _File, node: ast.AST, target: ast.expr, value: ast.expr) -> bool:
    if type(value) is ast.Constant:
        return False
    kind = type(target)
    holder = target.value if kind is ast.Subscript else target  # type: ignore[attr-defined]
    attr = _self_attribute(holder)
    if attr is not None:  # a total kept on self outlives the call
        if not file.total(file.attributes.get(attr, ()), kind is ast.Subscript):
            return False
        scope = file.function_of(node)
        if not file.method_of(scope):
            return False
        kinds = file.kinds(value)
        if not kinds or "loss" not in kinds and not any(
                _after(loop, scope) for loop in file.loops_around(node)):
            return False  # a model's output counts in a loop only
        return not file.grad_off(node, scope)
    if type(holder) is not ast.Name:
        return False
    around = file.loops_around(node)
    if not around or not file.total(file.names.get(holder.id, ()),  # type: ignore[attr-defined]
                                    kind is ast.Subscript):
        return False
    scope = file.function_of(node)
    return any(_after(loop, scope) for loop in around) and bool(file.kinds(value)) and not (
        file.grad_off(node, scope))


# ------------------------------------------------------------------ TL201
def may_flag_tl201(facts: FileFacts, options: Options) -> bool:
    """``xs.append(v)`` of a value that may hold a graph where gradients may be on: in a
    loop that trains or walks data, or (a loss) into a list kept on ``self`` in a method
    other than ``__init__``."""
    # a loop whose body appends and trains or walks data, or a method that appends (the
    # facts know the loops and the methods)
    looped = any("append" in words and (data or "backward" in words or "step" in words)
                 for words, data in facts.loop_bodies)
    if not looped and not any(method != "__init__" and "append" in words
                              for _, method, _, words, *_ in facts.methods):
        return False
    file = _file(facts, options)
    for append in file.appends:
        target = append.value
        holder = target.value if type(target) is ast.Subscript else target  # type: ignore[attr-defined]
        attr = _self_attribute(holder)
        if not (looped or attr is not None) or not _dotted(holder):
            continue
        around = file.loops_around(append) if looped else []
        scope = file.function_of(append) if around or attr is not None else None
        in_loop = bool(around) and file.trains_or_walks_data(
            [loop for loop in around if _after(loop, scope)])
        if not in_loop and (attr is None or not file.method_of(scope)):
            continue
        call = file.append_calls.get(id(append))
        if call is None or len(call.args) != 1 or call.keywords or type(
                call.args[0]) is ast.Starred:
            continue
        kinds = file.kinds(call.args[0])
        if not in_loop and "loss" in kinds and not file.total(
                file.attributes.get(attr, ()), True):  # type: ignore[arg-type]
            kinds = _EMPTY  # a list kept on self (it outlives the call) takes a loss
        if kinds and (in_loop or "loss" in kinds) and not file.grad_off(call, scope):
            return True
    return False


# ------------------------------------------------------------------ TL207
def may_flag_tl207(facts: FileFacts, options: Options) -> bool:
    """An in-place write (``y.op_(...)``, ``y[...] = v``, ``y += v``) into the result of
    ``.expand(...)``/``.expand_as(...)``: the call itself, or a name assigned one."""
    expanded: set[str] = set()
    writes: list[ast.Call] = []
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr.endswith("_") and not (
                func.attr.startswith("_")):
            if _expands(func.value):
                return True
            writes.append(call)  # type: ignore[arg-type]
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        if _expands(node.value):  # type: ignore[attr-defined]
            targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
            expanded.update(t.id for t in targets if type(t) is ast.Name)
    if not expanded:
        return False
    if any(_root_name(call.func.value) in expanded for call in writes):  # type: ignore[attr-defined]
        return True
    for node in facts.nodes(ast.AugAssign):
        if _root_name(node.target) in expanded:  # type: ignore[attr-defined]
            return True
    return any(type(t) is ast.Subscript and _root_name(t) in expanded
               for node in facts.nodes(ast.Assign) for t in node.targets)  # type: ignore[attr-defined]


def _expands(node: ast.AST | None) -> bool:
    """``x.expand(...)`` / ``x.expand_as(...)`` with arguments, none a string literal
    (``re.Match.expand(template)`` is no tensor's)."""
    if type(node) is not ast.Call:
        return False
    func = node.func  # type: ignore[attr-defined]
    if type(func) is not ast.Attribute or func.attr not in ("expand", "expand_as"):
        return False
    arguments = [*node.args, *(k.value for k in node.keywords)]  # type: ignore[attr-defined]
    return bool(arguments) and not any(_is_string(a) for a in arguments)


# ------------------------------------------------------------------ TL212
def may_flag_tl212(facts: FileFacts, options: Options) -> bool:
    """An assignment to ``x.require_grad`` (not ``self``'s) in a file that imports torch
    and never reads ``.require_grad``."""
    if "torch" not in facts.top_modules:
        return False
    written: set[int] = set()
    flagged = False
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        for attribute in _typo_targets(targets):
            written.add(id(attribute))
            if node.value is not None and _self_attribute(attribute) is None:  # type: ignore[attr-defined]
                flagged = True
    return flagged and all(id(node) in written for node in facts.nodes(ast.Attribute)
                           if node.attr == "require_grad")  # type: ignore[attr-defined]


def _typo_targets(targets: Iterable[ast.expr]) -> Iterator[ast.expr]:
    for target in targets:
        kind = type(target)
        if kind is ast.Tuple or kind is ast.List:
            yield from _typo_targets(target.elts)  # type: ignore[attr-defined]
        elif kind is ast.Starred:
            yield from _typo_targets([target.value])  # type: ignore[attr-defined]
        elif kind is ast.Attribute and target.attr == "require_grad":  # type: ignore[attr-defined]
            yield target


# ------------------------------------------------------------------ TL214-TL217
# (activation, loss function, loss class) of each rule (rules/training/losses.py)
_ACTIVATION_LOSSES = {
    "TL214": ("softmax", "torch.nn.functional.cross_entropy", "torch.nn.CrossEntropyLoss"),
    "TL215": ("softmax", "torch.nn.functional.nll_loss", "torch.nn.NLLLoss"),
    "TL216": ("sigmoid", "torch.nn.functional.binary_cross_entropy_with_logits",
              "torch.nn.BCEWithLogitsLoss"),
    "TL217": ("sigmoid", "torch.nn.functional.binary_cross_entropy", "torch.nn.BCELoss"),
}
_ACTIVATIONS = {"softmax": ("torch.softmax", "torch.nn.functional.softmax", "torch.nn.Softmax"),
                "sigmoid": ("torch.sigmoid", "torch.nn.functional.sigmoid", "torch.nn.Sigmoid")}
# the last names of those
_LOSS_WORDS = frozenset(name.rsplit(".", 1)[-1] for names in (
    *_ACTIVATION_LOSSES.values(), *_ACTIVATIONS.values()) for name in names)
# methods that give back the module they are called on (``nn.BCELoss().cuda()``)
_SAME_OBJECT = frozenset({"to", "cuda", "cpu"})


def _activation_into_loss(facts: FileFacts, options: Options, code: str) -> bool:
    file = _file(facts, options)
    if file.losses is None:
        file.losses = _activation_flows(facts)
    return file.losses[code]


def _activation_flows(facts: FileFacts) -> dict[str, bool]:
    """For each of TL214-TL217: a call of its loss (the function, or an instance of the
    class: built and called at once, or a name or ``self.X`` assigned one) whose input (the
    first positional argument, or ``input=``) is its activation's output (a torch function,
    ``x.softmax(...)``/``x.sigmoid()``, an instance of the activation's class), or a name
    assigned one."""
    instances: dict[str, set[str]] = {}  # name or attribute -> classes it is assigned
    assignments: list[tuple[list[str], ast.expr]] = []
    for node in facts.nodes(ast.Assign, ast.AnnAssign, ast.AugAssign):
        value = node.value  # type: ignore[attr-defined]
        if type(value) is not ast.Call:
            continue
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        words = [w for w in (_word(t) for t in targets) if w is not None]
        if words:
            assignments.append((words, value))
            built = _built_class(facts, value)
            for word in words:
                if built:
                    instances.setdefault(word, set()).update(built)
    holders: dict[str, set[str]] = {}  # name -> activations it is assigned the output of
    for words, value in assignments:
        for activation in _activations_of(facts, instances, value):
            for word in words:
                holders.setdefault(word, set()).add(activation)
    found = dict.fromkeys(_ACTIVATION_LOSSES, False)
    for call in facts.nodes(ast.Call):
        losses = _callee(facts, instances, call.func)  # type: ignore[attr-defined]
        if not losses:
            continue
        for code, (activation, function, layer) in _ACTIVATION_LOSSES.items():
            if found[code] or (function not in losses and layer not in losses):
                continue
            for arg in _loss_inputs(call):  # type: ignore[arg-type]
                if activation in _activations_of(facts, instances, arg) or (
                        type(arg) is ast.Name and activation in holders.get(arg.id, ())):
                    found[code] = True
    return found


def _loss_inputs(call: ast.Call) -> Iterator[ast.expr]:
    if call.args and type(call.args[0]) is not ast.Starred:
        yield call.args[0]
    for keyword in call.keywords:
        if keyword.arg == "input":
            yield keyword.value


def _callee(facts: FileFacts, instances: dict[str, set[str]], func: ast.expr) -> set[str]:
    """What a callee may be: the qualified names it may stand for and the classes of the
    instances it may be (a name or attribute assigned one), or the class built and called
    at once (``nn.Softmax(dim=1)(x)``)."""
    if type(func) is ast.Call:
        return _built_class(facts, func)
    word = _word(func)
    if word is None:
        return set()
    return _qualnames(facts, func, word) | instances.get(word, set())


def _qualnames(facts: FileFacts, func: ast.expr, word: str) -> set[str]:
    """The names of TL214-TL217 ``func`` may stand for (the others are left out: the last
    part of a qualified name is the callee's own, but for a name bound by an import or a
    module-level alias)."""
    if word in _LOSS_WORDS or type(func) is ast.Name and (
            word in facts.bindings or word in facts.aliases):
        return facts.qualnames_of(func)
    return set()


def _built_class(facts: FileFacts, value: ast.expr) -> set[str]:
    """The classes ``value`` may build (``nn.BCELoss()``, ``nn.BCELoss().cuda()``)."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute and (  # type: ignore[attr-defined]
            value.func.attr in _SAME_OBJECT):  # type: ignore[attr-defined]
        value = value.func.value  # type: ignore[attr-defined]
    if type(value) is not ast.Call:
        return set()
    word = _word(value.func)  # type: ignore[attr-defined]
    return _qualnames(facts, value.func, word) if word is not None else set()  # type: ignore[attr-defined]


def _activations_of(facts: FileFacts, instances: dict[str, set[str]],
                    value: ast.expr) -> set[str]:
    """The activations whose output ``value`` may be: a call of the torch function, the
    method (``x.softmax(1)``, ``x.sigmoid()``), or an instance of the class."""
    if type(value) is not ast.Call:
        return set()
    func = value.func  # type: ignore[attr-defined]
    classes = _callee(facts, instances, func)
    if type(func) is ast.Attribute and (func.attr == "softmax" or func.attr == "sigmoid" and not (
            value.args or value.keywords)):  # type: ignore[attr-defined]
        classes.add(_ACTIVATIONS[func.attr][0])
    return {activation for activation, names in _ACTIVATIONS.items()
            if not classes.isdisjoint(names)}


def may_flag_tl214(facts: FileFacts, options: Options) -> bool:
    """A softmax output passed to cross-entropy (see :func:`_activation_flows`)."""
    return _activation_into_loss(facts, options, "TL214")


def may_flag_tl215(facts: FileFacts, options: Options) -> bool:
    """A softmax output passed to the NLL loss (see :func:`_activation_flows`)."""
    return _activation_into_loss(facts, options, "TL215")


def may_flag_tl216(facts: FileFacts, options: Options) -> bool:
    """A sigmoid output passed to BCE with logits (see :func:`_activation_flows`)."""
    return _activation_into_loss(facts, options, "TL216")


def may_flag_tl217(facts: FileFacts, options: Options) -> bool:
    """A sigmoid output passed to BCE (see :func:`_activation_flows`)."""
    return _activation_into_loss(facts, options, "TL217")
