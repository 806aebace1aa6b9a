from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import get_arg
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import import_cleanup, keeps_comments
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.tensors.numerics import renamed_function, torch_input


@dataclass(frozen=True)
class _LogSumExp:
    """The parts of ``torch.log(torch.sum(torch.exp(x), dim, keepdim))``."""

    total: cst.Call  # the sum call (torch.sum(...) or <exp>.sum(...))
    exp: cst.Call
    tensor: cst.BaseExpression
    dim: cst.BaseExpression
    keepdim: cst.BaseExpression | None
    exact: bool  # the sum has no argument beyond input, dim and keepdim


class LogOfSumExp(Rule):
    """## What it does
    Flags `torch.log(torch.sum(torch.exp(x), dim))` and `torch.log(torch.exp(x).sum(dim))`
    where the sum has a `dim` (positional or keyword). Not a sum over all elements (no
    `dim`), a `mean` instead of the sum, or NumPy/`math` functions.

    Opt-in: a robustness improvement; the code is correct for moderate inputs.

    ## Why is this bad?
    `exp` overflows to `inf` for float32 inputs above about 88 (about 11 in float16), and
    underflows to 0 for very negative ones, so the log of the sum becomes `inf` or `-inf`
    and the gradients `nan`. `torch.logsumexp` subtracts the maximum before
    exponentiating and gives the exact result over the whole range.

    ## Example
    ```python
    import torch

    def log_partition(scores):
        return torch.log(torch.sum(torch.exp(scores), dim=-1))
    ```

    Use instead:
    ```python
    import torch

    def log_partition(scores):
        return torch.logsumexp(scores, dim=-1)
    ```

    ## Fix safety
    Unsafe: `torch.logsumexp(x, dim=d)` (with `keepdim=` when the sum had it) replaces
    the expression. Results agree up to rounding where the original did not overflow; no
    fix when the sum has other arguments (`dtype=`).
    """

    code = "TL505"
    name = "log-of-sum-exp"
    default = False
    triggers = ("log",)
    patterns = (torch_function("log"), torch_function("exp"), r"\bsum\b")
    message = "log of a sum of exp overflows for large inputs; use torch.logsumexp"
    fix_safety = "unsafe"
    fix_title = "Use torch.logsumexp"

    def visit_Call(self, node: cst.Call) -> None:
        parts = self._parts(node)
        if parts is not None:
            self.report(node, fix=self._fix(node, parts) if parts.exact else None)

    def _parts(self, node: cst.CSTNode) -> _LogSumExp | None:
        arg = torch_input(self.context, node, "torch.log")
        total = arg.value if arg is not None else None
        if type(total) is not cst.Call or any(a.star for a in total.args):
            return None
        func = total.func
        if self.context.qualified_name(func) == "torch.sum":
            summed, offset = get_arg(total, "input", 0), 1
            exp = summed.value if summed is not None else None
        elif type(func) is cst.Attribute and func.attr.value == "sum":
            summed, offset, exp = None, 0, func.value
        else:
            return None
        exp_input = torch_input(self.context, exp, "torch.exp") if exp is not None else None
        dim = get_arg(total, "dim", offset)
        if exp_input is None or dim is None or (
                type(dim.value) is cst.Name and dim.value.value == "None"):
            return None
        keepdim = get_arg(total, "keepdim", offset + 1)
        known = {id(a) for a in (summed, dim, keepdim) if a is not None}
        assert isinstance(exp, cst.Call)
        return _LogSumExp(total, exp, exp_input.value, dim.value,
                          keepdim.value if keepdim is not None else None,
                          all(id(a) in known for a in total.args))

    def _fix(self, node: cst.Call, parts: _LogSumExp) -> Fix | None:
        renamed = renamed_function(self.context, node.func, "torch.log", "torch.logsumexp",
                                   lambda call: self._rewritten(call) is not None)
        if renamed is None:
            return None
        function, need, cleanup = renamed
        code = self.context.code
        arguments = [code(parts.tensor), f"dim={code(parts.dim)}"]
        if parts.keepdim is not None:
            arguments.append(f"keepdim={code(parts.keepdim)}")
        text = f"{function}({', '.join(arguments)})"
        if not keeps_comments(node, text):
            return None
        # `from torch import exp, sum` used only inside the rewritten calls go as well
        for inner in (parts.exp.func, parts.total.func):
            if type(inner) is cst.Name:
                more = import_cleanup(index_for(self.context), inner.value,
                                      self._inside_rewritten, inner)
                edited = {id(edit.node) for edit in cleanup}
                if not any(id(edit.node) in edited for edit in more):  # one import line
                    cleanup += more
        return Fix.unsafe(NodeEdit(node, text), *cleanup, imports=(need,) if need else ())

    def _rewritten(self, node: cst.CSTNode) -> _LogSumExp | None:
        """The parts of ``node`` when this rule rewrites it, wherever it stands."""
        parts = self._parts(node)
        return parts if parts is not None and parts.exact else None

    def _inside_rewritten(self, call: cst.Call) -> bool:
        """``call`` is the exp or the sum of a log-sum-exp this rule rewrites."""
        parents = index_for(self.context).parents
        outer = parents.get(call)
        for _ in range(4):
            if outer is None:
                return False
            parts = self._rewritten(outer)
            if parts is not None:
                return call is parts.exp or call is parts.total
            outer = parents.get(outer)
        return False
