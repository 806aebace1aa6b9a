from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import F_SIGMOID, F_TANH, Deprecation, by_name
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import DeprecatedCallRule, Rewrite, releases

OLD = by_name(F_SIGMOID, F_TANH)


class FunctionalSigmoidTanh(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.nn.functional.sigmoid(x)` and `torch.nn.functional.tanh(x)`.

    ## Why is this bad?
    They are thin aliases of `torch.sigmoid` and `torch.tanh`. torch 1.x warned that they
    were deprecated; torch 2.0 dropped the warning, so this is a matter of style: one
    spelling of each function across a code base. Opt-in.

    ## Example
    ```python
    import torch.nn.functional as F

    def gate(x):
        return F.sigmoid(x) * F.tanh(x)
    ```

    Use instead:
    ```python
    import torch

    def gate(x):
        return torch.sigmoid(x) * torch.tanh(x)
    ```

    ## Fix safety
    Safe: `F.sigmoid(x)` and `F.tanh(x)` call `torch.sigmoid(x)` and `torch.tanh(x)`. An
    import left unused is removed.
    """

    code = "TL721"
    name = "functional-sigmoid-tanh"
    default = False
    triggers = ("sigmoid", "tanh")
    # the name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:sigmoid|tanh)\b", r"\btorch\b")
    requires = api(*OLD)
    message = "{api} is an alias; use {replacement}"
    fix_safety = "safe"
    fix_title = "Use torch.sigmoid / torch.tanh"
    apis = OLD
    applies_to = releases(*OLD.values(),
                          why="A matter of style: `torch.sigmoid` and `torch.tanh` exist in every release.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        return Rewrite(deprecation.replacement)
