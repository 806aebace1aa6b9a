from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import iter_nodes, string_value
from torchlint.analysis.torch_releases import MATRIX_NORM, NORM, Deprecation, by_name
from torchlint.diagnostic import Fix
from torchlint.engine.triage import calls
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    as_keyword,
    bind,
    int_literal,
    int_sequence,
    number_literal,
    releases,
)

DEPRECATED = by_name(NORM)
# torch.norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None)
NORM_PARAMETERS = ("input", "p", "dim", "keepdim", "out", "dtype")


class DeprecatedNorm(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.norm(...)`.

    ## Why is this bad?
    `torch.norm` is documented as deprecated "and may be removed": one function chooses
    between vector and matrix norms from the type of `p` and the length of `dim`, and its
    behaviour differs between dense and sparse tensors. `torch.linalg.vector_norm` and
    `torch.linalg.matrix_norm` say which norm is meant; for dense tensors `torch.norm`
    itself only forwards to them.

    ## Example
    ```python
    import torch

    def l2(x):
        return torch.norm(x, p=2, dim=1)
    ```

    Use instead:
    ```python
    import torch

    def l2(x):
        return torch.linalg.vector_norm(x, ord=2, dim=1)
    ```

    ## Fix safety
    Safe where it is exactly the call `torch.norm` makes for a dense tensor: no `out=`;
    `p` absent, a number literal, `float("inf")`, `math.inf`/`torch.inf` (signed) or
    `"fro"`; `dim` absent, an int literal or a tuple/list of them (at most two with
    `"fro"`). The call becomes `torch.linalg.vector_norm(...)` with the same arguments in
    the same places, `p=` renamed `ord=` and `"fro"` written `2`. `p="nuc"` with a literal
    pair of dims becomes `torch.linalg.matrix_norm(x, ord="nuc", dim=...)`. No fix in a file
    that builds sparse tensors (`to_sparse`, `sparse_coo_tensor`, `sparse_csr_tensor`):
    `torch.norm` takes another path for them. No fix emits an API newer than the code's target torch release (with no
    target known, a current torch is assumed).
    """

    code = "TL708"
    name = "deprecated-norm"
    triggers = ("norm",)
    # the call spells `norm` (or imports it from torch) and torch is imported
    patterns = (r"\bnorm\b", r"\btorch\b")
    requires = calls(*DEPRECATED)
    message = "torch.norm is deprecated; use torch.linalg.vector_norm (or matrix_norm)"
    fix_safety = "safe"
    fix_title = "Use torch.linalg.vector_norm"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`torch.norm` is documented as deprecated from that release; the fix needs `torch.linalg.vector_norm` and is never offered for a target without it.")

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        if builds_sparse_tensors(self.context):
            return None
        return self.rewrite_fix(node, deprecation)

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        return norm_rewrite(self.context, node)


def norm_rewrite(ctx: FileContext, node: cst.Call) -> Rewrite | None:
    """The replacement function and its arguments, when the fix is exact."""
    args = bind(node, NORM_PARAMETERS)
    if args is None or "input" not in args or "out" in args:
        return None
    if "dtype" in args and args["dtype"].keyword is None:
        return None
    p = args.get("p")
    dim = args.get("dim")
    dims = _dims(dim.value) if dim is not None else None
    if dim is not None and dims is None:
        return None
    ord_text = string_value(p.value) if p is not None else None
    if p is not None and ord_text is None and not _numeric_order(ctx, p.value):
        return None
    if ord_text == "nuc":
        if dims is None or len(dims) != 2 or not isinstance(dim.value,  # type: ignore[union-attr]
                                                            (cst.Tuple, cst.List)):
            return None
        return Rewrite(MATRIX_NORM.replacement or "", _keywords_after_input(node, args),
                       MATRIX_NORM)
    if ord_text is not None and (ord_text != "fro" or dims is not None and len(dims) > 2):
        return None
    new = []
    for arg in node.args:
        if arg is p:
            if ord_text == "fro":
                arg = arg.with_changes(value=cst.Integer("2"))
            if arg.keyword is not None:
                arg = as_keyword(arg, "ord")
        new.append(arg)
    return Rewrite(NORM.replacement, new)


def _keywords_after_input(node: cst.Call, args: dict[str, cst.Arg]) -> list[cst.Arg]:
    """matrix_norm(x, ord="nuc", dim=d, keepdim=k, dtype=t): each argument after the input
    passed by keyword, in its original order."""
    renamed = {"p": "ord"}
    new = []
    for arg in node.args:
        name = next(key for key, value in args.items() if value is arg)
        if name == "input" or arg.keyword is not None and name not in renamed:
            new.append(arg)
        else:
            new.append(as_keyword(arg, renamed.get(name, name)))
    return new


def _dims(expr: cst.BaseExpression) -> list[int] | None:
    single = int_literal(expr)
    if single is not None:
        return [single]
    return int_sequence(expr)


def _numeric_order(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """A number literal, ``float("inf")``, ``math.inf`` or ``torch.inf``, with a sign."""
    while isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    if number_literal(expr):
        return True
    if isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) == "builtins.float" and (
            len(expr.args) == 1 and expr.args[0].keyword is None):
        text = string_value(expr.args[0].value)
        return text is not None and text.strip().lower().lstrip("+-") in ("inf", "infinity")
    return ctx.qualified_name(expr) in ("math.inf", "torch.inf")


_SPARSE_BUILDERS = ("sparse_coo_tensor", "sparse_csr_tensor")


def builds_sparse_tensors(ctx: FileContext) -> bool:
    """The file mentions ``to_sparse*``, ``sparse_coo_tensor`` or ``sparse_csr_tensor``."""

    def scan() -> bool:
        for node in iter_nodes(ctx.module):
            if isinstance(node, cst.Name) and (node.value.startswith("to_sparse")
                                               or node.value in _SPARSE_BUILDERS):
                return True
        return False

    return ctx.cached("builds_sparse_tensors", scan)
