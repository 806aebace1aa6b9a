from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import keeps_comments
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.tensors.numerics import is_one, renamed_function, torch_input


class ExpMinusOne(Rule):
    """## What it does
    Flags `torch.exp(x) - 1` (with the literal `1` or `1.0`). Not `torch.exp(x) - 2`,
    `1 - torch.exp(x)`, or `np.exp(x) - 1`.

    Opt-in: a precision improvement, not a bug.

    ## Why is this bad?
    For small `x`, `exp(x)` is close to 1 and subtracting 1 cancels most of its
    significant digits: in float32, `torch.exp(x) - 1` is 0 for any `|x|` below about
    6e-8 and only a few digits are right well above that. `torch.expm1(x)` computes the
    same function accurately, which matters in diffusion samplers, log-normal and Poisson
    parametrisations and anything that divides the result by `x`.

    ## Example
    ```python
    import torch

    def phi(h):
        return (torch.exp(h) - 1) / h
    ```

    Use instead:
    ```python
    import torch

    def phi(h):
        return torch.expm1(h) / h
    ```

    ## Fix safety
    Unsafe: `torch.expm1(x)` replaces the subtraction. It is more precise, so results
    change in the last digits (and more for small `x`).
    """

    code = "TL504"
    name = "exp-minus-one"
    default = False
    triggers = ("exp",)
    patterns = (torch_function("exp"), r"-(?:[\s\\(]|#[^\r\n]*[\r\n])*1\b")
    message = "torch.exp(x) - 1 loses precision for small x; use torch.expm1(x)"
    fix_safety = "unsafe"
    fix_title = "Use torch.expm1"

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        exp = self._exp_call(node)
        if exp is not None:
            self.report(node, fix=self._fix(node, exp))

    def _exp_call(self, node: cst.BinaryOperation) -> cst.Call | None:
        """The ``torch.exp(x)`` call of ``torch.exp(x) - 1``."""
        if type(node.operator) is not cst.Subtract or not is_one(node.right):
            return None
        left = node.left
        if type(left) is cst.Call and torch_input(self.context, left, "torch.exp") is not None:
            return left
        return None

    def _fix(self, node: cst.BinaryOperation, exp: cst.Call) -> Fix | None:
        renamed = renamed_function(self.context, exp.func, "torch.exp", "torch.expm1",
                                   self._rewritten)
        if renamed is None:
            return None
        function, need, cleanup = renamed
        text = self.context.code(exp.with_changes(func=cst.parse_expression(function)))
        if not keeps_comments(node, text):
            return None
        return Fix.unsafe(NodeEdit(node, text), *cleanup, imports=(need,) if need else ())

    def _rewritten(self, call: cst.Call) -> bool:
        """``call`` is the ``torch.exp`` call of a subtraction this rule rewrites."""
        parent = index_for(self.context).parents.get(call)
        return isinstance(parent, cst.BinaryOperation) and parent.left is call and (
            self._exp_call(parent) is not None)
