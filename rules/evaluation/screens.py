"""The ``ast`` checks that screen the evaluation rules (TL401-TL405) before libcst runs,
and the names that make a function evaluation or inference code (the rules ask them too).

Each ``may_flag_tl4xx`` follows its rule's decision in ``ast`` terms and holds on every file
the rule can flag (see :func:`torchlint.engine.triage.check`): where the rule asks what the
``ast`` cannot tell (a callee resolved through the project, the callers of a function, a
model's layers), the check assumes the rule may report. A condition that rules a file out
is one the rule surely applies: a grad-mode word spelled in a ``with`` item or decorator,
``.backward()`` called, a method of a class whose base is imported from torch.

Imports neither libcst nor a rule: the screen runs these before either is loaded.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from torchlint.analysis.ast_names import dotted as _dotted
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import BACKWARD_METHODS, canonical, is_model_name
from torchlint.engine.triage import FileFacts, child_nodes

# ------------------------------------------------------------------ names
EVAL_NAME = re.compile(
    r"^(val|valid|validate|validation|eval|evaluate|test|infer|inference|predict)(_|$)"
    r"|_(eval|test|validate|predict|inference)$"
)
# Per-batch hooks (Lightning's validation_step, a trainer's eval_step) run under the
# caller's no_grad and mode switch: judging them alone would cry wolf.
_STEP_SUFFIXES = ("_step", "_step_end", "_batch")
# Functions that run a trained model to produce something: translation, captions,
# predictions, generated or sampled outputs, style transfer, beam search
INFERENCE_NAME = re.compile(
    r"^(translate|stylize)$|^(caption|beam_search)(_|$)|^(predict|generate|sample|infer)")
# Methods that run a model to produce outputs: ``model.generate(...)``, ``decoder.beam_search``
INFERENCE_METHODS = frozenset({"generate", "sample", "beam_search", "greedy_decode",
                               "greedy_search", "translate", "caption", "predict", "infer",
                               "inference"})


def is_eval_name(name: str) -> bool:
    name = name.lstrip("_")
    return bool(EVAL_NAME.search(name)) and not name.endswith(_STEP_SUFFIXES)


def is_inference_name(name: str) -> bool:
    """A function named for running a model to produce outputs (``translate``,
    ``predict_image``, ``generate_text``, ``sample``, ``beam_search``...)."""
    name = name.lstrip("_")
    return bool(INFERENCE_NAME.search(name)) and not name.endswith(_STEP_SUFFIXES)


def is_step_hook(name: str) -> bool:
    return name.lstrip("_").endswith(_STEP_SUFFIXES)


# ------------------------------------------------------------------ shared facts
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_WITHS = (ast.With, ast.AsyncWith)
# grad_mode.GRAD_MODE_WORDS: a with item or decorator spelling one of them turns gradients
# off for the rules (GradOff.MENTIONED at least)
_GRAD_MODE_WORDS = ("no_grad", "inference_mode", "set_grad_enabled", "enable_grad")
# torch_facts.NO_GRAD_CONTEXTS and SET_GRAD_ENABLED: names that turn gradients off however
# they are spelled
_GRAD_OFF_NAMES = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
    "torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
    "torch.autograd.grad_mode.set_grad_enabled"})
_EXIT_STACKS = frozenset({"contextlib.ExitStack", "contextlib.AsyncExitStack"})
# methods whose call says a function needs gradients (functions.FunctionFacts.needs_grad)
_NEEDS_GRAD = frozenset({"step", "requires_grad_", "retain_grad", "zero_grad"})
# methods that run a training step: never evaluation code (TL401)
_TRAINING_ENTRY_POINTS = frozenset({"forward", "__call__", "training_step", "train_step",
                                    "compute_loss", "loss"})


def _arity(call: ast.Call) -> int:
    """How many arguments libcst sees (keywords and stars included)."""
    return len(call.args) + len(call.keywords)


def _only_false(call: ast.Call) -> bool:
    """``x.train(False)`` / ``x.train(mode=False)``."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return len(values) == 1 and type(values[0]) is ast.Constant and (
        values[0].value is False)  # type: ignore[attr-defined]


def _spells_grad_mode(expr: ast.AST) -> bool:
    """The source of ``expr`` surely spells a grad-mode word (in a name, an attribute, a
    keyword or a string): the rules take such a with item or decorator as turning
    gradients off."""
    for node in ast.walk(expr):
        kind = type(node)
        if kind is ast.Name:
            word = node.id  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            word = node.attr  # type: ignore[attr-defined]
        elif kind is ast.keyword:
            word = node.arg or ""  # type: ignore[attr-defined]
        elif kind is ast.Constant and type(node.value) is str:  # type: ignore[attr-defined]
            word = node.value  # type: ignore[attr-defined]
        else:
            continue
        if any(w in word for w in _GRAD_MODE_WORDS):
            return True
    return False


def _may_turn_off(facts: FileFacts, expr: ast.expr) -> bool:
    """``expr`` (a with item or decorator) may turn gradients off: it spells a grad-mode
    word, names torch's through an alias, or opens an ExitStack that may enter one."""
    if _spells_grad_mode(expr):
        return True
    target = expr.func if type(expr) is ast.Call else expr  # type: ignore[attr-defined]
    names = facts.qualnames_of(target)
    return not names.isdisjoint(_GRAD_OFF_NAMES) or not names.isdisjoint(_EXIT_STACKS)


def _surely_off(items: Iterable[ast.withitem]) -> bool:
    return any(_spells_grad_mode(item.context_expr) for item in items)


@lru_cache(maxsize=4096)  # the same names recur file after file
def _names(name: str) -> tuple[bool, bool]:
    """Whether a function of this name is evaluation code, and whether it is evaluation or
    inference code."""
    evaluation = is_eval_name(name)
    return evaluation, evaluation or is_inference_name(name)


def _model_words(words: frozenset[str], model_names: frozenset[str]) -> set[str]:
    """The words that are a model's name."""
    return {word for word in words if _model_name(word, model_names)}


@lru_cache(maxsize=4096)  # the same words recur file after file
def _model_name(name: str, model_names: frozenset[str]) -> bool:
    return is_model_name(name, model_names)


@dataclass
class _Scan:
    """What one function's own body does with modes and models (functions.scan_function)."""

    evaluated: set[str] = field(default_factory=set)  # X.eval(), X.train(False)
    other_eval: bool = False  # .eval() / .train(...) on something that is no dotted name
    train_at: bool = False  # X.train()
    trained: set[str] = field(default_factory=set)  # X.train(...) with arguments
    needs_grad: bool = False  # .backward(), .step(), .zero_grad()...
    # the callees (dotted names, ``X`` for ``X.forward(...)``) with whether the call surely
    # runs with gradients off (a with item spells a grad-mode word) and whether it may
    calls: list[tuple[str, bool, bool]] = field(default_factory=list)


class _File:
    """What a check asks of one file more than once, computed when first asked. Not kept
    after the check: holding it would keep the file's tree alive until the next file."""

    def __init__(self, facts: FileFacts, options: Options) -> None:
        self.facts = facts
        self.options = options
        self._sets_eval: dict[int, bool] = {}
        self._scans: dict[int, _Scan] = {}
        self._owners: dict[int, ast.ClassDef] | None = None
        self._module_classes: set[int] | None = None
        self._globals: set[str] | None = None
        self._turns_off: bool | None = None
        self._calls: tuple[list[int], list[str], list[tuple[int, str]]] | None = None

    def scan(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> _Scan:
        found = self._scans.get(id(function))
        if found is None:
            found = self._scans[id(function)] = _scan(self.facts, function.body)
        return found

    def owner(self, function: ast.AST) -> ast.ClassDef | None:
        """The class whose body holds ``function`` directly."""
        if self._owners is None:
            self._owners = {id(stmt): cls for cls in self.facts.nodes(ast.ClassDef)
                            for stmt in cls.body  # type: ignore[attr-defined]
                            if type(stmt) in _FUNCTIONS}
        return self._owners.get(id(function))

    def surely_module_class(self, cls: ast.ClassDef) -> bool:
        """The context surely takes ``cls`` for a module class: a class of the module's
        body, the only class of its name, with a base imported at module level from a
        module base (``nn.Module``) or such a class of the file."""
        if self._module_classes is None:
            self._module_classes = _surely_module_classes(self.facts, self.options)
        return id(cls) in self._module_classes

    def sets_eval(self, cls: ast.ClassDef) -> bool:
        """Some code of the class calls ``.eval()`` or ``.train(...)`` with an argument
        (functions.class_sets_eval)."""
        found = self._sets_eval.get(id(cls))
        if found is None:
            found = self._sets_eval[id(cls)] = any(
                type(node) is ast.Call and type(node.func) is ast.Attribute and (  # type: ignore[attr-defined]
                    node.func.attr == "eval" and not _arity(node)  # type: ignore[attr-defined,arg-type]
                    or node.func.attr == "train" and _arity(node))  # type: ignore[attr-defined,arg-type]
                for stmt in cls.body for node in ast.walk(stmt))
        return found

    @property
    def runs_something(self) -> bool:
        """Some call's callee may be a model (see :meth:`callees_within`)."""
        if self._calls is None:
            self._calls = self._find_calls()
        return bool(self._calls[0])

    def callees_within(self, node: ast.AST) -> list[str]:
        """The dotted callees within the lines of ``node`` whose last name may be a model's
        (a model's name, ``forward``, an inference method the file defines, a global of the
        script, or what an ``X.eval()`` evaluates)."""
        if self._calls is None:
            self._calls = self._find_calls()
        lines, callees, _ = self._calls
        return callees[bisect_left(lines, node.lineno):  # type: ignore[attr-defined]
                       bisect_right(lines, node.end_lineno)]  # type: ignore[attr-defined]

    def evaluated_within(self, node: ast.AST) -> set[str]:
        """The receivers of the ``X.eval()`` and ``X.train(False)`` calls within the lines
        of ``node``."""
        if self._calls is None:
            self._calls = self._find_calls()
        start, end = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        return {target for line, target in self._calls[2] if start <= line <= end}  # type: ignore[operator]

    def _find_calls(self) -> tuple[list[int], list[str], list[tuple[int, str]]]:
        facts = self.facts
        words = {w for w in facts.call_words if w == "forward" or w in facts.aliases or (
            w in INFERENCE_METHODS and w in facts.functions)}
        words |= _model_words(facts.call_words, self.options.model_names)
        calls = facts.index.get(ast.Call, ())
        evaluations: list[tuple[int, str]] = []
        if "eval" in facts.method_calls or "train" in facts.method_calls:
            attribute = ast.Attribute
            for call in calls:
                func = call.func  # type: ignore[attr-defined]
                if type(func) is attribute and (
                        func.attr == "eval" and not _arity(call)  # type: ignore[arg-type]
                        or func.attr == "train" and _only_false(call)):  # type: ignore[arg-type]
                    target = _dotted(func.value)
                    if target is not None:
                        words.add(target.rpartition(".")[2])
                        evaluations.append((call.lineno, target))  # type: ignore[attr-defined]
        if not words:
            return [], [], evaluations
        chosen: list[tuple[int, str]] = []
        name, attribute = ast.Name, ast.Attribute
        for call in calls:
            func = call.func  # type: ignore[attr-defined]
            kind = type(func)
            if kind is attribute and func.attr in words or kind is name and func.id in words:
                callee = _dotted(func)
                if callee is not None:
                    chosen.append((call.lineno, callee))  # type: ignore[attr-defined]
        chosen.sort()
        return [line for line, _ in chosen], [callee for _, callee in chosen], evaluations

    @property
    def module_names(self) -> set[str]:
        """Names bound at module level by an assignment, a loop or a with item (the globals
        a script's functions may run as models)."""
        if self._globals is None:
            self._globals = _module_bound(self.facts.tree.body)  # type: ignore[union-attr]
        return self._globals

    @property
    def may_turn_off(self) -> bool:
        """A with item or decorator of the file may turn gradients off."""
        if self._turns_off is None:
            facts = self.facts
            self._turns_off = any(
                _may_turn_off(facts, item.context_expr)
                for node in facts.nodes(*_WITHS) for item in node.items  # type: ignore[attr-defined]
            ) or any(_may_turn_off(facts, d) for node in facts.nodes(*_FUNCTIONS)
                     for d in node.decorator_list)  # type: ignore[attr-defined]
        return self._turns_off


def _scan(facts: FileFacts, body: list[ast.stmt]) -> _Scan:
    found = _Scan()
    stack: list[tuple[ast.AST, bool, bool]] = [(stmt, False, False) for stmt in body]
    while stack:
        node, surely, maybe = stack.pop()
        kind = type(node)
        if kind in _SCOPES:
            continue
        if kind in _WITHS:
            items = node.items  # type: ignore[attr-defined]
            stack.extend((item, surely, maybe) for item in items)
            inner = (surely or _surely_off(items),
                     maybe or any(_may_turn_off(facts, i.context_expr) for i in items))
            stack.extend((stmt, *inner) for stmt in node.body)  # type: ignore[attr-defined]
            continue
        if kind is ast.Call:
            _note_call(node, surely, maybe, found)  # type: ignore[arg-type]
        stack.extend((child, surely, maybe) for child in child_nodes(node))
    return found


def _note_call(call: ast.Call, surely: bool, maybe: bool, found: _Scan) -> None:
    func = call.func
    if type(func) is ast.Attribute:
        method = func.attr
        target = _dotted(func.value)
        if method == "eval" and not _arity(call):
            if target is None:
                found.other_eval = True
            else:
                found.evaluated.add(target)
        elif method == "train":
            if target is not None and not _arity(call):
                found.train_at = True
            if target is not None and _arity(call):
                found.trained.add(target)
                if _only_false(call):
                    found.evaluated.add(target)
            elif _arity(call):
                found.other_eval = True
        elif method == "backward" or method in _NEEDS_GRAD:
            found.needs_grad = True
        elif method == "forward" and target is not None:
            found.calls.append((target, surely, maybe))
    name = _dotted(func)
    if name is not None and name not in ("self", "super"):
        found.calls.append((name, surely, maybe))


def _surely_module_classes(facts: FileFacts, options: Options) -> set[int]:
    tree = facts.tree
    assert tree is not None
    imported: dict[str, set[str]] = {}
    for stmt in tree.body:
        if type(stmt) is ast.Import:
            for alias in stmt.names:
                name = alias.asname or alias.name.split(".", 1)[0]
                imported.setdefault(name, set()).add(
                    alias.name if alias.asname else name)
        elif type(stmt) is ast.ImportFrom and not stmt.level and stmt.module:
            for alias in stmt.names:
                imported.setdefault(alias.asname or alias.name, set()).add(
                    f"{stmt.module}.{alias.name}")
    names: dict[str, int] = {}
    for cls in facts.nodes(ast.ClassDef):
        names[cls.name] = names.get(cls.name, 0) + 1  # type: ignore[attr-defined]
    classes = {stmt.name: stmt for stmt in tree.body
               if type(stmt) is ast.ClassDef and names[stmt.name] == 1}
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, cls in classes.items():
            if name in found:
                continue
            for base in cls.bases:
                chain = _dotted(base)
                if chain is None:
                    continue
                head, _, rest = chain.partition(".")
                if not rest and head in found:
                    found.add(name)
                    changed = True
                    break
                quals = imported.get(head)
                if quals is None or len(quals) != 1 or facts.bindings.get(head) != quals or (
                        head in facts.aliases or head in classes or head in facts.functions):
                    continue
                qual = canonical(next(iter(quals)) + (f".{rest}" if rest else ""))
                if qual in options.module_bases:
                    found.add(name)
                    changed = True
                    break
    return {id(classes[name]) for name in found}


def _module_bound(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        stmt = stack.pop()
        kind = type(stmt)
        if kind in _SCOPES or kind in (ast.Import, ast.ImportFrom):
            continue
        targets: list[ast.AST] = []
        if kind is ast.Assign:
            targets = stmt.targets  # type: ignore[attr-defined]
        elif kind in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor):
            targets = [stmt.target]  # type: ignore[attr-defined]
        elif kind in _WITHS:
            targets = [i.optional_vars for i in stmt.items  # type: ignore[attr-defined]
                       if i.optional_vars is not None]
        for target in targets:
            names.update(n.id for n in ast.walk(target) if type(n) is ast.Name)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(stmt, name, ()))
    return names


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    args = function.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


# ------------------------------------------------------------------ TL401
def may_flag_tl401(facts: FileFacts, options: Options) -> bool:
    """An evaluation or inference function (or one that calls ``X.eval()``) may run a model
    with autograd on, or a script's loop may run an evaluated model or one over a test
    set outside ``no_grad``."""
    file = _File(facts, options)
    return _function_may_flag_tl401(file, options) or _script_may_flag_tl401(file, options)


def _function_may_flag_tl401(file: _File, options: Options) -> bool:
    facts = file.facts
    if not (any(_names(name)[1] for name in facts.functions) or "eval" in facts.method_calls
            or "train" in facts.method_calls) or not file.runs_something:
        return False  # no function named for evaluation, none evaluating, or no model run
    for function in facts.nodes(*_FUNCTIONS):
        callees = file.callees_within(function)
        if not callees:
            continue  # it runs no model
        name = function.name  # type: ignore[attr-defined]
        named = _names(name)[1]
        evaluated = file.evaluated_within(function)
        if not named and not evaluated:
            continue  # neither named for evaluation nor evaluating a model
        if is_step_hook(name) or name in _TRAINING_ENTRY_POINTS:
            continue
        models = _Models(file, function, options, evaluated, script=True)  # type: ignore[arg-type]
        if not models.runs_any(callees) or any(
                _spells_grad_mode(d) for d in function.decorator_list):  # type: ignore[attr-defined]
            continue
        cls = file.owner(function)
        if cls is not None and name.startswith("test") and _test_case(cls):
            continue
        if facts.test_file and _in_a_test(file, function):
            continue
        scan = file.scan(function)  # type: ignore[arg-type]
        if not (named or scan.evaluated) or scan.needs_grad:
            continue
        if cls is not None and "self" not in scan.evaluated and file.surely_module_class(cls):
            continue  # a module's own inference method: its callers decide
        if not named and (scan.train_at or scan.trained - scan.evaluated):
            continue  # switches modes back and forth: not evaluation code
        models = _Models(file, function, options, scan.evaluated, script=True)  # type: ignore[arg-type]
        if models.runs_any(callee for callee, surely, _ in scan.calls if not surely):
            return True
    return False


def _is_test(file: _File, function: ast.AST) -> bool:
    """In a test file, a test itself (functions.is_pytest_test): ``test*`` and ``_test*``
    functions, and methods of a ``Test*`` class."""
    cls = file.owner(function)
    return function.name.startswith(("test", "_test")) or (  # type: ignore[attr-defined]
        cls is not None and cls.name.startswith("Test"))


def _in_a_test(file: _File, function: ast.AST) -> bool:
    """In a test file, ``function`` is a test or lies in one (a callback class defined
    inside a test function): the rule leaves tests alone. A def that starts within the
    lines of another def's body is nested in it."""
    if _is_test(file, function):
        return True
    spans = file.facts.once("tl401_test_spans", lambda: [
        (f.lineno, f.end_lineno) for f in file.facts.nodes(*_FUNCTIONS)  # type: ignore[attr-defined]
        if _is_test(file, f)])
    line = function.lineno  # type: ignore[attr-defined]
    return any(start < line <= end for start, end in spans)  # type: ignore[operator]


def _test_case(cls: ast.ClassDef) -> bool:
    """A base spelled ``...TestCase``: its ``test*`` methods are tests wherever they are."""
    for base in cls.bases:
        last = base.attr if type(base) is ast.Attribute else (  # type: ignore[attr-defined]
            base.id if type(base) is ast.Name else "")  # type: ignore[attr-defined]
        if last.endswith("TestCase"):
            return True
    return False


class _Models:
    """The dotted names that may be models in one function (functions.model_names, looser):
    its model-named parameters, ``self.<model-named>``, what it evaluates and, for a
    script (TL401), its globals named like models or bound to a value at module level."""

    def __init__(self, file: _File, function: ast.FunctionDef | ast.AsyncFunctionDef,
                 options: Options, evaluated: set[str], *, script: bool) -> None:
        self.file = file
        self.model_names = options.model_names
        self.params = _params(function)
        self.this = self.params[0] if self.params else None  # a method's self, maybe
        self.names = evaluated | {p for p in self.params if _model_name(p, self.model_names)}
        self.script = script
        self.recording = INFERENCE_METHODS & file.facts.functions

    def is_model(self, name: str) -> bool:
        if name in self.names:
            return True
        head, _, rest = name.partition(".")
        if rest:
            return head == self.this and "." not in rest and _model_name(rest, self.model_names)
        return self.script and head not in self.params and head in self.file.module_names and (
            _model_name(head, self.model_names) or head in self.file.facts.aliases)

    def runs_any(self, callees: Iterable[str]) -> bool:
        """A call of one of ``callees`` runs a model: the model itself (``model(x)``,
        ``model.forward(x)``), or an inference method a class of the file defines
        (``decoder.beam_search(...)``)."""
        for callee in callees:
            head, _, method = callee.rpartition(".")
            if self.is_model(callee) or head and (
                    method == "forward" or method in self.recording) and self.is_model(head):
                return True
        return False


def _script_may_flag_tl401(file: _File, options: Options) -> bool:
    """TL401's module-level shape: a loop of the script that runs, outside ``no_grad`` and
    without a backward, a model the script evaluated or one over a test set."""
    evaluated: set[str] = set()
    loops: list[ast.For | ast.AsyncFor | ast.While] = []
    _module_sequence(file.facts.tree.body, evaluated, loops)  # type: ignore[union-attr]
    for loop in loops:
        if any(type(n) is ast.Call and type(n.func) is ast.Attribute  # type: ignore[attr-defined]
               and n.func.attr in BACKWARD_METHODS  # type: ignore[attr-defined]
               for stmt in loop.body for n in ast.walk(stmt)):
            continue  # it trains
        test_set = type(loop) is not ast.While and _evaluation_set(loop.iter)  # type: ignore[union-attr]
        if not evaluated and not test_set:
            continue
        for callee in _loop_callees(loop.body):
            if callee in evaluated or test_set and is_model_name(callee, options.model_names):
                return True
    return False


def _module_sequence(body: list[ast.stmt], evaluated: set[str],
                     loops: list[ast.For | ast.AsyncFor | ast.While]) -> None:
    """The statements the rule follows at module level: the bodies of ``if`` blocks too,
    and of ``with`` blocks that spell no grad-mode word (TL401's _module_sequence)."""
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Expr and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
            call = stmt.value  # type: ignore[attr-defined]
            if type(call.func) is ast.Attribute and (
                    call.func.attr == "eval" and not _arity(call)
                    or call.func.attr == "train" and _only_false(call)):
                target = _dotted(call.func.value)
                if target is not None:
                    evaluated.add(target)
        elif kind is ast.If or kind in _WITHS and not _surely_off(stmt.items):  # type: ignore[attr-defined]
            _module_sequence(stmt.body, evaluated, loops)  # type: ignore[attr-defined]
        elif kind in _LOOPS:
            loops.append(stmt)  # type: ignore[arg-type]


# the words of a test or validation set (TL401's loops of a script): in a name, or a key
EVALUATION_SET = re.compile(r"(test|val|valid|eval)_?(loader|dl|data|dataset|set|batches|iter)")
EVALUATION_KEYS = frozenset({"val", "valid", "validation", "test", "eval"})


def _evaluation_set(iterable: ast.expr) -> bool:
    """``test_loader``, ``enumerate(valloader)``, ``tqdm(dataloaders["val"])``."""
    for node in ast.walk(iterable):
        kind = type(node)
        if kind is ast.Name:
            words = node.id.lower()  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            words = node.attr.lower()  # type: ignore[attr-defined]
        elif kind is ast.Constant and type(node.value) is str:  # type: ignore[attr-defined]
            if node.value.lower() in EVALUATION_KEYS:  # type: ignore[attr-defined]
                return True
            continue
        else:
            continue
        if EVALUATION_SET.search(words):
            return True
    return False


def _loop_callees(body: list[ast.stmt]) -> Iterator[str]:
    """The dotted callees of a loop's body (``X`` for ``X.forward(...)`` or an inference
    method), outside nested scopes and ``with`` blocks that spell a grad-mode word."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _SCOPES or kind is ast.Lambda or kind in _WITHS and _surely_off(
                node.items):  # type: ignore[attr-defined]
            continue
        if kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in ("forward", *INFERENCE_METHODS):
                func = func.value
            name = _dotted(func)
            if name is not None:
                yield name
        stack.extend(child_nodes(node))


# ------------------------------------------------------------------ TL402
def may_flag_tl402(facts: FileFacts, options: Options) -> bool:
    """An evaluation function that never switches a mode may run a model it receives (or
    ``self.<model>``) under ``no_grad``, in a function that may run with gradients off, or
    in a file that may train."""
    file = _File(facts, options)
    trains = not facts.method_calls.isdisjoint(("backward", "manual_backward", "step")) or (
        "torch.autograd.backward" in facts.calls)
    if not any(_names(name)[0] for name in facts.functions) or not file.runs_something:
        return False
    for function in facts.nodes(*_FUNCTIONS):
        name = function.name  # type: ignore[attr-defined]
        if not _names(name)[0]:
            continue
        callees = file.callees_within(function)
        models = _Models(file, function, options, set(), script=False)  # type: ignore[arg-type]
        if not callees or not models.runs_any(callees):
            continue
        cls = file.owner(function)
        if cls is not None and (name.startswith("test") and _test_case(cls)
                                or file.surely_module_class(cls)):
            continue
        scan = file.scan(function)  # type: ignore[arg-type]
        if scan.evaluated or scan.other_eval or scan.trained or scan.needs_grad:
            continue
        off = trains or any(_may_turn_off(facts, d) for d in function.decorator_list) or (  # type: ignore[attr-defined]
            name in facts.call_words and file.may_turn_off)
        if any((maybe or off) and models.is_model(callee) for callee, _, maybe in scan.calls) and (
                cls is None or not file.sets_eval(cls)):
            return True
    return False


# ------------------------------------------------------------------ TL403
def may_flag_tl403(facts: FileFacts, options: Options) -> bool:
    """``X.eval()`` inside a loop that backpropagates, runs X and never calls a ``.train``
    that may concern X."""
    evaluations = [call for call in facts.nodes(ast.Call)
                   if type(call.func) is ast.Attribute and call.func.attr == "eval"  # type: ignore[attr-defined]
                   and not _arity(call) and _dotted(call.func.value) is not None]  # type: ignore[attr-defined,arg-type]
    if not evaluations:
        return False
    lines = [call.lineno for call in evaluations]  # type: ignore[attr-defined]
    for loop in facts.nodes(*_LOOPS):
        body = loop.body  # type: ignore[attr-defined]
        if any(body[0].lineno <= line <= body[-1].end_lineno for line in lines) and (
                _loop_may_flag_tl403(facts, body)):
            return True
    return False


def _loop_may_flag_tl403(facts: FileFacts, body: list[ast.stmt]) -> bool:
    backward = False
    evaluated: set[str] = set()
    switched: list[str | None] = []  # receivers of .train(...) calls
    runs: list[tuple[str | None, list[str | None]]] = []  # (callee, arguments) outside no_grad
    # (node, inside a lambda, inside a with block that spells a grad-mode word)
    stack: list[tuple[ast.AST, bool, bool]] = [(stmt, False, False) for stmt in body]
    while stack:
        node, in_lambda, off = stack.pop()
        kind = type(node)
        if kind in _SCOPES:
            continue
        if kind is ast.Lambda:
            in_lambda = True
        elif kind in _WITHS and not off and _surely_off(node.items):  # type: ignore[attr-defined]
            stack.extend((child, in_lambda, True) for child in child_nodes(node))
            continue
        elif kind is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute:
                if func.attr in BACKWARD_METHODS:
                    backward = True
                elif func.attr == "train":
                    switched.append(_dotted(func.value))
                elif func.attr == "eval" and not in_lambda and not _arity(node):  # type: ignore[arg-type]
                    target = _dotted(func.value)
                    if target is not None:
                        evaluated.add(target)
            if "torch.autograd.backward" in facts.qualnames_of(func):
                backward = True
            if not off:
                runs.append((_dotted(func), [
                    _dotted(a) for a in (*node.args, *(k.value for k in node.keywords))]))  # type: ignore[attr-defined]
        stack.extend((child, in_lambda, off) for child in child_nodes(node))
    if not backward:
        return False
    for model in evaluated:
        if any(other is None or other == model or other.startswith(model + ".")
               or model.startswith(other + ".") for other in switched):
            continue  # switched back (or maybe: the rule's own test)
        if any(callee in (model, model + ".forward", model + ".module")
               or callee is not None and model.startswith(callee + ".") or model in arguments
               for callee, arguments in runs):
            return True
    return False


# ------------------------------------------------------------------ TL404
_MODE_METHODS = frozenset({"eval", "train", "zero_grad"})


def may_flag_tl404(facts: FileFacts, options: Options) -> bool:
    """A statement that is only ``X.eval`` / ``X.train`` / ``X.zero_grad``."""
    return any(type(node.value) is ast.Attribute and node.value.attr in _MODE_METHODS  # type: ignore[attr-defined]
               for node in facts.nodes(ast.Expr))


# ------------------------------------------------------------------ TL405
DROPOUTS = frozenset(
    f"torch.nn.functional.{name}"
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout")
)


def may_flag_tl405(facts: FileFacts, options: Options) -> bool:
    """A call of a functional dropout without ``training``, a third positional argument or
    a starred one."""
    if facts.test_file:  # the rule is silent in test code
        return False
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        kind = type(func)
        if not (kind is ast.Attribute and "dropout" in func.attr or kind is ast.Name and (
                func.id in facts.bindings or func.id in facts.aliases)):
            continue
        if len(call.args) >= 3 or any(  # type: ignore[attr-defined]
                k.arg in (None, "training") for k in call.keywords) or any(  # type: ignore[attr-defined]
                type(a) is ast.Starred for a in call.args):  # type: ignore[attr-defined]
            continue
        if not facts.qualnames_of(func).isdisjoint(DROPOUTS):
            return True
    return False
