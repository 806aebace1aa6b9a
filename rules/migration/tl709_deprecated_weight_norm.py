from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import REMOVE_WEIGHT_NORM, WEIGHT_NORM, Deprecation, by_name
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    parametrization_rewrite,
    releases,
)

DEPRECATED = by_name(WEIGHT_NORM, REMOVE_WEIGHT_NORM)


class DeprecatedWeightNorm(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.nn.utils.weight_norm(...)` and of its counterpart
    `torch.nn.utils.remove_weight_norm(...)`.

    ## Why is this bad?
    The hook-based `weight_norm` is deprecated in favour of
    `torch.nn.utils.parametrizations.weight_norm` and warns each time it is applied. The hook
    recomputes the weight in a forward pre-hook, which does not compose with
    `torch.compile`, `deepcopy` or other parametrizations; `remove_weight_norm` only undoes
    that old hook, so it has to move with it.

    ## Example
    ```python
    import torch.nn as nn

    conv = nn.utils.weight_norm(nn.Conv1d(16, 16, 3))
    ```

    Use instead:
    ```python
    import torch.nn as nn

    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(16, 16, 3))
    ```

    ## Fix safety
    Unsafe: `weight_norm(...)` becomes `torch.nn.utils.parametrizations.weight_norm(...)`
    with the same arguments, and `remove_weight_norm(m[, name])` becomes
    `torch.nn.utils.parametrize.remove_parametrizations(m, name)` (`"weight"` by default).
    The parameters `weight_g`/`weight_v` become `parametrizations.weight.original0/1`:
    `state_dict` keys change, old checkpoints no longer load strictly, and code reading
    `weight_g` breaks. No fix emits an API newer than the code's target torch release (with no
    target known, a current torch is assumed).
    """

    code = "TL709"
    name = "deprecated-weight-norm"
    triggers = ("weight_norm",)
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:remove_)?weight_norm\b", r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "{api} is deprecated; use {replacement}"
    fix_safety = "unsafe"
    fix_title = "Use the weight_norm parametrization"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`weight_norm` warns from the release that added its parametrization; the rule does not fire for an older target.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        return parametrization_rewrite(node, deprecation)
