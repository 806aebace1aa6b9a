from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import (
    UPSAMPLE,
    UPSAMPLE_BILINEAR,
    UPSAMPLE_NEAREST,
    UPSAMPLING,
    UPSAMPLING_BILINEAR_2D,
    UPSAMPLING_NEAREST_2D,
    Deprecation,
    by_name,
)
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    join_args,
    new_keyword,
    releases,
)

DEPRECATED = by_name(*UPSAMPLING)
NEAREST = (("mode", '"nearest"'),)
BILINEAR = (("mode", '"bilinear"'), ("align_corners", "True"))
# what each old API adds to the new call, and how many arguments it takes before those
ADDED: dict[Deprecation, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    UPSAMPLE: ((), ()),
    UPSAMPLE_NEAREST: (NEAREST, ("input", "size", "scale_factor")),
    UPSAMPLE_BILINEAR: (BILINEAR, ("input", "size", "scale_factor")),
    UPSAMPLING_NEAREST_2D: (NEAREST, ("size", "scale_factor")),
    UPSAMPLING_BILINEAR_2D: (BILINEAR, ("size", "scale_factor")),
}


class DeprecatedUpsample(DeprecatedCallRule):
    """## What it does
    Flags calls of `F.upsample`, `F.upsample_nearest`, `F.upsample_bilinear`,
    `nn.UpsamplingNearest2d` and `nn.UpsamplingBilinear2d`.

    ## Why is this bad?
    They are deprecated names of `F.interpolate` and `nn.Upsample`: the functions warn on
    every call, the classes are documented as deprecated. `upsample_bilinear` and
    `UpsamplingBilinear2d` also hide that they use `align_corners=True`, which differs from
    what `interpolate(mode="bilinear")` does by default; spelling it out keeps the
    behaviour visible when someone later switches.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    up = nn.UpsamplingBilinear2d(scale_factor=2)
    y = F.upsample(up(x), scale_factor=2, mode="nearest")
    ```

    Use instead:
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    y = F.interpolate(up(x), scale_factor=2, mode="nearest")
    ```

    ## Fix safety
    Safe: each old name computes exactly the replacement: `F.upsample(...)` →
    `F.interpolate(...)`; `F.upsample_nearest(...)` → `F.interpolate(..., mode="nearest")`;
    `F.upsample_bilinear(...)` → `F.interpolate(..., mode="bilinear", align_corners=True)`;
    `nn.UpsamplingNearest2d(...)` → `nn.Upsample(..., mode="nearest")`;
    `nn.UpsamplingBilinear2d(...)` → `nn.Upsample(..., mode="bilinear", align_corners=True)`
    (none of them has parameters or buffers). An import left unused is removed. No fix when
    the arguments are spread with `*`/`**`.
    """

    code = "TL714"
    name = "deprecated-upsample"
    triggers = ("psampl",)
    # an old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:upsample(?:_nearest|_bilinear)?|Upsampling(?:Nearest|Bilinear)2d)\b",
                r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "{api} is deprecated; use {replacement}{added}"
    fix_safety = "safe"
    fix_title = "Use interpolate / nn.Upsample"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="The upsampling functions are deprecated in every release torchlint knows, and `interpolate`/`nn.Upsample` are as old.")

    def values(self, deprecation: Deprecation) -> dict[str, str]:
        added = ", ".join(f"{name}={value}" for name, value in ADDED[deprecation][0])
        return {**super().values(deprecation), "added": f"(..., {added})" if added else ""}

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        args = new_args(node, deprecation)
        return None if args is None else Rewrite(deprecation.replacement, args)


def new_args(node: cst.Call, deprecation: Deprecation) -> list[cst.Arg] | None:
    """The arguments of the replacement call: the same, then the keywords that the old name
    fixed (``mode=``, ``align_corners=``)."""
    added, parameters = ADDED[deprecation]
    if not added:
        return list(node.args)
    if any(arg.star for arg in node.args):
        return None
    positional = [arg for arg in node.args if arg.keyword is None]
    if len(positional) > len(parameters) or any(
            arg.keyword is not None and arg.keyword.value not in parameters
            for arg in node.args):
        return None
    if not node.args:
        return join_args([new_keyword(name, value) for name, value in added], node)
    return join_args(list(node.args), node, added)
