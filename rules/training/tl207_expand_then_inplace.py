from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import method_call
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls_method, check
from torchlint.rule import Rule

# Trailing-underscore methods that change metadata or flags, not the tensor's elements.
_NOT_WRITES = frozenset({
    "requires_grad_", "share_memory_", "detach_", "set_", "resize_", "resize_as_",
    "retain_grad_", "record_stream_", "pin_memory_", "as_strided_", "squeeze_", "unsqueeze_",
    "t_", "transpose_", "swapaxes_", "swapdims_", "rename_",
})


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _root_name(node: cst.BaseExpression) -> cst.Name | None:
    """``y`` for ``y``, ``y[0]``, ``y[:, 1][0]``."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node if isinstance(node, cst.Name) else None


class ExpandThenInplace(Rule):
    """## What it does
    Flags an in-place write (`y[...] = v`, `y += v`, `y.add_(...)`, `y.fill_(...)`) into a
    tensor produced by `.expand(...)` or `.expand_as(...)` without a `.clone()` in between.

    ## Why is this bad?
    `expand` allocates nothing: the new dimensions have stride 0, so many elements of the
    result are the same memory location. Writing into such a tensor either raises
    `RuntimeError: unsupported operation: more than one element of the written-to tensor
    refers to a single memory location`, or - when it gets through, e.g. via indexing - it
    changes every "copy" at once and also the original tensor it was expanded from.
    Call `.clone()` on the expanded tensor to get real, independent storage first.

    ## Example
    ```python
    import torch

    row = torch.zeros(1, 4)
    grid = row.expand(3, 4)
    grid[0, 0] = 1.0
    ```

    Use instead:
    ```python
    import torch

    row = torch.zeros(1, 4)
    grid = row.expand(3, 4).clone()
    grid[0, 0] = 1.0
    ```

    ## Fix safety
    Safe: `.clone()` is appended to the `expand` call. The expanded tensor gets its own
    memory (more memory, same values), and the write no longer fails or leaks into the
    source tensor.
    """

    code = "TL207"
    name = "expand-then-inplace"
    triggers = ("expand",)
    # `.expand(`/`.expand_as(`, and an in-place `x.op_(`, `y[i] = ...` or augmented assignment
    patterns = (r"\bexpand(?:_as)?\b",
                r"\b[^\W\d_]\w*_\b|\](?:[\s\\)]|#[^\n\r]*[\r\n])*=|(?:[-+*/%&|^@]|<<|>>)=")
    requires = calls_method("expand", "expand_as") & check(
        "torchlint.rules.training.value_screens:may_flag_tl207")
    message = ("in-place write into the result of .{op}(), whose elements share memory; "
               ".clone() it first")
    fix_safety = "safe"
    fix_title = "Clone after expand"

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, _root_name(target.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target, _root_name(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node)
        if attribute is None:
            return
        method = attribute.attr.value
        if not method.endswith("_") or method.startswith("_") or method in _NOT_WRITES:
            return
        receiver = attribute.value
        expanded = self._expand_call(receiver)
        if expanded is not None:
            self._report(node, expanded)
            return
        self._check(node, _root_name(receiver))

    def _check(self, reported: cst.CSTNode, name: cst.Name | None) -> None:
        if name is None:
            return
        bound = self.context.binding(name.value)
        if bound is None or bound.kind != "assign" or bound.value is None:
            return
        expanded = self._expand_call(bound.value)
        if expanded is not None:
            self._report(reported, expanded)

    def _expand_call(self, node: cst.BaseExpression) -> cst.Call | None:
        attribute = method_call(node, "expand", "expand_as")
        if attribute is None or self.context.qualified_name(attribute) is not None:
            return None
        assert isinstance(node, cst.Call)
        if not node.args or any(isinstance(arg.value, _STRINGS) for arg in node.args):
            return None  # re.Match.expand(template), str-returning look-alikes
        return node

    def _report(self, reported: cst.CSTNode, expanded: cst.Call) -> None:
        attribute = expanded.func
        assert isinstance(attribute, cst.Attribute)
        fix = Fix.safe(NodeEdit(expanded, ".clone()", kind="insert_after"))
        self.report(reported, op=attribute.attr.value, fix=fix)
