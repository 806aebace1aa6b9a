from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import has_keyword
from torchlint.analysis.torch_releases import CHECKPOINT_USE_REENTRANT, Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule

CHECKPOINT = {
    "torch.utils.checkpoint.checkpoint": "checkpoint",
    "torch.utils.checkpoint.checkpoint_sequential": "checkpoint_sequential",
}


class CheckpointWithoutUseReentrant(Rule):
    """## What it does
    Flags calls of `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)`
    that do not pass `use_reentrant=`.

    ## Why is this bad?
    torch warns on every such call that `use_reentrant` must be passed explicitly, and has
    announced that the default will change. The implicit default is the old reentrant
    variant, which silently computes no gradients for the checkpointed block when none of
    its tensor inputs requires grad (a frozen embedding in front, for example), ignores
    `torch.autograd.grad` inputs, and does not support keyword arguments. Choosing the
    variant explicitly keeps the behaviour from changing under you with a torch upgrade.

    ## Example
    ```python
    from torch.utils.checkpoint import checkpoint

    def forward(self, x):
        return checkpoint(self.block, x)
    ```

    Use instead:
    ```python
    from torch.utils.checkpoint import checkpoint

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)
    ```

    ## Fix safety
    Unsafe: it adds `use_reentrant=False`, the variant torch recommends, which is not
    today's default: gradients now flow even when no input requires grad, and the recompute
    differs in details (hooks, RNG state handling under `preserve_rng_state=False`). Pass
    `use_reentrant=True` instead if you need the old behaviour exactly.
    """

    code = "TL718"
    name = "checkpoint-without-use-reentrant"
    triggers = ("checkpoint",)
    # the function is spelled in the call or its import, and torch in some import
    patterns = (r"\bcheckpoint(?:_sequential)?\b", r"\btorch\b")
    requires = api(*CHECKPOINT)
    message = "{name}() without use_reentrant=: torch warns and will change the default; pass use_reentrant=False"
    fix_safety = "unsafe"
    # the keyword the fix adds exists from 1.11, older than the first release that warns
    applies_to = Releases(CHECKPOINT_USE_REENTRANT.deprecated, why="torch warns from 2.1 when "
                          "`use_reentrant` is left out; the rule does not fire for an older "
                          "target.")
    fix_title = "Pass use_reentrant=False"

    def visit_Call(self, node: cst.Call) -> None:
        name = CHECKPOINT.get(self.context.qualified_name(node.func) or "")
        if name is None or has_keyword(node, "use_reentrant"):
            return  # an explicit choice, or **kwargs that may carry it
        fixed = with_keywords(node, ("use_reentrant", cst.Name("False")))
        self.report(node, fix=Fix.unsafe(NodeEdit(node, self.context.code(fixed))), name=name)
