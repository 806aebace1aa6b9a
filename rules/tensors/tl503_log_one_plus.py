from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import keeps_comments
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.tensors.numerics import is_literal, is_one, renamed_function, torch_input


class LogOnePlus(Rule):
    """## What it does
    Flags `torch.log(1 + x)` and `torch.log(x + 1)` (with the literal `1` or `1.0`, and
    `x` not a literal itself). Not `torch.log(x + eps)`, `torch.log(2 + x)`, `math.log`,
    `np.log`, nor the method form `(1 + x).log()`.

    Opt-in: a precision improvement, not a bug (on real code all 6 findings were
    logarithms of counts, `log(1 + n)` with `n` a whole number, where `log1p` gains nothing).

    ## Why is this bad?
    In floating point `1 + x` rounds away every digit of `x` smaller than the precision
    of 1: in float32, `1 + 1e-8` is exactly `1`, so the logarithm returns 0 and its
    gradient is wrong. `torch.log1p(x)` computes the same function accurately for small
    `x`, which matters in log-likelihoods, softplus-style terms and entropy bonuses.

    ## Example
    ```python
    import torch

    def log_likelihood(rate):
        return torch.log(1 + rate)
    ```

    Use instead:
    ```python
    import torch

    def log_likelihood(rate):
        return torch.log1p(rate)
    ```

    ## Fix safety
    Unsafe: `torch.log1p(x)` replaces the call. It is more precise, so results change in
    the last digits (and more for small `x`).
    """

    code = "TL503"
    name = "log-one-plus"
    default = False
    triggers = ("log",)
    patterns = (torch_function("log"), r"\b1\b")
    message = "torch.log(1 + x) loses precision for small x; use torch.log1p(x)"
    fix_safety = "unsafe"
    fix_title = "Use torch.log1p"

    def visit_Call(self, node: cst.Call) -> None:
        operand = self._operand(node)
        if operand is not None:
            self.report(node, fix=self._fix(node, operand))

    def _operand(self, node: cst.Call) -> cst.BaseExpression | None:
        """``x`` in ``torch.log(1 + x)`` / ``torch.log(x + 1)``."""
        arg = torch_input(self.context, node, "torch.log")
        if arg is None:
            return None
        total = arg.value
        if type(total) is not cst.BinaryOperation or type(total.operator) is not cst.Add:
            return None
        for one, other in ((total.left, total.right), (total.right, total.left)):
            if is_one(one) and not is_literal(other):
                return other
        return None

    def _fix(self, node: cst.Call, operand: cst.BaseExpression) -> Fix | None:
        arg = node.args[0]
        text = self.context.code(operand)
        if not keeps_comments(arg.value, text):
            return None
        renamed = renamed_function(self.context, node.func, "torch.log", "torch.log1p",
                                   lambda call: self._operand(call) is not None)
        if renamed is None:
            return None
        function, need, cleanup = renamed
        return Fix.unsafe(NodeEdit(node.func, function), NodeEdit(arg.value, text), *cleanup,
                          imports=(need,) if need else ())
