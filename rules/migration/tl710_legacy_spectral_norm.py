from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import (
    REMOVE_SPECTRAL_NORM,
    SPECTRAL_NORM,
    Deprecation,
    by_name,
)
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    parametrization_rewrite,
    releases,
)

LEGACY = by_name(SPECTRAL_NORM, REMOVE_SPECTRAL_NORM)


class LegacySpectralNorm(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.nn.utils.spectral_norm(...)` and
    `torch.nn.utils.remove_spectral_norm(...)`.

    ## Why is this bad?
    The hook-based `spectral_norm` has been reimplemented as
    `torch.nn.utils.parametrizations.spectral_norm`, and its documentation says the old one
    will be deprecated. The parametrization keeps the power-iteration state as buffers of a
    registered module and works with `torch.compile` and other parametrizations. It does not
    warn yet, so this rule is opt-in.

    ## Example
    ```python
    import torch.nn as nn

    disc = nn.utils.spectral_norm(nn.Linear(128, 1))
    ```

    Use instead:
    ```python
    import torch.nn as nn

    disc = nn.utils.parametrizations.spectral_norm(nn.Linear(128, 1))
    ```

    ## Fix safety
    Unsafe: `spectral_norm(...)` becomes `torch.nn.utils.parametrizations.spectral_norm(...)`
    with the same arguments, and `remove_spectral_norm(m[, name])` becomes
    `torch.nn.utils.parametrize.remove_parametrizations(m, name)` (`"weight"` by default).
    `weight_orig`, `weight_u` and `weight_v` move under `parametrizations.weight`:
    `state_dict` keys change and old checkpoints no longer load strictly.
    """

    code = "TL710"
    name = "legacy-spectral-norm"
    default = False
    triggers = ("spectral_norm",)
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:remove_)?spectral_norm\b", r"\btorch\b")
    requires = api(*LEGACY)
    message = "{api} is the legacy hook; use {replacement}"
    fix_safety = "unsafe"
    fix_title = "Use the spectral_norm parametrization"
    apis = LEGACY
    applies_to = releases(*LEGACY.values(),
                          why="The parametrization exists from that release; the rule does not fire for an older target.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        return parametrization_rewrite(node, deprecation)
