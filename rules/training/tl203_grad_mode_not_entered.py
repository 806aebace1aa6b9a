from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import code
from torchlint.engine.triage import calls, check
from torchlint.rule import Rule

_GRAD_MODES = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
    "torch.autograd.no_grad", "torch.autograd.enable_grad", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.grad_mode.inference_mode",
})


class GradModeNotEntered(Rule):
    """## What it does
    Flags `torch.no_grad()`, `torch.enable_grad()` or `torch.inference_mode()` written as
    a statement of its own instead of in a `with` block or as a decorator.

    ## Why is this bad?
    These are context managers: calling one only builds the object, which is dropped at
    once, and gradient recording stays exactly as it was. The code that follows still
    builds a graph (or, for `enable_grad`, still does not), which is easy to miss since
    nothing fails. `torch.set_grad_enabled(False)` is the one that works as a call.

    ## Example
    ```python
    import torch

    def evaluate(model, batch):
        model.eval()
        torch.no_grad()
        return model(batch)
    ```

    Use instead:
    ```python
    import torch

    def evaluate(model, batch):
        model.eval()
        with torch.no_grad():
            return model(batch)
    ```

    ## Fix safety
    No fix: which statements belong in the block is the author's decision.
    """

    code = "TL203"
    name = "grad-mode-not-entered"
    triggers = ("no_grad", "enable_grad", "inference_mode")
    # a line naming it that is neither a decorator nor a `with ...:` header (one colon, at its end)
    patterns = (r"(?:^|(?<=\r))(?![ \t]*@[^\n\r;:]*(?:\r|$))"
                r"(?![ \t]*(?:async[ \t]+)?with\b[^\n\r;#:]*:[ \t]*(?:#[^\n\r]*)?(?:\r|$))"
                r"[^\n\r]*(?:no_grad|enable_grad|inference_mode)",)
    requires = calls(*_GRAD_MODES) & check("torchlint.rules.training.step_screens:may_flag_tl203")
    message = ("{call} on its own line does nothing; use it as `with {call}:` or as a "
               "decorator")

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in _GRAD_MODES:
            return
        if not self.context.is_expression_statement(node):
            return
        self.report(node, call=code(node))
