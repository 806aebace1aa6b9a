from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import RANGE, Deprecation, by_name
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    bind,
    int_literal,
    releases,
)

DEPRECATED = by_name(RANGE)
# torch.range(start, end, step=1, *, out=None, dtype=None, layout=..., device=None,
# requires_grad=False); torch.arange takes the same names
POSITIONAL = ("start", "end", "step")
KEYWORDS = ("out", "dtype", "layout", "device", "requires_grad")


class DeprecatedRange(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.range(start, end[, step], ...)`.

    ## Why is this bad?
    `torch.range` is deprecated and warns on every call. Unlike Python's `range` and
    `torch.arange` it includes `end`, and it returns the default floating-point dtype even
    for integer arguments, which makes off-by-one mistakes and float indices easy.

    ## Example
    ```python
    import torch

    steps = torch.range(0, 9, dtype=torch.long)
    ```

    Use instead:
    ```python
    import torch

    steps = torch.arange(0, 10, dtype=torch.long)
    ```

    ## Fix safety
    For int literals with a positive step, the call becomes `torch.arange(start, end + 1,
    step, ...)` with `end + 1` computed: the same elements. Safe with an explicit `dtype=`;
    unsafe without it, since `torch.arange` of integers returns int64 where `torch.range`
    returned floats. No fix for other arguments: with a float step the number of elements
    can change.
    """

    code = "TL715"
    name = "deprecated-range"
    triggers = ("range",)
    # `range` is spelled at the call or in its import, and torch is imported
    patterns = (r"\brange\b", r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "torch.range is deprecated (it includes the end); use torch.arange"
    fix_safety = "sometimes"
    fix_title = "Use torch.arange"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`torch.range` warns in every release torchlint knows, and `torch.arange` is as old.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        planned = arange_args(node)
        if planned is None:
            return None
        args, typed = planned
        return Rewrite(RANGE.replacement, args, safe=typed)


def arange_args(node: cst.Call) -> tuple[list[cst.Arg], bool] | None:
    """The arguments of the equal ``torch.arange`` call (``end`` raised by one), and whether
    the dtype is explicit; None unless start, end and step are int literals, step > 0."""
    args = bind(node, POSITIONAL, KEYWORDS)
    if args is None or "start" not in args or "end" not in args:
        return None
    start, end = int_literal(args["start"].value), int_literal(args["end"].value)
    step = int_literal(args["step"].value) if "step" in args else 1
    if start is None or end is None or step is None or step <= 0:
        return None
    new = [arg.with_changes(value=cst.parse_expression(str(end + 1))) if arg is args["end"]
           else arg for arg in node.args]
    dtype = args.get("dtype")
    return new, dtype is not None and not (isinstance(dtype.value, cst.Name)
                                           and dtype.value.value == "None")
