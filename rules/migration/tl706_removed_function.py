from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import dotted_name
from torchlint.analysis.torch_releases import REMOVED_LINALG, Deprecation, by_name
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    in_compatibility_guard,
    in_effect,
    is_torch_module,
    message_values,
    releases,
)

REMOVED = by_name(*REMOVED_LINALG)


class RemovedFunction(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.solve`, `torch.symeig`, `torch.eig`, `torch.lstsq` and
    `torch.matrix_rank`, and `from torch import` of one of them.

    ## Why is this bad?
    These linear-algebra functions were deprecated in torch 1.9 and later removed: the names
    still exist, so imports and `hasattr` checks succeed, but every call raises a
    `RuntimeError` on current torch. The `torch.linalg` replacements differ in arguments or
    results (`linalg.solve` and `linalg.lstsq` take the matrix first, `linalg.eig` returns
    complex tensors, `linalg.eigh` reads the lower triangle), so the call has to be
    rewritten by hand.

    ## Example
    ```python
    import torch

    def fit(A, b):
        x, _ = torch.solve(b, A)
        return x
    ```

    Use instead:
    ```python
    import torch

    def fit(A, b):
        return torch.linalg.solve(A, b)
    ```

    ## Fix safety
    No fix: every replacement takes other arguments or returns other results.
    """

    code = "TL706"
    name = "removed-function"
    triggers = ("solve", "eig", "lstsq", "matrix_rank")
    # the removed name is spelled at the call or in its import, and torch is imported
    patterns = (r"\b(?:solve|symeig|eig|lstsq|matrix_rank)\b", r"\btorch\b")
    requires = api(*REMOVED)
    message = "{api} was removed in torch {removed_in} (calls raise); use {replacement}{note}"
    fix_safety = "none"
    apis = REMOVED
    # the call itself fails: worth reporting however the function was reached
    through_variables = True
    applies_to = releases(*REMOVED.values(),
                          why="The functions warn from the release that deprecated them and raise from the one that removed them; the rule does not fire for an older target.")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        if module != "torch":
            return
        for alias in node.names:
            deprecation = REMOVED.get(f"torch.{alias.evaluated_name}")
            if deprecation is not None and in_effect(self.context, deprecation) and not (
                    in_compatibility_guard(self.context, is_torch_module)):
                self.report(alias.name, **message_values(deprecation))

    def applies(self, node: cst.Call, deprecation: Deprecation) -> bool:
        return not self._imported_name_reported(node.func) and not in_compatibility_guard(
            self.context, is_torch_module)

    def _imported_name_reported(self, func: cst.BaseExpression) -> bool:
        """A call through ``from torch import solve``: the import is the finding."""
        if not isinstance(func, cst.Name):
            return False
        for _, statement, alias in index_for(self.context).imports.get(func.value, []):
            if isinstance(statement, cst.ImportFrom) and alias is not None and (
                    statement.module is not None and not statement.relative
                    and dotted_name(statement.module) == "torch"
                    and f"torch.{alias.evaluated_name}" in REMOVED):
                return True
        return False
