from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import Binding, bindings_before, binds_anywhere
from torchlint.analysis.layer_table import NON_CONTIGUOUS_ATTRIBUTES, NON_CONTIGUOUS_METHODS
from torchlint.analysis.nodes import method_call
from torchlint.analysis.tensor_facts import is_dtype_like, non_contiguous_producer
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls_method, check, identifier, imports
from torchlint.rule import Rule
from torchlint.rules.tensors.layouts import (
    flattens_leading_apart,
    merges_apart,
    produced,
    view_rank,
)

# permute|transpose|t|...|T|mT: the attribute names non_contiguous_producer looks for
_PRODUCERS = "|".join(sorted(NON_CONTIGUOUS_METHODS | NON_CONTIGUOUS_ATTRIBUTES))


class ViewAfterPermute(Rule):
    """## What it does
    Flags `.view(...)` on the result of `.permute`, `.transpose`, `.t()`, `.T`, `.mT`,
    `.swapaxes`, `.swapdims`, `.movedim`, `.expand` or `.narrow` (chained directly or
    through a local variable) when the view provably has to merge dimensions that the
    operation put out of order in memory: it asks for fewer dimensions than the tensor has
    runs of dimensions that can still be merged. The rank comes from the operation
    (`permute(0, 2, 1)` has three dimensions, `transpose(1, 2)` at least three), from what
    the tensor was made by (`x.view(b, n, h, d)`, `x.flatten(2)`) or from an unpacking of its
    shape (`B, H, L, D = out.shape`); permutations are followed through one another. When
    such an unpacking names the sizes (`b, c, h, w = x.shape`) and the view spells its
    dimensions with them, the rule also sees which dimensions each one merges:
    `x.permute(0, 2, 3, 1).view(b, h, w * c)` merges `w` and `c`, which the permutation
    put apart, even though it asks for as many dimensions as can be merged. A view that keeps
    only the last dimension (`x.view(-1, x.size(-1))`) is a no-op on a 2-D tensor, so it is
    taken to merge at least two leading dimensions: after `x = x.transpose(0, 1)` (also
    inside an `if` with no other branch: the path through it raises) they cannot merge.

    It does not flag views that only split a dimension or add or drop size-1 dimensions
    (`x.transpose(1, 2).view(B, C, H, W)` from `[B, H*W, C]`), views that merge dimensions
    the permutation kept next to each other and in order (`img.permute(1, 2, 0).view(h * w,
    c)`), a permutation that undoes an earlier one, or views whose shape could be a no-op
    (`x.t().view(n, -1)`).

    ## Why is this bad?
    `.view` never copies: it only reinterprets the existing strides. After a permutation or
    transposition the elements are no longer laid out in row-major order, so most new shapes
    cannot be expressed as a view and PyTorch raises `RuntimeError: view size is not
    compatible with input tensor's size and stride`. The code may even work for the shapes
    used in testing (a size-1 dimension hides the problem) and fail later on real batches.
    `.reshape` returns a view whenever one exists and copies only when it must.

    ## Example
    ```python
    import torch

    x = torch.randn(8, 16, 32)
    tokens = x.permute(0, 2, 1).view(8, -1)
    swapped = x.transpose(1, 2)
    flat = swapped.view(-1)
    ```

    Use instead:
    ```python
    import torch

    x = torch.randn(8, 16, 32)
    tokens = x.permute(0, 2, 1).reshape(8, -1)
    swapped = x.transpose(1, 2)
    flat = swapped.contiguous().view(-1)
    ```

    ## Fix safety
    Safe: `.view(` becomes `.reshape(`. Wherever `.view` succeeds, `.reshape` returns the very
    same view; where `.view` would raise, `.reshape` makes the copy instead.
    """

    code = "TL501"
    name = "view-after-permute"
    triggers = ("view",)
    # imports_from("torch"); a `.view(` call; a producer attribute (.permute, .T, ...), all
    # possibly split by whitespace, backslash-newlines or (in brackets) comment lines
    patterns = (r"\btorch\b",
                r"\.[\s\\]*view[\s\\]*[(#)]|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*view[\s\\]*[(#)]",
                r"\.[\s\\]*(?:" + _PRODUCERS + r")\b"
                r"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*(?:" + _PRODUCERS + r")\b")
    requires = calls_method("view") & imports("torch") & identifier(
        *NON_CONTIGUOUS_METHODS, *NON_CONTIGUOUS_ATTRIBUTES) & check(
        "torchlint.rules.tensors.screens:may_flag_tl501")
    message = (".view() merges dimensions that {op} moved apart in memory; it raises at run "
               "time: use .reshape() or .contiguous()")
    fix_safety = "safe"
    fix_title = "Use .reshape()"

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "view")
        if attribute is None or not node.args or self._is_dtype_view(node):
            return
        if not self.context.cached("imports_torch", lambda: self.context.imports_from("torch")):
            return  # no torch in the file: the receiver is some other library's object
        found = self._producer(attribute.value, node)
        if found is None:
            return
        op, producer, at = found
        target = view_rank(node)
        shape = produced(self.context, producer, at)
        if target is None or shape is None:
            return
        if target >= shape.chunks() and not merges_apart(
                self.context, node, producer, at, shape) and not flattens_leading_apart(node, shape):
            return  # the view may only split dimensions or add and drop size-1 ones
        self.report(node, op=op, fix=Fix.safe(NodeEdit(attribute.attr, "reshape")))

    def _is_dtype_view(self, node: cst.Call) -> bool:
        if any(arg.keyword is not None for arg in node.args):
            return True  # dtype=..., or numpy's view(type=...): a tensor's view takes a shape
        if len(node.args) != 1 or node.args[0].star or node.args[0].keyword is not None:
            return False
        return is_dtype_like(self.context, node.args[0].value)

    def _producer(self, value: cst.BaseExpression, node: cst.Call
                  ) -> tuple[str, cst.BaseExpression, cst.CSTNode] | None:
        """The producer's name, its expression and where it is evaluated."""
        op = non_contiguous_producer(self.context, value)
        if op is not None:
            return op, value, node
        if isinstance(value, cst.Name) and not value.lpar:
            bound = next(bindings_before(self.context, value.value, node), None)
            if bound is not None and bound.kind == "unknown":
                bound = _rebound_in_branch(bound.node, value.value)
            if bound is not None and bound.kind == "assign" and bound.value is not None:
                op = non_contiguous_producer(self.context, bound.value)
                if op is not None:
                    return op, bound.value, bound.node
        return None


def _rebound_in_branch(stmt: cst.CSTNode, name: str) -> Binding | None:
    """``name = ...`` when ``stmt`` is ``if cond: ... name = ...`` with no other branch: on
    the path through the branch, the tensor is what the branch made it
    (``if not batch_first: x = x.transpose(0, 1)``)."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None or not isinstance(
            stmt.body, cst.IndentedBlock) or not stmt.body.body:
        return None
    last = next((s for s in reversed(stmt.body.body) if binds_anywhere(s, name)), None)
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return None
    assign = last.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(
            assign.targets[0].target, cst.Name) or assign.targets[0].target.value != name:
        return None
    return Binding("assign", assign, assign.value)
