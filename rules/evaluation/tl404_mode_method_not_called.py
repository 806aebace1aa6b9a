from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import attribute, check
from torchlint.rule import Rule

_METHODS = frozenset({"eval", "train", "zero_grad"})


class ModeMethodNotCalled(Rule):
    """## What it does
    Flags `model.eval`, `model.train` or `optimizer.zero_grad` written as a statement
    without the parentheses that call it.

    ## Why is this bad?
    Without `()` the statement only looks the method up and throws it away: the model
    stays in its current mode and the gradients keep accumulating. Python raises no
    error, so evaluation silently runs with dropout on, or every step adds its
    gradients to the previous ones.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    model.eval
    ```

    Use instead:
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    model.eval()
    ```

    ## Fix safety
    Safe: the statement had no effect, and adding `()` performs the call it was meant
    to make.
    """

    code = "TL404"
    name = "mode-method-not-called"
    triggers = ("eval", "train", "zero_grad")
    # an expression statement ending in .eval/.train/.zero_grad: after the name only the
    # end of the line, ";", a comment, ")" (parenthesised) or a line continuation can follow
    patterns = (r"\.[\s\\]*(?:eval|train|zero_grad)(?=[ \t\f]*(?:$|[\r;#)\\]))",)
    # an expression statement that is only X.eval / X.train / X.zero_grad
    requires = attribute(*_METHODS) & check("torchlint.rules.evaluation.screens:may_flag_tl404")
    message = "'{expr}' is not called; add () to call it"
    fix_safety = "safe"
    fix_title = "Add () to call it"

    def visit_Expr(self, node: cst.Expr) -> None:
        value = node.value
        if not isinstance(value, cst.Attribute) or value.attr.value not in _METHODS:
            return
        new = value.with_changes(lpar=[], rpar=[])
        text = cst.Module(body=()).code_for_node(new)
        if "\n" in text or "#" in text:
            self.report(value, expr=value.attr.value)
            return
        fix = Fix.safe(NodeEdit(value, f"{text}()"))
        self.report(value, fix=fix, expr=text)
