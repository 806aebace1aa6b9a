from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere, bound_names, module_statements
from torchlint.analysis.nodes import parameters
from torchlint.rule import Rule

_DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})


class DataParallel(Rule):
    """## What it does
    Flags models wrapped in `torch.nn.DataParallel` (or `torch.nn.parallel.DataParallel`).

    Preview: on real code DataParallel was nearly always deliberate (a fallback beside a
    DistributedDataParallel path, tutorials about it, tests of its checkpoints, eval
    scripts behind a flag); only 1 of 15 findings was a place to change.

    ## Why is this bad?
    `DataParallel` runs every GPU from one Python process: each step it scatters the batch,
    copies the whole model to every device again, runs the replicas in threads that fight
    over the GIL, and gathers all outputs (and the loss) on the first GPU, which ends up with
    more memory use and more work than the others. `DistributedDataParallel` starts one
    process per GPU, keeps a replica on each for good and only all-reduces gradients,
    overlapping that with the backward pass; it is faster even on a single machine, and the
    PyTorch documentation recommends it instead.

    ## Example
    ```python
    import torch.nn as nn

    model = nn.DataParallel(nn.Linear(512, 10)).cuda()
    ```

    Use instead:
    ```python
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")  # one process per GPU, e.g. started by torchrun
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(nn.Linear(512, 10).cuda(), device_ids=[local_rank])
    ```

    ## Fix safety
    No fix: moving to `DistributedDataParallel` changes how the program is launched, how
    data is sharded (`DistributedSampler`) and how checkpoints and logs are written.
    """

    code = "TL801"
    preview = True
    name = "data-parallel"
    triggers = ("DataParallel",)
    # torch.nn(.parallel).DataParallel: `nn` in the import or the call, and `DataParallel` as
    # a whole word (DistributedDataParallel alone cannot fire; aliases import it by name)
    patterns = (r"\bnn\b", r"\bDataParallel\b")
    message = "DataParallel is single-process and GIL-bound; use DistributedDataParallel"

    _aliases: dict[str, cst.CSTNode] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.call_name(node) in _DATA_PARALLEL or self._is_alias_call(node):
            self.report(node)

    def _is_alias_call(self, node: cst.Call) -> bool:
        """``DP(model)`` after ``DP = nn.DataParallel``, or a call of a class of this file
        that subclasses ``DataParallel`` (``class MyDP(nn.DataParallel)``)."""
        func = node.func
        if not isinstance(func, cst.Name) or self.context.lookup(func.value) is not None:
            return False
        bound = self.context.binding(func.value, node)
        if bound is not None:
            return bound.kind == "assign" and bound.value is not None and (
                self.context.qualified_name(bound.value) in _DATA_PARALLEL)
        for function in self.context.ancestors:
            if isinstance(function, (cst.FunctionDef, cst.Lambda)) and (
                    any(p.name.value == func.value for p in parameters(function))
                    or binds_anywhere(function.body, func.value)):
                return False
        return func.value in self._module_aliases()

    def _module_aliases(self) -> dict[str, cst.CSTNode]:
        """Module-level names bound exactly once, to DataParallel or a subclass of it."""
        if self._aliases is None:
            counts: dict[str, int] = {}
            found: dict[str, cst.CSTNode] = {}
            statements = list(module_statements(self.context.module.body))
            for stmt in statements:
                for name in bound_names(stmt):
                    counts[name] = counts.get(name, 0) + 1
            changed = True
            while changed:
                changed = False
                for stmt in statements:
                    name = self._alias_target(stmt, found)
                    if name is not None and name not in found and counts.get(name) == 1:
                        found[name] = stmt
                        changed = True
            self._aliases = found
        return self._aliases

    def _alias_target(self, stmt: cst.CSTNode, found: dict[str, cst.CSTNode]) -> str | None:
        def is_dp(expr: cst.BaseExpression) -> bool:
            if isinstance(expr, cst.Name) and expr.value in found:
                return True
            return self.context.qualified_name(expr) in _DATA_PARALLEL

        if isinstance(stmt, cst.ClassDef):
            return stmt.name.value if any(is_dp(base.value) for base in stmt.bases) else None
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0].target, cst.Name) and is_dp(stmt.value):
            return stmt.targets[0].target.value
        return None
