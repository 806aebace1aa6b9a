"""Facts about evaluation code shared by the train/eval-mode rules (TL401-TL405, TL107).

An *evaluation function* is one whose name says so (``evaluate``, ``val_epoch``,
``run_test``...) or that puts a model in eval mode. The helpers here scan one
function's own body (nested functions and classes are their own scopes) and,
once per file, which functions are called from no-grad code or from code that
already switched a model to eval mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.bindings import (
    binds_anywhere,
    bound_names,
    global_value,
    module_statements,
)
from torchlint.analysis.context import FileContext
from torchlint.analysis.grad_mode import (
    GRAD_MODE_WORDS,
    GradOff,
    called_only_with_grad_off,
    decorated_no_grad,
    with_turns_off,
)
from torchlint.analysis.nodes import (
    dotted_name,
    iter_scope,
    last_name_part,
    method_call,
    parameters,
    semantic_children,
)
from torchlint.analysis.torch_facts import (
    BACKWARD_METHODS,
    is_backward_call,
    is_layer_call,
    is_model_name,
)

# the names of evaluation and inference code live with the screen's checks (no libcst there)
from torchlint.rules.evaluation.screens import (  # noqa: F401 - the rules ask this module
    INFERENCE_METHODS,
    is_eval_name,
    is_inference_name,
    is_step_hook,
)

_SCOPES = (cst.FunctionDef, cst.ClassDef)
# calls that need gradients: the function is differentiating, not evaluating
# (``torch.autograd.Variable(...)`` is only a legacy wrapper, not one of them)
_GRAD_NEEDING = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch.enable_grad",
                           "torch.autograd.grad_mode.enable_grad"})
_GRAD_NEEDING_PREFIXES = ("torch.autograd.functional.", "torch.func.", "torch.autograd.forward_ad.")


def is_pytest_test(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """A test, not evaluation code: ``test*`` functions and methods of ``Test*`` or
    ``unittest.TestCase`` classes, ``_test_*`` helpers and the functions nested in
    them, in test files; ``test*`` methods of a ``TestCase`` class anywhere."""
    if _is_test_itself(ctx, function):
        return True
    if not ctx.is_test_file:
        return False
    index = ctx.index_of(function)
    outer = ctx.ancestors[:index] if index >= 0 else []
    return any(isinstance(anc, cst.FunctionDef) and _is_test_itself(ctx, anc) for anc in outer)


def _is_test_itself(ctx: FileContext, function: cst.FunctionDef) -> bool:
    name = function.name.value
    cls = ctx.enclosing_class(function)
    in_test_case = cls is not None and any(
        (ctx.qualified_name(b.value) or "").endswith("TestCase") or (
            last_name_part(b.value) or "").endswith("TestCase") for b in cls.bases)
    if in_test_case and name.startswith("test"):
        return True
    if not ctx.is_test_file:
        return False
    in_test_class = cls is not None and cls.name.value.startswith("Test")
    return name.startswith("test") or name.startswith("_test") or in_test_class


def params(function: cst.FunctionDef) -> list[cst.Param]:
    return parameters(function, stars=False)


def self_name(ctx: FileContext, function: cst.FunctionDef) -> str | None:
    """The first parameter of a method (``self``), when the function is a method."""
    if ctx.enclosing_class(function) is None:
        return None
    if any(last_name_part(d.decorator) in ("staticmethod", "classmethod")
           for d in function.decorators):
        return None
    first = params(function)[:1]
    return first[0].name.value if first else None


@dataclass
class ModelCall:
    name: str
    call: cst.Call
    grad_free: bool


@dataclass
class FunctionFacts:
    """What one function does with models, gradients and modes."""

    eval_receivers: dict[str, cst.Call] = field(default_factory=dict)
    # receivers whose .eval() is only ever called with gradients already off (an EMA or
    # teacher model inside a training step's no_grad block)
    eval_in_grad_free: set[str] = field(default_factory=set)
    other_eval: bool = False  # .eval() on something that is not a plain dotted name
    train_receivers: set[str] = field(default_factory=set)  # .train(...) with any argument
    train_at: dict[str, int] = field(default_factory=dict)  # X.train(): len(calls) then
    calls: list[ModelCall] = field(default_factory=list)
    backward: bool = False
    needs_grad: bool = False  # autograd.grad, optimizer step, requires_grad...
    grad_off_call: bool = False  # torch.set_grad_enabled(False) as a plain call
    grad_free_block: bool = False  # has a with-block turning grad off


def scan_function(ctx: FileContext, function: cst.FunctionDef) -> FunctionFacts:
    facts = FunctionFacts()
    _scan(ctx, function.body, False, facts)
    return facts


def _scan(ctx: FileContext, node: cst.CSTNode, grad_free: bool, facts: FunctionFacts) -> None:
    if isinstance(node, _SCOPES):
        return
    if isinstance(node, cst.With):
        for item in node.items:
            _scan(ctx, item, grad_free, facts)
        inner = grad_free or with_turns_off(ctx, node, GradOff.MENTIONED)
        if inner and not grad_free:
            facts.grad_free_block = True
        _scan(ctx, node.body, inner, facts)
        return
    if isinstance(node, cst.Call):
        _note_call(ctx, node, grad_free, facts)
    for child in semantic_children(node):
        _scan(ctx, child, grad_free, facts)


def _note_call(ctx: FileContext, node: cst.Call, grad_free: bool, facts: FunctionFacts) -> None:
    attribute = method_call(node)
    if attribute is not None:
        method = attribute.attr.value
        target = dotted_name(attribute.value)
        if method == "eval" and not node.args:
            if target is not None and grad_free and target not in facts.eval_receivers:
                facts.eval_in_grad_free.add(target)
            elif target is not None and not grad_free:
                facts.eval_in_grad_free.discard(target)
            if target is None:
                facts.other_eval = True
            else:
                facts.eval_receivers.setdefault(target, node)
        elif method == "train":
            if target is not None and not node.args:
                # where the function calls X.train(): before the model runs it sets the mode
                # on purpose (MC dropout), after it only restores it
                facts.train_at.setdefault(target, len(facts.calls))
            if target is not None and node.args:
                facts.train_receivers.add(target)
                if len(node.args) == 1 and isinstance(node.args[0].value, cst.Name) and (
                        node.args[0].value.value == "False"):
                    facts.eval_receivers.setdefault(target, node)  # train(False) is eval()
            elif node.args:
                facts.other_eval = True
        elif method == "backward":
            facts.backward = True
        elif method in ("step", "requires_grad_", "retain_grad", "zero_grad"):
            facts.needs_grad = True
        elif method == "forward" and target is not None:
            facts.calls.append(ModelCall(target, node, grad_free))
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        if qual in _GRAD_NEEDING or qual.startswith(_GRAD_NEEDING_PREFIXES):
            facts.needs_grad = True
        elif qual == "torch.set_grad_enabled":
            facts.grad_off_call = True
        return
    name = dotted_name(node.func)
    leaf = last_name_part(node.func)
    if leaf is not None and "eval" in leaf.lower() and leaf != "eval" and (
        "mode" in leaf.lower() or leaf.lower().startswith(("set_", "to_", "enable_", "switch_"))
    ):
        facts.other_eval = True  # set_eval_mode(model), model.apply(...) helpers and the like
    if name is not None and name not in ("self", "super"):
        facts.calls.append(ModelCall(name, node, grad_free))
    if name is not None and any(w in name for w in GRAD_MODE_WORDS):
        facts.grad_off_call = True


def model_names(ctx: FileContext, function: cst.FunctionDef, facts: FunctionFacts,
                *, include_evaluated: bool = True, include_globals: bool = False) -> set[str]:
    """Dotted names that are models in ``function``: model parameters, ``self.model``...
    (not ``self.x`` when ``x`` is a method of the class: ``self._test_model(...)``); with
    ``include_globals``, model-named globals of a script too (``net = Net()`` at module
    level, used by ``def test():``)."""
    names: set[str] = set(facts.eval_receivers) if include_evaluated else set()
    this = self_name(ctx, function)
    for param in params(function):
        name = param.name.value
        if name != this and is_model_name(name, ctx.options.model_names):
            names.add(name)
    if include_globals:
        names |= _global_models(ctx, function, facts)
    if this is not None:
        methods = _methods(ctx.enclosing_class(function))
        for call in facts.calls:
            head, _, attr = call.name.partition(".")
            if head == this and attr and "." not in attr and attr not in methods and (
                    is_model_name(attr, ctx.options.model_names)):
                names.add(call.name)
    return names


def _global_models(ctx: FileContext, function: cst.FunctionDef, facts: FunctionFacts
                   ) -> set[str]:
    """Names the function calls that are module-level variables of the file (assigned
    there, not imported) and that the function does not bind itself, when they are named
    like models or bound to a module instance (``rnn = RNN()``, ``lstm = nn.LSTM(...)``)."""
    found: set[str] = set()
    local = {p.name.value for p in parameters(function)}
    for call in facts.calls:
        head = call.name.partition(".")[0]
        if head in found or head in local or head not in _module_variables(ctx) or (
                binds_anywhere(function.body, head)):
            continue
        if is_model_name(head, ctx.options.model_names) or _module_instance(ctx, head):
            found.add(head)
    return found


# methods that return the module they are called on
_RETURNS_MODULE = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16",
                             "eval", "train", "requires_grad_"})


def _module_instance(ctx: FileContext, name: str) -> bool:
    """The module-level ``name`` is bound once to an instance of a module class (of the
    file, of torch.nn or of the project): ``rnn = RNN(n).to(device)``."""
    found = global_value(ctx, name)
    if found is None:
        return False
    value = found[1]
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            value.func.attr.value in _RETURNS_MODULE):
        value = value.func.value
    return is_layer_call(ctx, value)


def _module_variables(ctx: FileContext) -> frozenset[str]:
    """Names a module-level statement assigns (``model = Net().to(device)``), not imports,
    functions or classes."""
    def compute() -> frozenset[str]:
        names: set[str] = set()
        for stmt in module_statements(ctx.module.body):
            if not isinstance(stmt, (cst.Import, cst.ImportFrom, cst.FunctionDef,
                                     cst.ClassDef)):
                names.update(bound_names(stmt))
        return frozenset(names)

    return ctx.cached("eval_module_variables", compute)


def model_calls(ctx: FileContext, facts: FunctionFacts, models: set[str]) -> list[ModelCall]:
    """The calls of ``models``: ``model(x)``, ``model.forward(x)`` (noted as ``model``), and
    inference methods that run it (``decoder.beam_search(...)``) where this file defines
    that method without turning gradients off (``generate`` of Hugging Face, fairseq or
    minGPT models is decorated with ``no_grad`` where it is defined)."""
    found = []
    for call in facts.calls:
        head, _, method = call.name.rpartition(".")
        if call.name in models or head in models and method in _recording_methods(ctx):
            found.append(call)
    return found


def _recording_methods(ctx: FileContext) -> frozenset[str]:
    """Inference methods a class of this file defines, none of them decorated with a
    grad-mode decorator."""
    def compute() -> frozenset[str]:
        defined: dict[str, bool] = {}
        for node in ctx.definitions():
            if isinstance(node, cst.ClassDef):
                for stmt in node.body.body:
                    if isinstance(stmt, cst.FunctionDef) and stmt.name.value in INFERENCE_METHODS:
                        name = stmt.name.value
                        off = decorated_no_grad(ctx, stmt, GradOff.MENTIONED)
                        defined[name] = defined.get(name, True) and not off
        return frozenset(name for name, recording in defined.items() if recording)

    return ctx.cached("eval_recording_methods", compute)


def called_only_from_grad_off_code(ctx: FileContext, name: str) -> bool:
    """Every function of this file that calls ``name`` runs with gradients off: decorated
    with ``no_grad``/``inference_mode``, only called under them, or (up to a few levels)
    only called by such functions (a pipeline's ``encode_prompt`` helper, called from its
    ``@torch.no_grad()`` ``__call__``). False when nothing in the file calls ``name``."""
    facts = file_facts(ctx)
    decorated = ctx.cached("eval_grad_off_functions", lambda: frozenset(
        n.name.value for n in ctx.definitions()
        if isinstance(n, cst.FunctionDef) and decorated_no_grad(ctx, n, GradOff.MENTIONED)))

    def off(function: str, depth: int) -> bool:
        callers = [caller for caller, called in facts.calls_of.items() if function in called
                   and caller != function]
        if not callers or depth > 3:
            return False
        return all(caller in decorated or called_only_with_grad_off(ctx, caller)
                   or off(caller, depth + 1) for caller in callers)

    return off(name, 0)


def _methods(cls: cst.ClassDef | None) -> set[str]:
    if cls is None:
        return set()
    return {s.name.value for s in cls.body.body if isinstance(s, cst.FunctionDef)}


# ------------------------------------------------------------- file facts
@dataclass
class FileFacts:
    called_after_eval: set[str] = field(default_factory=set)
    train_setters: set[str] = field(default_factory=set)  # functions calling X.train(...)
    eval_setters: set[str] = field(default_factory=set)  # functions calling X.eval()
    called_from_forward: set[str] = field(default_factory=set)  # inside forward/__call__
    called_with_backward: set[str] = field(default_factory=set)  # result reaches .backward()
    # called from a function that backpropagates, or from a framework's per-batch step hook
    # (``validation_step``): the caller owns the mode
    called_from_training: set[str] = field(default_factory=set)
    # function name -> the names it calls (for following helpers of helpers)
    calls_of: dict[str, set[str]] = field(default_factory=dict)


# A helper called from these is part of a forward pass: its caller decides about autograd.
_FORWARD_METHODS = ("forward", "_forward", "__call__")

def file_facts(ctx: FileContext) -> FileFacts:
    """Names of functions called from no-grad code, and from code that calls ``.eval()``."""
    return ctx.cached("eval_file_facts", lambda: _file_facts(ctx))


def _file_facts(ctx: FileContext) -> FileFacts:
    facts = FileFacts()
    per_scope: list[tuple[set[str], bool]] = []
    _file_scan(ctx, ctx.module, False, facts, per_scope, [set(), False, False])
    for called, evals, *_ in per_scope:
        if evals:
            facts.called_after_eval |= called
    _backward_flows(ctx.module, facts)
    for stmt in module_statements(ctx.module.body):  # a training loop of a script
        if isinstance(stmt, (cst.For, cst.While)):
            own = list(iter_scope(stmt.body, enter_lambdas=True))
            if any(is_backward_call(ctx, n) for n in own):
                facts.called_from_training |= {
                    last_name_part(n.func) or "" for n in own if isinstance(n, cst.Call)}
    # helpers of those helpers (valid_step -> _log_metrics -> _inference_with_metrics)
    pending = list(facts.called_from_training)
    while pending:
        for callee in facts.calls_of.get(pending.pop(), ()):
            if callee not in facts.called_from_training:
                facts.called_from_training.add(callee)
                pending.append(callee)
    return facts


def _file_scan(ctx: FileContext, node: cst.CSTNode, grad_free: bool, facts: FileFacts,
               per_scope: list, scope: list) -> None:
    if isinstance(node, cst.Module):
        per_scope.append(scope)  # type: ignore[arg-type]
    if isinstance(node, cst.FunctionDef):
        decorated = decorated_no_grad(ctx, node, GradOff.MENTIONED)
        inner_scope: list = [set(), False, False]
        per_scope.append(inner_scope)
        for child in semantic_children(node):
            _file_scan(ctx, child, decorated, facts, per_scope, inner_scope)
        own = list(iter_scope(node.body, enter_lambdas=True))
        if any(method_call(n, "train") is not None for n in own):
            facts.train_setters.add(node.name.value)
        called = {last_name_part(n.func) or "" for n in own if isinstance(n, cst.Call)}
        facts.calls_of.setdefault(node.name.value, set()).update(called)
        if is_step_hook(node.name.value) or any(is_backward_call(ctx, n) for n in own):
            facts.called_from_training |= called
        if node.name.value in _FORWARD_METHODS:
            facts.called_from_forward |= {
                last_name_part(n.func) or "" for n in own if isinstance(n, cst.Call)}
        if any(_is_eval_call(n) for n in own):
            facts.eval_setters.add(node.name.value)
        return
    if isinstance(node, cst.With):
        inner = grad_free or with_turns_off(ctx, node, GradOff.MENTIONED)
        for child in semantic_children(node):
            _file_scan(ctx, child, inner if child is node.body else grad_free, facts,
                       per_scope, scope)
        return
    if isinstance(node, cst.Call):
        name = last_name_part(node.func)
        if name is not None:
            scope[0].add(name)
            if _is_eval_call(node):  # a method: ``train(model, loader)`` switches nothing
                scope[1] = True
    for child in semantic_children(node):
        _file_scan(ctx, child, grad_free, facts, per_scope, scope)


def _is_eval_call(node: cst.CSTNode) -> bool:
    attribute = method_call(node)
    if attribute is None:
        return False
    method = attribute.attr.value
    return method == "eval" and not node.args or method == "train" and bool(node.args)


def class_sets_eval(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """Another method of ``function``'s class calls ``.eval()`` (e.g. in ``__init__``), or
    stores on ``self`` what a function of this file that calls ``.eval()`` returns
    (``self.model = load_model(path)``)."""
    cls = ctx.enclosing_class(function)
    if cls is None:
        return False
    from torchlint.analysis.nodes import iter_nodes

    setters = file_facts(ctx).eval_setters
    for node in iter_nodes(cls.body):
        if setters and isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and (
                last_name_part(node.value.func) in setters):
            return True
        attribute = method_call(node)
        if attribute is None:
            continue
        method = attribute.attr.value
        if method == "eval" and not node.args or method == "train" and node.args:
            return True
    return False


def _backward_flows(module: cst.Module, facts: FileFacts) -> None:
    """Functions whose result goes into a ``.backward()``: ``loss = f(...); loss.backward()``.

    One step of data flow, per scope: names assigned from an expression that calls
    ``f`` and later ``.backward()``-ed, or ``f`` called inside the backward's receiver.
    """
    from torchlint.analysis.nodes import iter_nodes

    assigned: list[tuple[set[str], set[str]]] = []
    backwarded: set[str] = set()
    for node in iter_nodes(module):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value:
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            names = {dotted_name(t.target) or "" for t in targets}
            called = {last_name_part(c.func) or "" for c in iter_nodes(node.value)
                      if isinstance(c, cst.Call)}
            assigned.append((names, called))
        attribute = method_call(node, *BACKWARD_METHODS)
        if attribute is not None:
            for inner in iter_nodes(node):
                if isinstance(inner, cst.Call):
                    facts.called_with_backward.add(last_name_part(inner.func) or "")
                elif isinstance(inner, (cst.Name, cst.Attribute)):
                    backwarded.add(dotted_name(inner) or "")
    for names, called in assigned:
        if names & backwarded:
            facts.called_with_backward |= called
