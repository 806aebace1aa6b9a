from __future__ import annotations

import os

import libcst as cst

from torchlint.analysis.bindings import (
    binds_anywhere,
    bound_names,
    module_statements,
    module_value,
)
from torchlint.analysis.context import FileContext
from torchlint.analysis.execution import file_trains
from torchlint.analysis.nodes import dotted_name, iter_calls, last_name_part, parameters
from torchlint.engine.triage import check
from torchlint.rule import Rule
from torchlint.rules.parallel.screens import TRAINING_CALL

_DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})

_DISTRIBUTED = frozenset({
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
})


class DataParallel(Rule):
    """## What it does
    Flags models wrapped in `torch.nn.DataParallel` (or `torch.nn.parallel.DataParallel`)
    for training.

    Reported by default in training code: the file back-propagates or steps an optimizer,
    or hands the wrapped model to a training function (`train(model, ...)`,
    `trainer.fit(model)`). Elsewhere it is reported only in preview mode: inference and
    evaluation scripts (a forward pass has no gradients to all-reduce), tests, a file that
    also offers a `DistributedDataParallel` path (DataParallel is then the deliberate
    fallback), and a branch a module-level constant turns off (`ngpu = 1` ...
    `if ngpu > 1:`).

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
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    ```

    Use instead:
    ```python
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")  # one process per GPU: torchrun --nproc_per_node=N train.py
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(nn.Linear(512, 10).cuda(), device_ids=[local_rank])
    for x, y in loader:  # a DistributedSampler gives each process its share
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    ```

    ## Fix safety
    No fix: moving to `DistributedDataParallel` changes how the program is launched, how
    data is sharded (`DistributedSampler`) and how checkpoints and logs are written.
    """

    code = "TL801"
    name = "data-parallel"
    triggers = ("DataParallel",)
    # torch.nn(.parallel).DataParallel: `nn` in the import or the call, and `DataParallel` as
    # a whole word (DistributedDataParallel alone cannot fire; aliases import it by name)
    patterns = (r"\bnn\b", r"\bDataParallel\b")
    requires = check("torchlint.rules.parallel.screens:may_flag_tl801", preview_shapes=True)
    message = ("nn.DataParallel is single-process and GIL-bound; use DistributedDataParallel, "
               "launched with `torchrun --nproc_per_node=N {script}`")

    _aliases: dict[str, cst.CSTNode] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.call_name(node) in _DATA_PARALLEL or self._is_alias_call(node):
            path = self.context.path
            script = os.path.basename(path) if path.endswith(".py") else "train.py"
            self.report(node, script=script, preview=not self._trains_the_model(node))

    def _trains_the_model(self, node: cst.Call) -> bool:
        """The wrapped model is trained: the file back-propagates or steps an optimizer, or
        hands the wrapped model to a training function (``train(model, ...)``,
        ``trainer.fit(model)``); not in tests, not where the file also offers a
        DistributedDataParallel path (DataParallel is then the deliberate fallback), and
        not in a branch a module-level constant turns off (``ngpu = 1`` ...
        ``if ngpu > 1:``)."""
        ctx = self.context
        if ctx.is_test_file or self._offers_ddp() or _switched_off(ctx):
            return False
        return file_trains(ctx) or self._handed_to_training(node)

    def _offers_ddp(self) -> bool:
        """A call of DistributedDataParallel (or of a helper named for it, ``smart_DDP``)."""
        ctx = self.context

        def compute() -> bool:
            for call in iter_calls(ctx.module):
                if ctx.qualified_name(call.func) in _DISTRIBUTED:
                    return True
                name = last_name_part(call.func)
                if name is not None and ("ddp" in name.lower()
                                         or name == "DistributedDataParallel"):
                    return True
            return False

        return ctx.cached("tl801_offers_ddp", compute)

    def _handed_to_training(self, node: cst.Call) -> bool:
        """``model = nn.DataParallel(model)`` then ``train(model, ...)``/``fit(model)``."""
        ctx = self.context
        parent = ctx.parent(node)
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return False
        target = dotted_name(parent.targets[0].target)
        scope = ctx.current_function or ctx.module
        for call in iter_calls(scope):
            name = last_name_part(call.func)
            if name is None or not TRAINING_CALL.search(name.lower()):
                continue
            if any(dotted_name(arg.value) == target for arg in call.args):
                return True
        return False

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


def _switched_off(ctx: FileContext) -> bool:
    """The current node sits in an ``if`` whose test is false as written: a conjunct
    ``n > k`` (or ``>=``) where ``n`` is a module-level integer constant
    (``ngpu = 1`` ... ``if device.type == "cuda" and ngpu > 1:``)."""
    ancestors = ctx.ancestors
    for i in range(len(ancestors) - 2, -1, -1):
        block = ancestors[i]
        if isinstance(block, cst.If) and ancestors[i + 1] is block.body and any(
                _false_as_written(ctx, test) for test in _conjuncts(block.test)):
            return True
    return False


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _false_as_written(ctx: FileContext, test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or not isinstance(
            test.left, cst.Name):
        return False
    target = test.comparisons[0]
    if not isinstance(target.comparator, cst.Integer) or not isinstance(
            target.operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return False
    found = module_value(ctx, test.left.value)
    if found is None or not isinstance(found[1], cst.Integer):
        return False
    value, bound = int(found[1].value, 0), int(target.comparator.value, 0)
    return not (value > bound if isinstance(target.operator, cst.GreaterThan) else value >= bound)
