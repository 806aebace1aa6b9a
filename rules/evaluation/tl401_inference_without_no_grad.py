from __future__ import annotations

import libcst as cst
from torchlint.rules.evaluation.functions import (
    file_facts,
    is_eval_name,
    is_pytest_test,
    is_step_hook,
    model_names,
    scan_function,
)
from torchlint.rules.patterns import MODEL_NAME

from torchlint.analysis.context import FileContext
from torchlint.analysis.grad_mode import GradOff, called_with_grad_off, decorated_no_grad
from torchlint.analysis.nodes import last_name_part
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import reference
from torchlint.rule import Rule


class InferenceWithoutNoGrad(Rule):
    """## What it does
    Flags an evaluation function (named like `evaluate`/`validate`/`predict`, or one that
    calls `model.eval()`) that runs a model with autograd still recording.

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
    triggers = ("val", "eval", "test", "infer", "predict", "train")
    # a torch import; a def named like evaluation (EVAL_NAME) or X.eval()/X.train(False);
    # a model call: an eval receiver, or a call/.forward of a model-named param or self attribute
    patterns = (r"\btorch\b",
                r"\bdef[\s\\]+(?:_*(?:val|valid|validate|validation|eval|evaluate|test|infer"
                r"|inference|predict)(?:_|\b)|\w*_(?:eval|test|validate|predict|inference)\b)"
                r"|\.[\s\\]*eval\b|\.[\s\\]*train[\s\\)]*\([^)]*\bFalse\b",
                r"\.[\s\\]*eval\b|\.[\s\\]*train[\s\\)]*\([^)]*\bFalse\b|"
                r"(?:" + MODEL_NAME + r")[\s\\)]*\(|(?:" + MODEL_NAME + r")[\s\\)]*\.[\s\\]*forward\b")
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
        if not is_eval_name(name) and id(node) not in self._switches_mode:
            return  # neither named nor acting like evaluation code: skip the scan
        if decorated_no_grad(ctx, node) or is_pytest_test(ctx, node) or is_step_hook(name):
            return
        if decorated_no_grad(ctx, node, GradOff.MENTIONED):
            return
        facts = scan_function(ctx, node)
        if not (is_eval_name(name) or facts.eval_receivers):
            return
        if not is_eval_name(name) and (facts.train_at or facts.train_receivers - set(
                facts.eval_receivers)):
            return  # switches modes back and forth: not an evaluation function
        if facts.backward or facts.needs_grad or facts.grad_off_call:
            return
        if not ctx.imports_from("torch"):
            return
        models = model_names(ctx, node, facts)
        exposed = [c for c in facts.calls if c.name in models and not c.grad_free]
        if not exposed:
            return
        callers = file_facts(ctx)
        if called_with_grad_off(ctx, name) or name in callers.called_with_backward or (
                name in callers.called_from_forward):
            return  # the caller decides about autograd
        fix = None
        spelled = reference(ctx, "torch.no_grad")
        # a coroutine's body runs after the decorator has returned: no_grad would not cover it
        if spelled is not None and node.asynchronous is None:
            spelling, need = spelled
            edit = self._edit(node, f"@{spelling}()")
            if edit is not None:
                fix = Fix.unsafe(edit, imports=(need,) if need else ())
        self.report(node.name, fix=fix, function=name, model=exposed[0].name)

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
