from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api, check
from torchlint.rule import Rule
from torchlint.rules.patterns import GAP
from torchlint.rules.training.steps import GRAD_MODE_CLASSES, expression_text


class GradModeNotCalled(Rule):
    """## What it does
    Flags `torch.no_grad`, `torch.enable_grad` or `torch.inference_mode` used as a `with`
    item without being called: `with torch.no_grad:`. The bare decorator `@torch.no_grad`
    is fine (torch 2 accepts it) and is not flagged.

    ## Why is this bad?
    These names are classes; only an instance is a context manager. Entering the class
    itself raises (`TypeError: 'type' object does not support the context manager
    protocol`, or `AttributeError: __enter__` on older Pythons). Such blocks usually sit on
    an evaluation or logging path that runs rarely, so the crash shows up late, for
    instance at the end of the first long epoch.

    ## Example
    ```python
    import torch

    def evaluate(model, batch):
        with torch.no_grad:
            return model(batch)
    ```

    Use instead:
    ```python
    import torch

    def evaluate(model, batch):
        with torch.no_grad():
            return model(batch)
    ```

    ## Fix safety
    Safe: `()` is added, which builds the context manager the block meant to enter; the
    code before the fix could only raise.
    """

    code = "TL213"
    name = "grad-mode-not-called"
    triggers = ("no_grad", "enable_grad", "inference_mode")
    # a `with` statement, and one of the names not followed by an opening parenthesis
    patterns = (r"\bwith\b", rf"(?:no_grad|enable_grad|inference_mode)(?!\w|{GAP}*\()")
    requires = api(*GRAD_MODE_CLASSES) & check(
        "torchlint.rules.training.step_screens:may_flag_tl213")
    message = "'{expr}' is a class, not a context manager; use `with {expr}():`"
    fix_safety = "safe"
    fix_title = "Add () to call it"

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            self._check(item.item)

    def _check(self, expr: cst.BaseExpression) -> None:
        if isinstance(expr, cst.IfExp):  # `with torch.no_grad if frozen else nullcontext():`
            self._check(expr.body)
            self._check(expr.orelse)
            return
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return
        if self.context.qualified_name(expr) not in GRAD_MODE_CLASSES:
            return
        text = expression_text(expr)
        self.report(expr, expr=text, fix=Fix.safe(NodeEdit(expr, self._called(expr))))

    def _called(self, expr: cst.Name | cst.Attribute) -> str:
        bare = expr.with_changes(lpar=[], rpar=[])
        return self.context.code(cst.Call(func=bare))
