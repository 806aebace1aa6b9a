from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import (
    CHAIN_MATMUL,
    CHOLESKY,
    CHOLESKY_UPPER,
    DEPRECATED_LINALG,
    GER,
    LU,
    LU_FACTOR_EX,
    LU_SOLVE,
    QR,
    Deprecation,
    by_name,
)
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    as_keyword,
    as_positional,
    bind,
    bool_literal,
    join_args,
    releases,
)

DEPRECATED = by_name(*DEPRECATED_LINALG)


class DeprecatedLinalg(DeprecatedCallRule):
    """## What it does
    Flags calls of the linear-algebra functions torch deprecated in favour of `torch.linalg`
    (and `torch.outer`): `torch.qr`, `torch.cholesky`, `torch.ger`, `torch.chain_matmul`,
    `torch.lu_solve`, `torch.lu`, `torch.svd` and `torch.triangular_solve`.

    ## Why is this bad?
    Most of them warn on every call, and `torch.qr` and `torch.cholesky` raise from torch
    2.14. The `torch.linalg` versions follow NumPy's conventions and are the maintained
    ones; some differ in arguments or results (`linalg.svd` returns `Vh`, not `V`;
    `linalg.lu_solve` and `linalg.solve_triangular` take their arguments in another
    order), which is easier to get right once than to rediscover when the old name goes.

    ## Example
    ```python
    import torch

    def factor(A, a, b):
        Q, R = torch.qr(A, some=False)
        return Q, R, torch.ger(a, b)
    ```

    Use instead:
    ```python
    import torch

    def factor(A, a, b):
        Q, R = torch.linalg.qr(A, mode="complete")
        return Q, R, torch.outer(a, b)
    ```

    ## Fix safety
    Safe where the replacement computes the same thing: `torch.qr(A[, some])` →
    `torch.linalg.qr(A)` (`some=False` → `mode="complete"`) and `torch.cholesky(A[, upper])`
    → `torch.linalg.cholesky(A[, upper=True])` (the same factor, in the same memory layout),
    when `some`/`upper` is absent
    or a literal; `torch.ger` → `torch.outer`; `torch.chain_matmul(a, b, ...)` with at least
    two plain positional arguments → `torch.linalg.multi_dot([a, b, ...])`;
    `torch.lu_solve(b, LU, pivots)` → `torch.linalg.lu_solve(LU, pivots, b)` when the
    three arguments are names, attributes or literals (reordering them cannot change what is
    evaluated first). Unsafe: `torch.lu(A, pivot=p)` → `torch.linalg.lu_factor(A, pivot=p)`
    (`get_infos=True` → `lu_factor_ex`), whose error reporting on singular input is not
    documented as identical. No fix for `torch.svd` and `torch.triangular_solve` (other
    results) or other forms. An import left unused is removed. No fix emits an API newer
    than the code's target torch release (with no target known, a current torch is assumed).
    """

    code = "TL707"
    name = "deprecated-linalg"
    triggers = ("qr", "cholesky", "ger", "chain_matmul", "lu", "svd", "triangular_solve")
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:qr|cholesky|ger|chain_matmul|lu_solve|lu|svd|triangular_solve)\b",
                r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "{api} is deprecated{removed}; use {replacement}{note}"
    fix_safety = "sometimes"
    fix_title = "Use torch.linalg"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="Each function counts from the release that deprecated it (the rule stays silent on one not yet deprecated in the target); none fires for an older target.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        return rewrite_for(node, deprecation)


def rewrite_for(node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
    """How table A rewrites this call of ``deprecation``'s API; None: no fix."""
    if deprecation is GER:
        return Rewrite(GER.replacement)
    if deprecation is QR:
        return _qr(node)
    if deprecation is CHOLESKY:
        return _cholesky(node)
    if deprecation is CHAIN_MATMUL:
        return _chain_matmul(node)
    if deprecation is LU_SOLVE:
        return _lu_solve(node)
    if deprecation is LU:
        return _lu(node)
    return None


def _qr(node: cst.Call) -> Rewrite | None:
    args = bind(node, ("input", "some"), ("out",))
    if args is None or "input" not in args:
        return None
    added = []
    if "some" in args:
        some = bool_literal(args["some"].value)
        if some is None:
            return None
        if not some:
            added.append(("mode", '"complete"'))
    new = [as_positional(args["input"])] + ([args["out"]] if "out" in args else [])
    return Rewrite(QR.replacement, join_args(new, node, added))


def _cholesky(node: cst.Call) -> Rewrite | None:
    args = bind(node, ("input", "upper"), ("out",))
    if args is None or "input" not in args:
        return None
    upper = False
    if "upper" in args:
        literal = bool_literal(args["upper"].value)
        if literal is None:
            return None
        upper = literal
    new = [as_positional(args["input"])] + ([args["out"]] if "out" in args else [])
    # upper=True: linalg's own upper factor, the very tensor (values and strides) the old
    # call returned; the .mH of the lower one would be a contiguous copy of another layout
    return Rewrite(CHOLESKY.replacement, join_args(new, node, [("upper", "True")] if upper else []),
                   CHOLESKY_UPPER if upper else None)


def _chain_matmul(node: cst.Call) -> Rewrite | None:
    matrices = []
    out = None
    for arg in node.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if out is not None:
                return None
            matrices.append(arg)
        elif arg.keyword.value == "out":
            out = arg
        else:
            return None
    if len(matrices) < 2:
        return None
    elements = [cst.Element(arg.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(
        " ")) if i < len(matrices) - 1 else cst.MaybeSentinel.DEFAULT)
        for i, arg in enumerate(matrices)]
    new = [cst.Arg(cst.List(elements))] + ([out] if out else [])
    return Rewrite(CHAIN_MATMUL.replacement, join_args(new, node))


def _simple(expr: cst.BaseExpression) -> bool:
    """A name, an attribute chain of names, or a literal: evaluating it has no effect."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression,
                                                            (cst.Integer, cst.Float)))


def _lu_solve(node: cst.Call) -> Rewrite | None:
    positional = [arg for arg in node.args if arg.keyword is None]
    keywords = [arg for arg in node.args if arg.keyword is not None]
    if len(positional) != 3 or any(arg.star for arg in node.args) or any(
            arg.keyword is not None and arg.keyword.value != "out" for arg in keywords):
        return None
    if not all(_simple(arg.value) for arg in positional):
        return None
    b, lu_data, pivots = positional
    new = [lu_data, pivots, b, *keywords]
    return Rewrite(LU_SOLVE.replacement, join_args(new, node))


def _lu(node: cst.Call) -> Rewrite | None:
    args = bind(node, ("A", "pivot", "get_infos"), ("out",))
    if args is None or "A" not in args or "out" in args:
        return None
    infos = False
    if "get_infos" in args:
        literal = bool_literal(args["get_infos"].value)
        if literal is None:
            return None
        infos = literal
    new = [as_positional(args["A"])]
    if "pivot" in args:
        new.append(as_keyword(args["pivot"], "pivot"))
    if infos:
        return Rewrite(LU_FACTOR_EX.replacement or "", join_args(new, node), LU_FACTOR_EX,
                       safe=False)
    return Rewrite(LU.replacement, join_args(new, node), safe=False)
