from __future__ import annotations

import libcst as cst

from torchlint.analysis.grad_mode import in_no_grad
from torchlint.analysis.nodes import method_call
from torchlint.analysis.tensor_facts import is_parameter_loop_target
from torchlint.analysis.torch_facts import is_tensor_factory
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.rule import Rule

_TENSOR_ATTRIBUTES = frozenset({"grad", "weight", "bias"})
_METADATA = frozenset({"dtype", "device", "shape", "ndim", "is_cuda", "layout", "requires_grad"})
_METADATA_METHODS = frozenset({"size", "numel", "dim", "is_floating_point", "is_contiguous",
                               "element_size", "data_ptr", "nelement", "type"})


class TensorDataAttribute(Rule):
    """## What it does
    Flags reads of `.data` on a tensor (`p.data`, `p.grad.data`, `layer.weight.data`);
    `.detach()` gives the same storage without hiding changes from autograd. Not reads of
    metadata only (`p.data.dtype`, `p.data.shape`, `p.data.size()`), nor code under
    `torch.no_grad()`, where nothing is recorded anyway.

    ## Why is this bad?
    `.data` returns a tensor that shares memory with the original but is invisible to
    autograd: in-place changes made through it are not recorded, the version counter is
    not bumped, and a backward pass that needs the old values silently computes wrong
    gradients. `.detach()` shares the memory too, but autograd notices in-place changes and
    raises an error instead of returning wrong numbers. To change parameters without
    tracking, write to them inside `with torch.no_grad():`.

    ## Example
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    for p in model.parameters():
        snapshot = p.data.clone()
        norm = p.grad.data.norm() if p.grad is not None else 0.0
    ```

    Use instead:
    ```python
    import torch

    model = torch.nn.Linear(4, 2)
    for p in model.parameters():
        snapshot = p.detach().clone()
        norm = p.grad.detach().norm() if p.grad is not None else 0.0
    ```

    ## Fix safety
    Unsafe: `X.data` becomes `X.detach()`. Reads give the same values, but in-place writes
    through the result are now seen by autograd and can raise an error in a later
    backward pass, where `.data` silently let them through.
    """

    code = "TL210"
    preview = True
    name = "tensor-data-attribute"
    triggers = ("data",)
    # a `.data` attribute, on .grad/.weight/.bias, a parameter/buffer, a factory tensor or Parameter
    patterns = (r"\.(?:[\s\\]|#[^\n\r]*[\r\n])*data\b",
                r"\b(?:grad|weight|bias)\b|[Pp]aram|buffers"
                r"|\b(?:tensor|zeros|ones|empty|full|eye|rand|randn|randint|randperm|arange"
                r"|linspace|logspace|zeros_like|ones_like|empty_like|full_like|rand_like"
                r"|randn_like|randint_like|as_tensor)\b|\.(?:[\s\\]|#[^\n\r]*[\r\n])*range\b"
                r"|\bfrom[\s\\]+torch[\s\\]+import\b[^\n]*(?:\brange\b|\\|\()|\\[xuUN0-7\r\n]")
    message = "'.data' bypasses autograd's checks; use .detach() (or torch.no_grad() for writes)"
    default = False
    fix_safety = "unsafe"
    fix_title = "Use .detach()"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data" or not self._is_tensor(node.value):
            return
        if self._is_written(node) or self._metadata_only(node) or in_no_grad(self.context):
            return
        detached = cst.Call(func=cst.Attribute(value=node.value, attr=cst.Name("detach")),
                            lpar=node.lpar, rpar=node.rpar)
        self.report(node, fix=Fix.unsafe(NodeEdit(node, self.context.code(detached))))

    def _comprehension_iter(self, name: str) -> bool | None:
        """For ``p`` bound by an enclosing comprehension: does it iterate parameters?
        (``[p.data for p in m.parameters()]``, ``{n: p.data for n, p in
        m.named_parameters()}``); None when no comprehension binds ``name``."""
        for node in reversed(self.context.ancestors):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if not isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                continue
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                target = comp.target
                method = method_call(comp.iter)
                called = method.attr.value if method is not None else None
                if isinstance(target, cst.Name) and target.value == name:
                    return called in ("parameters", "buffers")
                if isinstance(target, cst.Tuple) and any(
                        isinstance(e.value, cst.Name) and e.value.value == name
                        for e in target.elements):
                    elements = target.elements
                    return called in ("named_parameters", "named_buffers") and len(
                        elements) == 2 and isinstance(elements[1].value, cst.Name) and (
                        elements[1].value.value == name)
                comp = comp.inner_for_in
        return None

    def _metadata_only(self, node: cst.Attribute) -> bool:
        """``w.data.dtype``, ``w.data.shape[0]``, ``w.data.size()``: nothing can change."""
        parent = self.context.parent(node)
        if not isinstance(parent, cst.Attribute) or parent.value is not node:
            return False
        if parent.attr.value in _METADATA:
            return True
        call = self.context.parent(parent)
        return isinstance(call, cst.Call) and call.func is parent and (
            parent.attr.value in _METADATA_METHODS)

    def _is_written(self, node: cst.Attribute) -> bool:
        parent = self.context.parent(node)
        # w.data[:n] = ... writes through .data: the slice is the assignment target
        while isinstance(parent, cst.Subscript) and parent.value is node:
            node, parent = parent, self.context.parent(parent)
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            return True
        if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
            return True
        return isinstance(parent, cst.Del)

    def _is_tensor(self, value: cst.BaseExpression) -> bool:
        ctx = self.context
        if isinstance(value, cst.Attribute):
            if value.attr.value not in _TENSOR_ATTRIBUTES:
                return False
            return ctx.qualified_name(value) is None
        if isinstance(value, cst.Name):
            comprehension = self._comprehension_iter(value.value)
            if comprehension is not None:
                return comprehension
            if is_parameter_loop_target(ctx, value):
                return True
            bound = ctx.binding(value.value)
            if bound is not None and bound.kind == "assign" and isinstance(bound.value, cst.Call):
                return is_tensor_factory(ctx, bound.value) or ctx.call_name(bound.value) in (
                    "torch.nn.Parameter", "torch.nn.parameter.Parameter")
        return False
