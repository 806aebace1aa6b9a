"""Screening checks of the training-step rules (TL203-TL205, TL209, TL213, TL218-TL224),
read from CPython's ``ast`` before libcst or any rule is imported.

Each ``may_flag_tlXXX`` mirrors its rule's decision in ``ast`` terms and is true on every
file the rule can flag: it looks for the node the rule reports at, in the statement, loop
or function shape the rule asks for, and goes silent only where the rule surely does.
Whatever the rule learns from elsewhere (names bound in another function, project
knowledge, the file's path) is taken as "may be". The module imports neither libcst nor a
rule (the screen runs before both); the torch names the rules match are repeated here
and a test checks them against the rules' own.
"""

from __future__ import annotations

import ast
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache, wraps

from torchlint.analysis.ast_names import (
    dotted as _dotted,
    end as _end,
    last_name as _last_name,
    start as _start,
)
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import BACKWARD_METHODS, is_optimizer_word
from torchlint.engine.triage import FileFacts

# ------------------------------------------------------------------ torch names
# (tests/test_screens_steps.py checks each against the set its rule reads)
AUTOGRAD_BACKWARD = "torch.autograd.backward"
_AUTOGRAD_BACKWARD = frozenset({AUTOGRAD_BACKWARD})
GRAD_MODES = frozenset({  # TL203
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
    "torch.autograd.no_grad", "torch.autograd.enable_grad", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.grad_mode.inference_mode",
})
GRAD_MODE_CLASSES = frozenset({  # TL213
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
    "torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.inference_mode",
})
AUTOCAST_NAMES = frozenset({  # TL204
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "torch.amp.autocast_mode.autocast", "torch.cuda.amp.autocast_mode.autocast",
    "torch.xpu.amp.autocast",
})
NEUTRAL_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast",  # TL222
                              "torch.amp.autocast_mode.autocast"})
SEEDING = frozenset({"torch.manual_seed", "torch.cuda.manual_seed",  # TL221
                     "torch.cuda.manual_seed_all", "torch.random.manual_seed"})
EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})  # TL209
GRADIENT_CLIPS = frozenset({  # TL223
    "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm",
})
SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
METRIC_SCHEDULERS = frozenset({"ReduceLROnPlateau"})  # TL219: stepped on a metric
PURE_BUILTINS = frozenset({"int", "float", "str", "abs", "hash", "len"})  # TL221
# words of a function or method name that clears gradients (TL205, with "grad")
CLEARING_WORDS = ("zero", "clear", "reset", "none", "free", "drop")
_GRAD_WRITES = ("zero_", "detach_", "fill_")  # on a .grad: clears it

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})
_WITHS = (ast.With, ast.AsyncWith)


# ------------------------------------------------------------------ helpers
Check = Callable[[FileFacts, Options], bool]


def _holds_when_too_deep(check: Check) -> Check:
    """A check holds (the rule may fire) on a file too deeply nested for it to read."""
    @wraps(check)
    def guarded(facts: FileFacts, options: Options) -> bool:
        try:
            return check(facts, options)
        except RecursionError:
            return True

    return guarded


def _scope(nodes: Iterable[ast.AST], closed: frozenset[type] = _SCOPES) -> Iterator[ast.AST]:
    """``nodes`` and their descendants in source order, not entering nested functions,
    classes and lambdas (which are yielded themselves)."""
    stack = list(nodes)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if type(node) not in closed:
            children = list(ast.iter_child_nodes(node))
            children.reverse()
            stack.extend(children)


def _everything(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """``nodes`` and all their descendants, nested functions included."""
    for node in nodes:
        yield from ast.walk(node)


Point = tuple[int, int]  # (line, column)


def _outer_start(node: ast.AST) -> Point:
    """Where a node starts, its decorators included."""
    decorators = getattr(node, "decorator_list", None)
    return min(_start(d) for d in decorators) if decorators else _start(node)


def _holds(points: list[Point], start: Point, end: Point) -> bool:
    """One of the sorted ``points`` lies between ``start`` and ``end``: a node starting
    there lies within the node of that span (spans of nodes nest or are apart)."""
    at = bisect_left(points, start)
    return at < len(points) and points[at] < end


def _among(points: list[Point], start: Point, end: Point) -> list[Point]:
    """The sorted ``points`` between ``start`` and ``end``."""
    return points[bisect_left(points, start):bisect_left(points, end)]


def _text(node: ast.AST) -> str:
    """An expression's spelling without whitespace: the same for every two spellings the
    rules' text comparison (libcst source without whitespace, comments and outer
    parentheses) finds equal."""
    return "".join(ast.unparse(node).split())


def _method(node: ast.AST, *names: str) -> ast.Attribute | None:
    """The ``Attribute`` of ``x.name(...)`` for a name of ``names``."""
    if type(node) is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr in names:
            return func
    return None


def _statement_call(stmt: ast.AST) -> ast.Call | None:
    """The call of an expression statement ``f(...)``."""
    if type(stmt) is ast.Expr and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
        return stmt.value  # type: ignore[attr-defined,no-any-return]
    return None


def _straight_line(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body in order, ``with`` blocks read as straight-line code."""
    found: list[ast.stmt] = []
    for stmt in body:
        if type(stmt) in _WITHS:
            found.extend(_straight_line(stmt.body))  # type: ignore[attr-defined]
        else:
            found.append(stmt)
    return found


def _arguments(call: ast.Call) -> list[ast.expr]:
    """Every argument's value, positional (starred ones unwrapped) and keyword."""
    values = [a.value if type(a) is ast.Starred else a for a in call.args]
    return values + [k.value for k in call.keywords]


def _first_value(call: ast.Call) -> ast.expr | None:
    """The value of the first argument, positional or keyword; None for none or a
    starred one."""
    if call.args:
        first = call.args[0]
        return None if type(first) is ast.Starred else first
    if call.keywords and call.keywords[0].arg is not None:
        return call.keywords[0].value
    return None


def _first_argument(call: ast.Call, keyword: str) -> ast.expr | None:
    """The argument passed as ``keyword=`` or first, unless starred."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if call.args and type(call.args[0]) is not ast.Starred:
        return call.args[0]
    return None


def _means(facts: FileFacts, node: ast.AST, names: frozenset[str]) -> bool:
    """``node`` may stand for one of the qualified ``names`` (first the cheap tests: an
    attribute's last part is theirs, a name is bound by an import or a module-level
    assignment)."""
    kind = type(node)
    if kind is ast.Attribute:
        if node.attr not in _last_parts(names):  # type: ignore[attr-defined]
            return False
    elif kind is ast.Name:
        if node.id not in facts.bindings and node.id not in facts.aliases:  # type: ignore[attr-defined]
            return False
    else:
        return False
    return not names.isdisjoint(facts.qualnames_of(node))


@lru_cache(maxsize=None)
def _last_parts(names: frozenset[str]) -> frozenset[str]:
    return frozenset(name.rsplit(".", 1)[1] for name in names)


def _is_false(node: ast.AST | None) -> bool:
    return type(node) is ast.Constant and node.value is False  # type: ignore[attr-defined]


def _is_true(node: ast.AST | None) -> bool:
    return type(node) is ast.Constant and node.value is True  # type: ignore[attr-defined]


def _is_backward(facts: FileFacts, call: ast.AST) -> bool:
    """``x.backward()``, ``self.manual_backward(x)``, ``torch.autograd.backward(...)``."""
    if type(call) is not ast.Call:
        return False
    func = call.func  # type: ignore[attr-defined]
    if type(func) is ast.Attribute:  # torch.autograd.backward is named "backward" too
        return func.attr in BACKWARD_METHODS  # type: ignore[no-any-return]
    return _means(facts, func, _AUTOGRAD_BACKWARD)


def _is_optimizer_name(node: ast.AST) -> bool:
    """``optimizer``, ``self.opt``, ``optimizers[i]``, ``optimizerD``, ``opt_g``..."""
    while type(node) is ast.Subscript:
        node = node.value  # type: ignore[attr-defined]
    name = _last_name(node)
    return name is not None and is_optimizer_word(name)


def _optimizer_step(call: ast.AST) -> bool:
    """``optimizer.step()`` or ``scaler.step(optimizer)``."""
    func = _method(call, "step")
    if func is None:
        return False
    if _is_optimizer_name(func.value):
        return True
    name = _last_name(func.value)
    return name is not None and "scaler" in name.lower() and any(
        _is_optimizer_name(a) for a in _arguments(call))  # type: ignore[arg-type]


def _stepped_optimizer(call: ast.AST, *, bare: bool = False) -> ast.expr | None:
    """The optimizer of ``O.step(...)`` or ``scaler.step(O)``; with ``bare``, only a step
    that computes nothing itself (``O.step()``, ``scaler.step(O)``)."""
    func = _method(call, "step")
    if func is None:
        return None
    args, keywords = call.args, call.keywords  # type: ignore[attr-defined]
    name = _last_name(func.value)
    if name is not None and "scaler" in name.lower():
        if not args or type(args[0]) is ast.Starred or bare and len(args) + len(keywords) != 1:
            return None
        return args[0]  # type: ignore[no-any-return]
    if bare and (args or keywords):
        return None
    return func.value


class _FileMemo:
    """What several checks need of one file, computed once (keyed on the tree)."""

    def __init__(self, facts: FileFacts) -> None:
        self.tree = facts.tree
        self._facts = weakref.proxy(facts)  # kept in the facts themselves: no cycle
        self._assigned: dict[str, list[ast.expr]] | None = None
        self._clearing: list[Point] | None = None
        self._helpers: list[Point] | None = None
        self._clearing_calls: list[Point] = []
        self._closed: list[tuple[Point, Point]] | None = None
        self._loop_bodies: list[tuple[Point, Point]] | None = None
        self._training: tuple[list[Point], list[Point], list[Point]] | None | bool = False

    def assigned(self, dotted: str) -> list[ast.expr]:
        """The values assigned anywhere in the file to a name or attribute (``self.opt``)."""
        if self._assigned is None:
            found: dict[str, list[ast.expr]] = {}
            for node in self._facts.nodes(ast.Assign, ast.AnnAssign):
                value = node.value  # type: ignore[attr-defined]
                if value is None:
                    continue
                targets = node.targets if type(node) is ast.Assign else [  # type: ignore[attr-defined]
                    node.target]  # type: ignore[attr-defined]
                for target in targets:
                    key = _dotted(target)
                    if key is not None:
                        found.setdefault(key, []).append(value)
            self._assigned = found
        return self._assigned.get(dotted, [])

    def clears_within(self, start: Point, end: Point) -> bool:
        """Gradients are cleared between ``start`` and ``end`` (the span of a node): a
        node of :func:`_clears_gradients`, or a call of a function of the file whose body
        holds one (``self._zero_grads()``)."""
        if self._clearing is None:
            facts = self._facts
            self.training_points()
            direct = [*self._clearing_calls, *(
                _start(n) for n in facts.nodes(ast.Delete) if _clears_gradients(n))]
            for node in facts.nodes(ast.Assign):
                for target in node.targets:  # type: ignore[attr-defined]
                    if type(target) is ast.Attribute and target.attr == "grad":
                        direct.append(_start(node))
                        break
            direct.sort()
            self._clearing = direct
        if _holds(self._clearing, start, end):
            return True
        if self._helpers is None:
            names = {f.name for f in self._facts.nodes(*_FUNCTIONS)  # type: ignore[attr-defined]
                     if _holds(self._clearing, _start(f.body[0]), _end(f))}  # type: ignore[attr-defined]
            self._helpers = sorted(_start(c) for c in self._facts.nodes(ast.Call)
                                   if _own_callee(c.func) in names) if names else []  # type: ignore[attr-defined]
        return _holds(self._helpers, start, end)

    def training_points(self) -> tuple[list[Point], list[Point], list[Point]] | None:
        """Where the file's optimizer steps, its ``x.backward()`` calls and its
        ``x.backward()``/``x.manual_backward()`` calls start; None without a step (and,
        on the way, where its calls that clear gradients start)."""
        if self._training is not False:
            return self._training  # type: ignore[return-value]
        steps: list[Point] = []
        backward: list[Point] = []
        manual: list[Point] = []
        clearing: list[Point] = []
        facts = self._facts
        for call in facts.nodes(ast.Call):
            func = call.func  # type: ignore[attr-defined]
            kind = type(func)
            if kind is ast.Attribute:
                name = func.attr
                if name == "step":
                    if _optimizer_step(call):
                        steps.append(_start(call))
                    continue
                if name in BACKWARD_METHODS:
                    if _backprops(facts, call, BACKWARD_METHODS):
                        (backward if name == "backward" else manual).append(_start(call))
                    continue
            elif kind is ast.Name:
                name = func.id
            else:
                continue
            if ("grad" in name.lower() or name in _GRAD_WRITES) and _clears_gradients(call):
                clearing.append(_start(call))
        self._clearing_calls = clearing
        self._training = None if not steps or not (backward or manual) else (
            sorted(steps), sorted(backward), sorted(backward + manual))
        return self._training

    def in_straight_line(self, function: ast.AST, point: Point) -> bool:
        """``point`` (in ``function``'s body) lies in the function's straight-line code:
        in no loop, nested function, lambda or class of its own."""
        if self._closed is None:
            kinds = (*_LOOPS, *_FUNCTIONS, ast.ClassDef, ast.Lambda)
            self._closed = sorted((_outer_start(n), _end(n)) for n in self._facts.nodes(*kinds))
        closed = self._closed
        at = bisect_left(closed, (_start(function.body[0]),))  # type: ignore[attr-defined]
        while at < len(closed) and closed[at][0] <= point:
            if point < closed[at][1]:
                return False
            at += 1
        return True

    def mentions(self, name: str) -> list[Point]:
        """Where calls of ``name`` (``f(...)``, ``x.f(...)``) and calls handed ``name``
        start: some of the places the file names it."""
        return sorted(_start(c) for c in self._facts.nodes(ast.Call)
                      if _last_name(c.func) == name or any(  # type: ignore[attr-defined]
                          _last_name(a) == name for a in _arguments(c)))  # type: ignore[arg-type]

    def runs_repeatedly(self, name: str) -> bool:
        """The function ``name`` (``f``, ``self.f``) is called inside a loop's body or
        passed as an argument somewhere in the file (TL205)."""
        if self._loop_bodies is None:
            self._loop_bodies = [(_start(loop.body[0]), _end(loop.body[-1]))  # type: ignore[attr-defined]
                                 for loop in self._facts.nodes(*_LOOPS)]
        calls = list(self._facts.nodes(ast.Call))
        if any(start <= _start(call) < end for call in calls
               if _own_callee(call.func) == name  # type: ignore[attr-defined]
               for start, end in self._loop_bodies):
            return True
        return any(_own_callee(arg) == name for call in calls
                   for arg in _arguments(call))  # type: ignore[arg-type]


def _file(facts: FileFacts) -> _FileMemo:
    return facts.once(_FileMemo, lambda: _FileMemo(facts))


def _own_callee(func: ast.AST) -> str | None:
    """``f`` for ``f``, ``self.f`` or ``cls.f``."""
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined,no-any-return]
    if type(func) is ast.Attribute and type(func.value) is ast.Name and (  # type: ignore[attr-defined]
            func.value.id in ("self", "cls")):  # type: ignore[attr-defined]
        return func.attr  # type: ignore[attr-defined,no-any-return]
    return None


# ------------------------------------------------------------------ TL205
def _clears_gradients(node: ast.AST) -> bool:
    """``zero_grad(...)``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad`` (the
    rule's own test, read on the ``ast``)."""
    kind = type(node)
    if kind is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        name = _last_name(func)
        if name is not None and name.endswith("zero_grad"):
            return True
        lowered = (name or "").lower()
        if "grad" in lowered and any(word in lowered for word in CLEARING_WORDS):
            return True
        if type(func) is ast.Attribute and func.attr in _GRAD_WRITES:
            receiver = func.value
            while type(receiver) is ast.Attribute:
                if receiver.attr == "grad":
                    return True
                receiver = receiver.value
        return False
    if kind is ast.Assign:
        return any(type(t) is ast.Attribute and t.attr == "grad"  # type: ignore[attr-defined]
                   for t in node.targets)  # type: ignore[attr-defined]
    if kind is ast.Delete:
        return any(type(n) is ast.Attribute and n.attr == "grad"  # type: ignore[attr-defined]
                   for n in _everything(node.targets))  # type: ignore[attr-defined]
    return False


def _backprops(facts: FileFacts, call: ast.AST, names: frozenset[str]) -> bool:
    """``x.backward()`` (or another method of ``names``), not distributed autograd's
    (which keeps gradients per context: nothing piles up)."""
    func = _method(call, *names)
    return func is not None and not (
        (quals := facts.qualnames_of(func)) and all(
            q.startswith("torch.distributed.") for q in quals))


def _related_clear(facts: FileFacts, memo: _FileMemo, function: ast.AST) -> bool:
    """Gradients are cleared where the rule looks for it around a step function: in the
    function, the functions around it, the other methods of its class, the functions it
    names or that call it, or the module-level code when that calls it."""
    if memo.clears_within(_outer_start(function), _end(function)):
        return True
    name = function.name  # type: ignore[attr-defined]
    first, last = _start(function), _end(function)
    named: set[str] | None = None
    methods: list[ast.AST] = []
    mentions: list[Point] = []
    for other in facts.nodes(*_FUNCTIONS):
        start, end = _outer_start(other), _end(other)
        if other is function or not memo.clears_within(start, end):
            continue
        if start <= first and last <= end:
            return True  # a function around it
        if named is None:
            named = {n.id if type(n) is ast.Name else n.attr  # type: ignore[attr-defined]
                     for n in _everything(function.body)  # type: ignore[attr-defined]
                     if type(n) is ast.Name or type(n) is ast.Attribute}
            methods = next(([s for s in c.body if type(s) in _FUNCTIONS]  # type: ignore[attr-defined]
                            for c in facts.nodes(ast.ClassDef)
                            if any(s is function for s in c.body)), [])  # type: ignore[attr-defined]
            mentions = memo.mentions(name)
        if other.name in named or any(m is other for m in methods) or _holds(  # type: ignore[attr-defined]
                mentions, start, end):
            return True
    tree = facts.tree
    if tree is None:
        return False
    top = [s for s in tree.body if type(s) not in (*_FUNCTIONS, ast.ClassDef)]
    if not any(memo.clears_within(_start(s), _end(s)) for s in top):
        return False
    return any(_holds(memo.mentions(name), _start(s), _end(s)) for s in top)


@_holds_when_too_deep
def may_flag_tl205(facts: FileFacts, options: Options) -> bool:
    """A loop that backpropagates and steps an optimizer without clearing gradients, or a
    step function run once per batch with no clearing on its path."""
    memo = _file(facts)
    points = memo.training_points()
    if points is None:
        return False
    steps, backward, any_backward = points
    if backward:
        for loop in facts.nodes(*_LOOPS):
            start, end = _start(loop.body[0]), _end(loop.body[-1])  # type: ignore[attr-defined]
            if _holds(steps, start, end) and _holds(backward, start, end) and not (
                    memo.clears_within(start, end)):
                return True
    for function in facts.nodes(*_FUNCTIONS):
        start, end = _start(function.body[0]), _end(function)  # type: ignore[attr-defined]
        if not any(memo.in_straight_line(function, p) for p in _among(steps, start, end)) or (
                not any(memo.in_straight_line(function, p)
                        for p in _among(any_backward, start, end))):
            continue
        name = function.name  # type: ignore[attr-defined]
        args = function.args.args  # type: ignore[attr-defined]
        if name != "training_step" and not (args and args[0].arg == "engine") and not (
                memo.runs_repeatedly(name)):
            continue
        if not _related_clear(facts, memo, function):
            return True
    return False


# ------------------------------------------------------------------ TL218
def _steps_model(facts: FileFacts, memo: _FileMemo, cleared: str, optimizer: ast.expr
                 ) -> bool:
    """``optimizer`` may be an optimizer built over ``cleared.parameters()``."""
    dotted = _dotted(optimizer)
    if dotted is None:
        return False
    for value in memo.assigned(dotted):
        if type(value) is not ast.Call or not any(
                q.startswith("torch.optim.") and not q.startswith(SCHEDULER_PREFIX)
                for q in facts.qualnames_of(value.func)):
            continue
        params = _first_argument(value, "params")
        func = _method(params, "parameters") if params is not None else None
        if func is not None and _text(func.value) == cleared:
            return True
    return False


def _zero_grad_before_step(facts: FileFacts, memo: _FileMemo, body: list[ast.stmt]) -> bool:
    statements = _straight_line(body)
    seen_backward = False
    for index, stmt in enumerate(statements):
        call = _statement_call(stmt)
        if call is None:
            continue
        if _is_backward(facts, call):
            seen_backward = True
            continue
        if not seen_backward or _method(call, "zero_grad") is None:
            continue
        cleared = _text(call.func.value)  # type: ignore[attr-defined]
        for after in statements[index + 1:]:
            step = _statement_call(after)
            optimizer = _stepped_optimizer(step, bare=True) if step is not None else None
            if optimizer is not None and (_text(optimizer) == cleared or _steps_model(
                    facts, memo, cleared, optimizer)):
                return True
            if any(_method(n, *BACKWARD_METHODS) is not None for n in _scope([after])):
                break
    return False


@_holds_when_too_deep
def may_flag_tl218(facts: FileFacts, options: Options) -> bool:
    """In the straight-line code of a function or loop body: a backward call, then
    ``X.zero_grad()``, then a step of ``X`` (or of an optimizer built over it) before the
    next backward."""
    memo = _file(facts)
    return any(_zero_grad_before_step(facts, memo, node.body)  # type: ignore[attr-defined]
               for node in facts.nodes(*_FUNCTIONS, *_LOOPS))


# ------------------------------------------------------------------ TL219
def _scheduled_optimizers(facts: FileFacts, memo: _FileMemo, scheduler: ast.expr
                          ) -> set[str]:
    """The optimizers (as text) a scheduler may step: the first arguments of the
    ``torch.optim.lr_scheduler`` classes (not those stepped on a metric) assigned to it."""
    dotted = _dotted(scheduler)
    if dotted is None or type(scheduler) is ast.Attribute and dotted.count(".") != 1:
        return set()
    found = set()
    for value in memo.assigned(dotted):
        if type(value) is not ast.Call:
            continue
        leaves = {q[len(SCHEDULER_PREFIX):] for q in facts.qualnames_of(value.func)
                  if q.startswith(SCHEDULER_PREFIX)}
        if any("." not in leaf and leaf[:1].isupper() and leaf not in METRIC_SCHEDULERS
               for leaf in leaves):
            optimizer = _first_argument(value, "optimizer")
            if optimizer is not None:
                found.add(_text(optimizer))
    return found


def _steps(statements: list[ast.stmt], optimizer: str) -> bool:
    """Some statement (nested blocks and loops included) steps ``optimizer``."""
    for node in _scope(statements):
        stepped = _stepped_optimizer(node)
        if stepped is not None and _text(stepped) == optimizer:
            return True
    return False


@_holds_when_too_deep
def may_flag_tl219(facts: FileFacts, options: Options) -> bool:
    """In the straight-line code of a loop body: ``S.step()`` of a scheduler built over an
    optimizer that steps later in the body and not before."""
    memo = None
    for loop in facts.nodes(*_LOOPS):
        statements = _straight_line(loop.body)  # type: ignore[attr-defined]
        for index, stmt in enumerate(statements):
            call = _statement_call(stmt)
            func = _method(call, "step") if call is not None else None
            if func is None or call.args or call.keywords:  # type: ignore[union-attr]
                continue
            memo = memo or _file(facts)
            for optimizer in _scheduled_optimizers(facts, memo, func.value):
                if _steps(statements[index + 1:], optimizer) and not _steps(
                        statements[:index], optimizer):
                    return True
    return False


# ------------------------------------------------------------------ TL221
def _invariant(seed: ast.expr, loops: list[ast.AST]) -> bool:
    """The seed may have the same value on every iteration: no call but pure builtins, no
    name a loop around it binds (by assignment or as its target)."""
    names = set()
    for node in ast.walk(seed):
        kind = type(node)
        if kind is ast.Call:
            if _last_name(node.func) not in PURE_BUILTINS:  # type: ignore[attr-defined]
                return False  # (``builtins.int`` is one too)
        elif kind in (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom):
            return False
        elif kind is ast.Name:
            names.add(node.id)  # type: ignore[attr-defined]
    return all(names.isdisjoint(_bound_by(loop)) for loop in loops)


def _bound_by(loop: ast.AST) -> set[str]:
    """Names a loop binds: its target and the targets of assignments and loops in its body."""
    targets: list[ast.AST] = [loop.target] if type(loop) is not ast.While else []  # type: ignore[attr-defined]
    for node in _scope(loop.body):  # type: ignore[attr-defined]
        kind = type(node)
        if kind is ast.Assign:
            targets.extend(node.targets)  # type: ignore[attr-defined]
        elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
            targets.append(node.target)  # type: ignore[attr-defined]
    names: set[str] = set()
    while targets:
        target = targets.pop()
        if type(target) is ast.Name:
            names.add(target.id)  # type: ignore[attr-defined]
        elif type(target) in (ast.Tuple, ast.List):
            targets.extend(target.elts)  # type: ignore[attr-defined]
        elif type(target) is ast.Starred:
            targets.append(target.value)  # type: ignore[attr-defined]
    return names


@_holds_when_too_deep
def may_flag_tl221(facts: FileFacts, options: Options) -> bool:
    """A seeding call on its own line, with one argument that may not vary, inside a loop
    (of the same function) whose body backpropagates."""
    seeds = [stmt for stmt in facts.nodes(ast.Expr)
             if type(stmt.value) is ast.Call and _means(  # type: ignore[attr-defined]
                 facts, stmt.value.func, SEEDING)]  # type: ignore[attr-defined]
    if not seeds:
        return False
    seeds = [s for s in seeds if len(s.value.args) + len(s.value.keywords) == 1  # type: ignore[attr-defined]
             and type(s.value.args[0] if s.value.args else None) is not ast.Starred  # type: ignore[attr-defined]
             and all(k.arg is not None for k in s.value.keywords)]  # type: ignore[attr-defined]
    around: dict[int, list[ast.AST]] = {id(s): [] for s in seeds}
    trains: list[ast.AST] = []
    for loop in facts.nodes(*_LOOPS):
        backward = False
        held = []
        for node in _scope(loop.body):  # type: ignore[attr-defined]
            if id(node) in around:
                held.append(node)
            elif not backward and type(node) is ast.Call and _is_backward(facts, node):
                backward = True
        for seed in held:
            around[id(seed)].append(loop)
        if backward:
            trains.append(loop)
    for seed in seeds:
        loops = around[id(seed)]
        if any(loop in trains for loop in loops) and _invariant(
                _arguments(seed.value)[0], loops):  # type: ignore[attr-defined]
            return True
    return False


# ------------------------------------------------------------------ TL222
@_holds_when_too_deep
def may_flag_tl222(facts: FileFacts, options: Options) -> bool:
    """A call of the device-neutral autocast with no device type and no star argument."""
    for call in facts.nodes(ast.Call):
        if call.args or any(  # type: ignore[attr-defined]
                k.arg is None or k.arg == "device_type" for k in call.keywords):  # type: ignore[attr-defined]
            continue
        if _means(facts, call.func, NEUTRAL_AUTOCAST):  # type: ignore[attr-defined]
            return True
    return False


# ------------------------------------------------------------------ TL204
def _may_autocast(facts: FileFacts, memo: _FileMemo, item: ast.expr, depth: int = 0) -> bool:
    """A ``with`` item that may enter an enabled autocast: a call of autocast (not given
    ``enabled=False``), a name or factory bound to one (``partial(torch.autocast, ...)``),
    either branch of a conditional."""
    if depth > 4:
        return True
    kind = type(item)
    if kind is ast.IfExp:
        return _may_autocast(facts, memo, item.body, depth + 1) or (  # type: ignore[attr-defined]
            _may_autocast(facts, memo, item.orelse, depth + 1))  # type: ignore[attr-defined]
    if kind is ast.Name:
        return any(type(v) is not ast.Name and _may_autocast(facts, memo, v, depth + 1)
                   for v in memo.assigned(item.id))  # type: ignore[attr-defined]
    if kind is not ast.Call:
        return False
    func = item.func  # type: ignore[attr-defined]
    if _means(facts, func, AUTOCAST_NAMES):
        return not any(k.arg == "enabled" and _is_false(k.value)
                       for k in item.keywords)  # type: ignore[attr-defined]
    if type(func) is not ast.Name:
        return False
    for factory in memo.assigned(func.id):
        if type(factory) is ast.Call and factory.args and _means(
                facts, factory.args[0], AUTOCAST_NAMES) and "functools.partial" in (
                facts.qualnames_of(factory.func)):
            return True
        if type(factory) in (ast.Name, ast.Attribute) and _means(facts, factory, AUTOCAST_NAMES):
            return True
    return False


@_holds_when_too_deep
def may_flag_tl204(facts: FileFacts, options: Options) -> bool:
    """``x.backward()`` in the body of a ``with`` block (of the same function) that may
    enter an enabled autocast."""
    if facts.test_file:  # the rule is silent in test code
        return False
    memo = None
    for node in facts.nodes(*_WITHS):
        if not any(_method(n, "backward") for n in _scope(node.body)):  # type: ignore[attr-defined]
            continue
        memo = memo or _file(facts)
        if any(_may_autocast(facts, memo, item.context_expr)
               for item in node.items):  # type: ignore[attr-defined]
            return True
    return False


# ------------------------------------------------------------------ TL203, TL213
@_holds_when_too_deep
def may_flag_tl203(facts: FileFacts, options: Options) -> bool:
    """A grad-mode call (``torch.no_grad()``) as a statement of its own."""
    return any(type(stmt.value) is ast.Call and _means(  # type: ignore[attr-defined]
        facts, stmt.value.func, GRAD_MODES) for stmt in facts.nodes(ast.Expr))  # type: ignore[attr-defined]


def _uncalled_grad_mode(facts: FileFacts, expr: ast.expr) -> bool:
    if type(expr) is ast.IfExp:
        return _uncalled_grad_mode(facts, expr.body) or _uncalled_grad_mode(facts, expr.orelse)
    return type(expr) in (ast.Name, ast.Attribute) and _means(facts, expr, GRAD_MODE_CLASSES)


@_holds_when_too_deep
def may_flag_tl213(facts: FileFacts, options: Options) -> bool:
    """A ``with`` item naming a grad-mode class without calling it."""
    return any(_uncalled_grad_mode(facts, item.context_expr)
               for node in facts.nodes(*_WITHS) for item in node.items)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ TL209
def _cache_emptied(facts: FileFacts, body: list[ast.stmt]) -> bool:
    """``torch.cuda.empty_cache()`` as a statement of ``body``, or of the bodies of its
    ``with`` blocks and handler-less ``try`` blocks."""
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Expr:
            if type(stmt.value) is ast.Call and _means(  # type: ignore[attr-defined]
                    facts, stmt.value.func, EMPTY_CACHE):  # type: ignore[attr-defined]
                return True
        elif kind in _WITHS or kind is ast.Try and not stmt.handlers:  # type: ignore[attr-defined]
            if _cache_emptied(facts, stmt.body):  # type: ignore[attr-defined]
                return True
    return False


def _ends_loop(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """A statement of the loop's indented body ends the loop (``return``, ``break``,
    ``raise``); a body on the header's line does not count, as for the rule."""
    header = loop.test if type(loop) is ast.While else loop.iter  # type: ignore[union-attr]
    body = loop.body
    return body[0].lineno > (header.end_lineno or header.lineno) and any(
        type(s) in (ast.Return, ast.Break, ast.Raise) for s in body)


@_holds_when_too_deep
def may_flag_tl209(facts: FileFacts, options: Options) -> bool:
    """``torch.cuda.empty_cache()`` run on every iteration of a loop whose body does not
    end it unconditionally."""
    return any(_cache_emptied(facts, loop.body) and not _ends_loop(loop)  # type: ignore[attr-defined,arg-type]
               for loop in facts.nodes(*_LOOPS))


# ------------------------------------------------------------------ TL220
def _tensor_names(expr: ast.expr) -> list[str] | None:
    """The names a back-propagated value is made of (the rule's ``_tensor_names``)."""
    kind = type(expr)
    if kind is ast.Name:
        return [expr.id]  # type: ignore[attr-defined]
    if kind is ast.Constant and type(expr.value) in (int, float):  # type: ignore[attr-defined]
        return []
    if kind is ast.BinOp:
        left = _tensor_names(expr.left)  # type: ignore[attr-defined]
        right = _tensor_names(expr.right)  # type: ignore[attr-defined]
        return left + right if left is not None and right is not None else None
    func = _method(expr, "scale", "mean", "sum")
    if func is None:
        return None
    arguments = _arguments(expr)  # type: ignore[arg-type]
    if func.attr == "scale":
        return _tensor_names(arguments[0]) if len(arguments) == 1 else None
    if any(type(n) is ast.Name for a in arguments for n in ast.walk(a)):
        return None
    return _tensor_names(func.value)


@_holds_when_too_deep
def may_flag_tl220(facts: FileFacts, options: Options) -> bool:
    """``loss.backward(retain_graph=True)`` in a loop, the only backward call there, on
    a value made of names."""
    for loop in facts.nodes(*_LOOPS):
        backwards = [n for n in _scope(loop.body)  # type: ignore[attr-defined]
                     if _method(n, *BACKWARD_METHODS) is not None]
        if len(backwards) != 1:
            continue
        call = backwards[0]
        if call.func.attr == "backward" and any(  # type: ignore[attr-defined]
                k.arg == "retain_graph" and _is_true(k.value) for k in call.keywords) and (  # type: ignore[attr-defined]
                _tensor_names(call.func.value)):  # type: ignore[attr-defined]
            return True
    return False


# ------------------------------------------------------------------ TL223
def _scaler_calls(facts: FileFacts, body: Iterable[ast.AST]
                  ) -> tuple[list[tuple[tuple[int, int], str, str]], list[tuple[int, int]]]:
    """The scaler calls of a scope: (position, kind, scaler text) for a scaled backward
    (``S.scale(L).backward()``, ``S.scale(L)``), an ``S.unscale_(O)`` and an ``S.step(O)``,
    and the positions of the gradient clips."""
    events: list[tuple[tuple[int, int], str, str]] = []
    clips: list[tuple[int, int]] = []
    for node in _scope(body):
        if type(node) is not ast.Call:
            continue
        at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute:
            if func.attr == "backward" and _method(func.value, "scale") is not None:
                events.append((at, "scale", _text(func.value.func.value)))  # type: ignore[attr-defined]
                continue
            if func.attr == "scale" and type(func.value) in (ast.Name, ast.Attribute):
                events.append((at, "scale", _text(func.value)))
                continue
            if func.attr in ("unscale_", "step") and _first_value(node) is not None:  # type: ignore[arg-type]
                events.append((at, func.attr, _text(func.value)))
                continue
        if _means(facts, func, GRADIENT_CLIPS):
            clips.append(at)
    return events, clips


def _clips_scaled(facts: FileFacts, body: Iterable[ast.AST]) -> bool:
    events, clips = _scaler_calls(facts, body)
    for clip in clips:
        for at, kind, scaler in events:
            if kind != "scale" or at > clip:
                continue
            steps = any(k == "step" and s == scaler and a >= clip for a, k, s in events)
            unscaled = any(k == "unscale_" and s == scaler and a < clip for a, k, s in events)
            if steps and not unscaled:
                return True
    return False


@_holds_when_too_deep
def may_flag_tl223(facts: FileFacts, options: Options) -> bool:
    """In one function's own code (or the module's): a gradient clip after a scaled
    backward of a scaler ``S`` that steps after the clip, with no ``S.unscale_`` before."""
    tree = facts.tree
    scopes: list[list[ast.stmt]] = [f.body for f in facts.nodes(*_FUNCTIONS)]  # type: ignore[attr-defined]
    if tree is not None:
        scopes.append(tree.body)
    return any(_clips_scaled(facts, body) for body in scopes)


# ------------------------------------------------------------------ TL224
def _parameters_of(node: ast.AST | None) -> str | None:
    """``M`` (as text) for ``M.parameters()`` / ``M.named_parameters()``."""
    func = _method(node, "parameters", "named_parameters") if node is not None else None
    if func is None or node.args or node.keywords:  # type: ignore[union-attr]
        return None
    return _text(func.value)


def _frozen_by_loop(loop: ast.For) -> str | None:
    """``M`` for ``for p in M.parameters(): p.requires_grad = False`` (or
    ``p.requires_grad_(False)``) as a statement of the loop's own body."""
    model = _parameters_of(loop.iter)
    if model is None:
        return None
    names = {n.id for n in ast.walk(loop.target) if type(n) is ast.Name}
    for stmt in loop.body:
        call = _statement_call(stmt)
        func = _method(call, "requires_grad_") if call is not None else None
        if func is not None and _is_false(_first_value(call)) and (  # type: ignore[arg-type]
                _text(func.value) in names):
            return model
        if type(stmt) is ast.Assign and _is_false(stmt.value) and any(
                type(t) is ast.Attribute and t.attr == "requires_grad"
                and _text(t.value) in names for t in stmt.targets):
            return model
    return None


def _is_optimizer_class(facts: FileFacts, func: ast.AST) -> bool:
    """``torch.optim.SGD`` and the like (not a scheduler, not ``Optimizer`` itself)."""
    leaf = _last_name(func)
    if leaf is None or not leaf[:1].isupper() or leaf == "Optimizer" or type(
            func) is ast.Name and func.id not in facts.bindings and (  # type: ignore[attr-defined]
                func.id not in facts.aliases):  # type: ignore[attr-defined]
        return False
    return any(q.startswith("torch.optim.") and ".lr_scheduler" not in q
               and q.rsplit(".", 1)[1][:1].isupper() and not q.endswith(".Optimizer")
               for q in facts.qualnames_of(func))


def _scope_of(closed: list[tuple[Point, Point, int]], point: Point) -> int:
    """The innermost function, class or lambda (by its index) holding ``point``; -1 for
    module-level code."""
    found = -1
    for start, end, index in closed:
        if start > point:
            break
        if point < end:
            found = index
    return found


@_holds_when_too_deep
def may_flag_tl224(facts: FileFacts, options: Options) -> bool:
    """In one function's own code (or the module's): an optimizer over ``M.parameters()``
    and the freezing of every parameter of ``M`` or of a module holding it."""
    frozen: list[tuple[str, Point]] = []
    for node in facts.nodes(ast.For, ast.AsyncFor):
        model = _frozen_by_loop(node)  # type: ignore[arg-type]
        if model is not None:
            frozen.append((model, _start(node)))
    optimized: list[tuple[str, Point]] = []
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr == "requires_grad_":
            if _is_false(_first_value(call)):  # type: ignore[arg-type]
                frozen.append((_text(func.value), _start(call)))
        elif _is_optimizer_class(facts, func):
            model = _parameters_of(_first_argument(call, "params"))  # type: ignore[arg-type]
            if model is not None:
                optimized.append((model, _start(call)))
    pairs = [(m, f) for m in optimized for f in frozen
             if m[0] == f[0] or m[0].startswith(f[0] + ".")]
    if not pairs:
        return False
    closed = sorted((_outer_start(n), _end(n), i) for i, n in enumerate(facts.nodes(
        *_FUNCTIONS, ast.ClassDef, ast.Lambda)))
    return any(_scope_of(closed, m[1]) == _scope_of(closed, f[1]) for m, f in pairs)
