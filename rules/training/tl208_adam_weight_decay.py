from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import get_arg, last_name_part
from torchlint.diagnostic import Fix, ImportNeed, NodeEdit
from torchlint.fix.edits import import_cleanup, reference
from torchlint.rule import Rule

_ADAM = frozenset({"torch.optim.Adam", "torch.optim.adam.Adam"})
_PARTIAL = frozenset({"functools.partial"})


def _is_zero(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.evaluated_value) == 0.0
        except (TypeError, ValueError):
            return False
    if isinstance(node, cst.Name):
        return node.value in ("None", "False")
    return False


class AdamWeightDecay(Rule):
    """## What it does
    Flags `torch.optim.Adam` created with a non-zero `weight_decay`.

    Preview: on real code this was right in none of 25 sampled findings. Most Adam + L2
    uses reproduce papers that chose the coupled penalty on purpose (graph networks,
    small models), so the switch to AdamW is a recommendation there, not a fix.

    ## Why is this bad?
    In `Adam`, `weight_decay` is an L2 penalty: the decay term is added to the gradient
    before the adaptive moments are computed, so it is divided by the same running RMS of
    the gradient as everything else. Parameters with large gradients are hardly decayed and
    the regularisation no longer behaves like weight decay (Loshchilov and Hutter,
    "Decoupled Weight Decay Regularization"). `AdamW` applies the decay directly to the
    weights, separately from the adaptive step, which is almost always what was meant.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-2)
    ```

    Use instead:
    ```python
    import torch

    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    ```

    ## Fix safety
    Unsafe: `Adam` becomes `AdamW` with the same arguments. This changes the optimisation
    (decoupled decay of the same strength is much stronger than the L2 term was), so the
    learning rate and decay may need re-tuning and results will not match earlier runs.
    """

    code = "TL208"
    preview = True
    name = "adam-weight-decay"
    triggers = ("Adam",)
    # the name Adam, and a weight_decay keyword or Adam called, passed to partial, or aliased
    patterns = (r"\bAdam\b",
                r"weight_decay|\bAdam\b(?:[\s\\]|#[^\n\r]*[\r\n])*(?:[(,]|as\b)")
    message = "Adam with weight_decay adds an L2 penalty, not decoupled weight decay; use AdamW"
    fix_safety = "unsafe"
    fix_title = "Use torch.optim.AdamW"


    def visit_Call(self, node: cst.Call) -> None:
        adam = self._flagged(node)
        if adam is not None:
            self.report(node, fix=self._fix(adam))

    def _flagged(self, node: cst.Call) -> cst.BaseExpression | None:
        """The Adam reference of a call this rule reports, else None."""
        adam, call = node.func, node
        if self.context.call_name(node) in _PARTIAL:
            # functools.partial(torch.optim.Adam, weight_decay=...): the same optimizer later
            if not node.args or node.args[0].keyword is not None or node.args[0].star:
                return None
            adam = node.args[0].value
            call = node.with_changes(func=adam, args=node.args[1:])
        if self.context.qualified_name(adam) not in _ADAM:
            return None
        decay = get_arg(call, "weight_decay", 4)
        if decay is None or self._is_zero_value(decay.value, node):
            return None
        named = last_name_part(decay.value)
        if named is not None and "l2" in named.lower():
            return None  # weight_decay=args.l2: an L2 penalty is what the author asked for
        decoupled = get_arg(call, "decoupled_weight_decay")
        if decoupled is not None and not _is_zero(decoupled.value):
            return None  # Adam(decoupled_weight_decay=True) is AdamW already
        if any(arg.star == "**" for arg in call.args):
            return None
        return adam

    def _is_zero_value(self, value: cst.BaseExpression, node: cst.Call) -> bool:
        """A zero literal, or a local name bound to one (``wd = 0.0``, ``def f(wd=0)``)."""
        if _is_zero(value):
            return True
        if isinstance(value, cst.Name) and not value.lpar:
            bound = self.context.binding(value.value, node)
            if bound is not None and bound.kind in ("assign", "param") and bound.value is not None:
                return _is_zero(bound.value)
        return False

    def _fix(self, func: cst.BaseExpression) -> Fix | None:
        if isinstance(func, cst.Attribute):
            if self.context.qualified_name(func) != "torch.optim.Adam":
                return None
            return Fix.unsafe(NodeEdit(func.attr, "AdamW"))
        if isinstance(func, cst.Name):
            if self.context.lookup("AdamW") == "torch.optim.AdamW":
                return Fix.unsafe(NodeEdit(func, "AdamW"))
            if func.value == "Adam" and self.context.is_free("AdamW"):
                # `from torch.optim import Adam`: the now unused Adam import goes too
                cleanup = import_cleanup(index_for(self.context), "Adam",
                                         lambda call: self._flagged(call) is not None, func)
                return Fix.unsafe(NodeEdit(func, "AdamW"), *cleanup,
                                  imports=(ImportNeed("from torch.optim import AdamW"),))
            spelled = reference(self.context, "torch.optim.AdamW")
            if spelled is None:
                return None
            text, need = spelled
            return Fix.unsafe(NodeEdit(func, text), imports=(need,) if need else ())
        return None
