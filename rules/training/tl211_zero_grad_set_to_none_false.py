from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import bound_names
from torchlint.analysis.nodes import get_arg, is_literal_false, iter_nodes, method_call
from torchlint.rule import Rule


def _grad_owner(node: cst.BaseExpression) -> cst.Name | None:
    """``p`` for ``p.grad`` or ``p.grad.data``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    if isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(
            node.value, cst.Name):
        return node.value
    return None


def _sets_grad_to_none(scope: cst.CSTNode) -> bool:
    for node in iter_nodes(scope):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and (
            node.value.value == "None"
        ) and any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "grad"
                  for t in node.targets):
            return True
    return False


_ACCUMULATING_METHODS = frozenset({"add_", "sub_", "copy_", "addcmul_", "addcdiv_"})


def _accumulates_into_grad(scope: cst.CSTNode) -> bool:
    """``p.grad += g`` / ``p.grad.add_(g)`` / ``p.grad.copy_(g)``: hand-written gradient
    accumulation, which needs ``.grad`` to stay a (zeroed) tensor."""
    for node in iter_nodes(scope):
        if isinstance(node, cst.AugAssign) and _is_grad(node.target):
            return True
        attribute = method_call(node, *_ACCUMULATING_METHODS)
        if attribute is not None and _is_grad(attribute.value):
            return True
    return False


def _is_grad(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


class ZeroGradSetToNoneFalse(Rule):
    """## What it does
    Flags `zero_grad(set_to_none=False)` and loops that reset gradients with
    `p.grad.zero_()`, instead of letting the gradients be set to `None`.

    ## Why is this bad?
    Filling every gradient with zeros is a memory write as large as the model on every
    step, and the zero tensors stay allocated between steps. Setting `.grad` to `None`
    (the default of `zero_grad()` since PyTorch 2.0) costs nothing, frees that memory
    until the next backward pass, and lets backward write the gradient directly instead of
    adding it to a zero tensor. Optimizers skip parameters whose `.grad` is `None`.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad(set_to_none=False)
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    ```

    Use instead:
    ```python
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    ```

    ## Fix safety
    No fix: code that reads `p.grad` between `zero_grad()` and `backward()` (logging,
    gradient clipping of parameters without gradients) must handle `None` afterwards.
    """

    code = "TL211"
    preview = True
    name = "zero-grad-set-to-none-false"
    triggers = ("zero_grad", "zero_")
    # zero_grad(set_to_none=False) / zero_grad(False), or `<name>.grad[.data].zero_()`
    patterns = (r"set_to_none|zero_grad(?:[\s\\(]|#[^\n\r]*[\r\n])*False\b"
                r"|\bgrad\b(?:[\s\\)]|#[^\n\r]*[\r\n])*\.(?:[\s\\]|#[^\n\r]*[\r\n])*"
                r"(?:data\b(?:[\s\\)]|#[^\n\r]*[\r\n])*\.(?:[\s\\]|#[^\n\r]*[\r\n])*)?zero_\b",)
    message = "{what}; let zero_grad() set gradients to None"
    default = False

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "zero_grad", "zero_")
        if attribute is None:
            return
        if attribute.attr.value == "zero_grad":
            flag = get_arg(node, "set_to_none", 0)
            if flag is not None and is_literal_false(flag.value) and not self._needs_zeros():
                self.report(node, what="zero_grad(set_to_none=False) writes zeros into every "
                                       "gradient")
            return
        owner = _grad_owner(attribute.value)
        if owner is None or node.args:
            return
        for loop in self.context.loops():
            if isinstance(loop, cst.For) and owner.value in bound_names(loop):
                scope = self.context.current_function or loop
                if not _sets_grad_to_none(scope) and not self._needs_zeros():
                    self.report(node, what="zeroing each .grad in a loop writes zeros into "
                                           "every gradient")
                return

    def _needs_zeros(self) -> bool:
        """The enclosing class (or function, or file) adds into ``.grad`` by hand."""
        scope = self.context.enclosing(cst.ClassDef) or self.context.current_function or (
            self.context.module)
        return _accumulates_into_grad(scope)
