from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import dotted_name
from torchlint.analysis.torch_releases import FUNCTORCH, FUNCTORCH_SAME_API, Deprecation
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import DeprecatedCallRule, Rewrite, make_fix, releases

DEPRECATED = {f"functorch.{name}": deprecation for name, deprecation in FUNCTORCH.items()}


class FunctorchNamespace(DeprecatedCallRule):
    """## What it does
    Flags calls of the `functorch` API that moved into torch: `functorch.vmap`, `grad`,
    `grad_and_value`, `jvp`, `vjp`, `jacrev`, `jacfwd`, `hessian`, `functionalize`,
    `make_functional`, `make_functional_with_buffers` and `combine_state_for_ensemble`,
    also through `from functorch import ...`.

    ## Why is this bad?
    functorch was merged into PyTorch 2.0 as `torch.func`. The `functorch` names are
    deprecated shims that warn on every call and are announced for removal; the
    `make_functional*` and `combine_state_for_ensemble` helpers have no shim at all in
    `torch.func`, whose `functional_call` and `stack_module_state` work differently.

    ## Example
    ```python
    import torch
    from functorch import vmap

    def batched_dot(a, b):
        return vmap(torch.dot)(a, b)
    ```

    Use instead:
    ```python
    import torch
    from torch.func import vmap

    def batched_dot(a, b):
        return vmap(torch.dot)(a, b)
    ```

    ## Fix safety
    Safe for `vmap`, `grad`, `grad_and_value`, `jvp`, `vjp`, `jacrev`, `jacfwd`, `hessian`
    and `functionalize`, whose functorch versions only warn and call the `torch.func` ones
    with the same arguments: `functorch.X(...)` becomes `torch.func.X(...)`, and a
    `from functorch import ...` whose names are all among these becomes
    `from torch.func import ...`. An import left unused is removed. No fix for
    `make_functional*` and `combine_state_for_ensemble` (the replacements have another
    API). No fix emits an API newer than the code's target torch release (with no
    target known, a current torch is assumed).
    """

    code = "TL712"
    name = "functorch-namespace"
    triggers = ("functorch",)
    # functorch is imported: its name is spelled in the import
    patterns = (r"\bfunctorch\b",)
    requires = api(*DEPRECATED)
    message = "{api} is deprecated; use {replacement}{note}"
    fix_safety = "safe"
    fix_title = "Use torch.func"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="functorch's functions warn from the release that moved them to `torch.func`; the rule does not fire for an older target.")

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        if isinstance(node.func, cst.Name) and self.rewrite(node, deprecation) is not None:
            rewritten = self._rewritten_import(node.func)
            if rewritten is not None:
                return make_fix(self.context, deprecation.change, [rewritten])
        return self.rewrite_fix(node, deprecation)

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        """functorch's shims of torch.func: the same call under its new name."""
        name = deprecation.api.split(".", 1)[1]
        return Rewrite(deprecation.replacement) if name in FUNCTORCH_SAME_API else None

    def _rewritten_import(self, func: cst.Name) -> NodeEdit | None:
        """``from functorch import vmap, grad`` -> ``from torch.func import vmap, grad`` when
        every name it imports has the same API in torch.func."""
        site = index_for(self.context).import_site(func.value, func)
        if site is None or not isinstance(site.statement, cst.ImportFrom):
            return None
        statement = site.statement
        if statement.relative or statement.module is None or isinstance(
                statement.names, cst.ImportStar) or dotted_name(statement.module) != "functorch":
            return None
        if not all(alias.evaluated_name in FUNCTORCH_SAME_API for alias in statement.names):
            return None
        return NodeEdit(statement.module, "torch.func")
