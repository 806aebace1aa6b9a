from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.execution import is_training_call
from torchlint.analysis.grad_mode import (
    GradOff,
    called_with_grad_off,
    decorated_no_grad,
    with_turns_off,
)
from torchlint.analysis.nodes import (
    dotted_name,
    is_literal_false,
    iter_nodes,
    last_name_part,
    method_call,
    semantic_children,
)
from torchlint.analysis.torch_facts import is_model_name, may_be_torch
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, imports
from torchlint.fix.edits import reference
from torchlint.rule import Rule
from torchlint.rules.evaluation.functions import (
    INFERENCE_METHODS,
    called_only_from_grad_off_code,
    file_facts,
    is_eval_name,
    is_inference_name,
    is_pytest_test,
    is_step_hook,
    model_calls,
    model_names,
    scan_function,
)
from torchlint.rules.evaluation.screens import EVALUATION_KEYS, EVALUATION_SET
from torchlint.rules.patterns import MODEL_NAME


class InferenceWithoutNoGrad(Rule):
    """## What it does
    Flags an evaluation function (named like `evaluate`/`validate`/`predict`, or one that
    calls `model.eval()`) or an inference function (`translate`, `stylize`, `caption_*`,
    `beam_search*`, `predict*`, `generate*`, `sample*`, `infer*`) that runs a model with
    autograd still recording: a model it receives, its own `self.model`, or a script's
    module-global model (named like a model, or bound to a module instance:
    `rnn = RNN()`); called directly, through `.forward`, or through an inference
    method (`model.sample(...)`, `decoder.beam_search(...)`) that a class of the file
    defines without turning gradients off (the `generate` of Hugging Face, fairseq or
    minGPT models is decorated with `no_grad` where it is defined).
    Evaluation code at module level (a script or notebook cell) is flagged too: a loop that
    calls a model outside `no_grad`, never backpropagates nor steps an optimizer, and runs
    after `model.eval()` or over a test or validation set (`for x, y in test_loader:`).

    Not flagged: functions decorated with `no_grad`/`inference_mode` or only called under
    them (also through `ExitStack.enter_context(torch.no_grad())`); functions that
    backpropagate or differentiate (`torch.autograd.grad`, `torch.func`; the legacy
    `Variable(...)` wrapper does not count); tests (`test*` functions, methods of `Test*`
    and `unittest.TestCase` classes, `_test_*` helpers, in test files); training entry
    points (`forward`, `training_step`), including a training step that sets an EMA or
    teacher model to eval inside its own `no_grad` block; a module's own inference
    methods (the caller decides about autograd); and calls of the class's own methods
    (`self._test_model(...)`) taken for models by their names. An inference function that
    does not call `.eval()` is not flagged where a training step calls it
    (`fake = generate_fake(generator, z)`): its output may be trained on.
    A helper that the file only reaches from code running with gradients off (a pipeline's
    `encode_prompt` helper, called from its `@torch.no_grad()` `__call__`) is not flagged.

    ## Why is this bad?
    `model.eval()` only changes how layers such as dropout and batch norm behave; it does
    not stop autograd. Without `torch.no_grad()` (or `torch.inference_mode()`) every
    forward pass during evaluation keeps its activations alive for a backward pass that
    never comes: evaluation uses far more memory than needed, runs slower, and large
    validation batches can run out of GPU memory.

    ## Example
    ```python
    import torch


    def evaluate(model, loader):
        model.eval()
        correct = 0
        for images, labels in loader:
            logits = model(images)
            correct += (logits.argmax(1) == labels).sum().item()
        return correct
    ```

    Use instead:
    ```python
    import torch


    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        correct = 0
        for images, labels in loader:
            logits = model(images)
            correct += (logits.argmax(1) == labels).sum().item()
        return correct
    ```

    ## Fix safety
    Unsafe: the fix adds `@torch.no_grad()` above the function. Results that the caller
    meant to differentiate (a rare evaluation that feeds a loss) would lose their graph.
    Functions that call `.backward()` or `torch.autograd.grad` are never reported.
    """

    code = "TL401"
    name = "inference-without-no-grad"
    triggers = ("val", "eval", "test", "infer", "predict", "train", "translate", "caption",
                "generate", "sample", "stylize", "beam_search")
    # a torch import; a def named like evaluation (EVAL_NAME) or inference (INFERENCE_NAME),
    # X.eval()/X.train(False), or a module-level loop over a test/validation set; a model
    # call: an eval receiver, a call/.forward/inference method of a model-named name, or a
    # module-level name bound to a class instance (``rnn = RNN()``)
    patterns = (r"\btorch\b",
                r"\bdef[\s\\]+(?:_*(?:val|valid|validate|validation|eval|evaluate|test|infer"
                r"|inference|predict)(?:_|\b)|\w*_(?:eval|test|validate|predict|inference)\b"
                r"|_*(?:translate|stylize|caption|beam_search|predict|generate|sample|infer))"
                r"|\.[\s\\]*eval\b|\.[\s\\]*train[\s\\)]*\([^)]*\bFalse\b"
                r"|^for\b[^\n]*(?:test|val|eval)",
                r"\.[\s\\]*eval\b|\.[\s\\]*train[\s\\)]*\([^)]*\bFalse\b|"
                r"(?:" + MODEL_NAME + r")[\s\\)]*\(|(?:" + MODEL_NAME + r")[\s\\)]*\.[\s\\]*"
                r"(?:forward|" + "|".join(sorted(INFERENCE_METHODS)) + r")\b"
                r"|^\w+[ \t]*=[ \t]*(?:\w+\.)*[A-Z]\w*\(")
    # a function or a script's loop of the shapes the rule reports (see screens.py)
    requires = imports("torch") & check("torchlint.rules.evaluation.screens:may_flag_tl401")
    message = ("evaluation function '{function}' calls '{model}' with autograd on; "
               "decorate it with @torch.no_grad() or wrap the calls in a no_grad block")
    fix_safety = "unsafe"
    fix_title = "Decorate with @torch.no_grad()"

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._switches_mode: set[int] = set()  # functions calling X.eval(...) / X.train(...)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("eval", "train"):
            function = self.context.current_function
            if function is not None:
                self._switches_mode.add(id(function))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.context
        name = node.name.value
        named = is_eval_name(name) or is_inference_name(name)
        if not named and id(node) not in self._switches_mode:
            return  # neither named nor acting like evaluation code: skip the scan
        if decorated_no_grad(ctx, node) or is_pytest_test(ctx, node) or is_step_hook(name):
            return
        if decorated_no_grad(ctx, node, GradOff.MENTIONED) or name in _TRAINING_ENTRY_POINTS:
            return
        facts = scan_function(ctx, node)
        if not (named or set(facts.eval_receivers) - facts.eval_in_grad_free):
            return  # only an EMA/teacher model set to eval inside a no_grad block
        cls = ctx.enclosing_class(node)
        if cls is not None and ctx.is_module_class(cls) and "self" not in facts.eval_receivers:
            return  # a module's own inference method: its callers decide about autograd
        if not named and (facts.train_at or facts.train_receivers - set(
                facts.eval_receivers)):
            return  # switches modes back and forth: not an evaluation function
        if facts.backward or facts.needs_grad or facts.grad_off_call:
            return
        if not ctx.imports_from("torch"):
            return
        models = model_names(ctx, node, facts, include_globals=True)
        exposed = [c for c in model_calls(ctx, facts, models) if not c.grad_free]
        if not exposed:
            return
        callers = file_facts(ctx)
        if called_with_grad_off(ctx, name) or name in callers.called_with_backward or (
                name in callers.called_from_forward) or called_only_from_grad_off_code(ctx, name):
            return  # the caller decides about autograd
        if not is_eval_name(name) and not facts.eval_receivers and (
                name in callers.called_from_training):
            return  # ``generate_fake(z)`` in a training step: its output may be trained on
        fix = None
        spelled = reference(ctx, "torch.no_grad")
        # a coroutine's body runs after the decorator has returned: no_grad would not cover it
        if spelled is not None and node.asynchronous is None:
            spelling, need = spelled
            edit = self._edit(node, f"@{spelling}()")
            if edit is not None:
                fix = Fix.unsafe(edit, imports=(need,) if need else ())
        self.report(node.name, fix=fix, function=name, model=exposed[0].name)

    def leave_Module(self, node: cst.Module) -> None:
        """Evaluation code at module level (scripts, notebook cells): ``model.eval()``, then
        a loop calling that model with gradients on and no backward in it."""
        ctx = self.context
        if not ctx.imports_from("torch"):
            return
        evaluated: set[str] = set()
        for stmt in _module_sequence(ctx, node.body):
            if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                attribute = method_call(stmt.value, "eval", "train")
                target = dotted_name(attribute.value) if attribute is not None else None
                if target is not None and attribute is not None:
                    call = stmt.value
                    off = attribute.attr.value == "eval" and not call.args or (
                        attribute.attr.value == "train" and len(call.args) == 1
                        and is_literal_false(call.args[0].value))
                    (evaluated.add if off else evaluated.discard)(target)
                continue
            if not isinstance(stmt, (cst.For, cst.While)) or any(
                    is_training_call(ctx, n) for n in iter_nodes(stmt.body)):
                continue
            exposed = _exposed_call(ctx, stmt, evaluated.__contains__) if evaluated else None
            if exposed is None and isinstance(stmt, cst.For) and _evaluation_set(stmt.iter):
                # ``for images, labels in test_loader:`` running a script's model
                exposed = _exposed_call(ctx, stmt, lambda name: is_model_name(
                    name, ctx.options.model_names) and may_be_torch(ctx, cst.Name(name), stmt))
            if exposed is not None:
                self.report(exposed, message=(
                    f"'{_callee_text(exposed)}' runs with autograd on in an evaluation "
                    "loop; wrap the loop in `with torch.no_grad():`"))

    def _edit(self, node: cst.FunctionDef, decorator: str) -> NodeEdit | None:
        """Above all decorators, but below ``@staticmethod``/``@classmethod``: no_grad must
        wrap the plain function, not the descriptor."""
        binders = [d for d in node.decorators
                   if last_name_part(d.decorator) in _DESCRIPTORS]
        if not binders:
            return NodeEdit(node, decorator, kind="insert_line_before")
        module = self.context.module
        indent = "".join(module.default_indent if anc.indent is None else anc.indent
                         for anc in self.context.ancestors[:-1]
                         if isinstance(anc, cst.IndentedBlock))
        last = binders[-1]
        if last.trailing_whitespace.comment is not None:
            return None  # the new line would take the comment away from its decorator
        return NodeEdit(last.decorator, f"{module.default_newline}{indent}{decorator}",
                        kind="insert_after")


_DESCRIPTORS = ("staticmethod", "classmethod")
# methods that run a training step: never evaluation code, whatever they switch to eval
_TRAINING_ENTRY_POINTS = frozenset({"forward", "__call__", "training_step", "train_step",
                                    "compute_loss", "loss"})


def _module_sequence(ctx: FileContext, body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Module-level statements in the order they run: small statements one by one, and the
    bodies of ``if`` blocks (``if __name__ == "__main__":``) and of ``with`` blocks that
    leave gradients on; loops as a whole; functions and classes not at all."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, cst.If):
            yield from _module_sequence(ctx, stmt.body.body)
        elif isinstance(stmt, cst.With) and not with_turns_off(ctx, stmt, GradOff.MENTIONED):
            yield from _module_sequence(ctx, stmt.body.body)
        elif isinstance(stmt, (cst.For, cst.While)):
            yield stmt


def _evaluation_set(iterable: cst.BaseExpression) -> bool:
    """``test_loader``, ``enumerate(valloader)``, ``tqdm(dataloaders["val"])``,
    ``test_data``: an iteration over a test or validation set."""
    for node in iter_nodes(iterable):
        if isinstance(node, cst.Name):
            words = node.value.lower()
        elif isinstance(node, cst.Attribute):
            words = node.attr.value.lower()
        elif isinstance(node, cst.SimpleString):
            words = node.value.strip("'\"").lower()
            if words in EVALUATION_KEYS:
                return True
            continue
        else:
            continue
        if EVALUATION_SET.search(words):
            return True
    return False


def _callee_text(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        func = func.value
    return dotted_name(func) or "the model"


def _exposed_call(ctx: FileContext, loop: cst.For | cst.While,
                  is_model: Callable[[str], bool]) -> cst.Call | None:
    """The first call of a model (or its ``.forward``, or an inference method such as
    ``.generate``) in the loop, outside any block that turns gradients off."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.With) and with_turns_off(ctx, node, GradOff.MENTIONED):
            continue
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in (
                    "forward", *INFERENCE_METHODS):
                func = func.value
            name = dotted_name(func)
            if name is not None and is_model(name):
                return node
        stack.extend(reversed(list(semantic_children(node))))
    return None
