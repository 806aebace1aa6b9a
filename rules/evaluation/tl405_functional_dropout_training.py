from __future__ import annotations

import libcst as cst
from torchlint.rules.evaluation.functions import self_name

from torchlint.analysis.nodes import get_arg, has_keyword, has_star_args
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule

_DROPOUTS = frozenset(
    f"torch.nn.functional.{name}"
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout")
)


class FunctionalDropoutTraining(Rule):
    """## What it does
    Flags `F.dropout(...)` and its variants (`dropout1d/2d/3d`, `alpha_dropout`,
    `feature_alpha_dropout`) called without a `training` argument.

    ## Why is this bad?
    The functional form does not know whether its module is in training or evaluation
    mode: its `training` parameter defaults to `True`. Without it, `model.eval()` has no
    effect on that dropout, so validation and inference keep zeroing random activations
    and predictions are noisy and worse than they should be. The `nn.Dropout` layer
    passes `self.training` for you; the function needs it spelled out.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            return self.fc(F.dropout(x, p=0.3))
    ```

    Use instead:
    ```python
    import torch.nn as nn
    import torch.nn.functional as F


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            return self.fc(F.dropout(x, p=0.3, training=self.training))
    ```

    ## Fix safety
    Safe inside a method of a module class: the fix adds `training=self.training`, which
    is what `nn.Dropout` does, so training behaves as before and evaluation stops
    dropping. Outside a module class there is no `self.training` to pass, so the call is
    reported without a fix.
    """

    code = "TL405"
    name = "functional-dropout-training"
    triggers = ("dropout",)
    # torch.nn.functional.dropout*: "torch" and "functional" are spelled in an import or the
    # call; a call of a dropout name (not self.dropout(...), unless something is imported
    # "as self") whose arguments do not open with training= (nesting/comments stop the
    # look), or the function imported under an alias
    patterns = (r"\btorch\b", r"\bfunctional\b",
                r"(?<!\bself\.)\b(?:feature_)?(?:alpha_)?dropout\w*[\s\\)]*\("
                r"(?![^()#]*\btraining[\s\\]*=(?!=))|dropout\w*[\s\\]+as\b|\bas[\s\\]+self\b")
    message = "{function}() without training=: it keeps dropping activations after model.eval()"
    fix_safety = "safe"
    fix_title = "Pass training=self.training"

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        qual = ctx.qualified_name(node.func)
        if qual not in _DROPOUTS:
            return
        if has_keyword(node, "training") or has_star_args(node) or get_arg(node, None, 2):
            return
        fix = None
        function = ctx.current_function
        if node.args and function is not None and ctx.in_module_class() and (
            self_name(ctx, function) == "self"
        ):
            fix = Fix.safe(self._edit(node))
        self.report(node, fix=fix, function=qual.rsplit(".", 1)[1])

    def _edit(self, node: cst.Call) -> NodeEdit:
        last = node.args[-1]
        if isinstance(last.comma, cst.Comma) and isinstance(
                last.comma.whitespace_after, cst.ParenthesizedWhitespace):
            # one argument per line with a trailing comma: the keyword gets its own line
            training = cst.Attribute(value=cst.Name("self"), attr=cst.Name("training"))
            return NodeEdit(node, self.context.code(with_keywords(node, ("training", training))))
        # text right after the last argument keeps other layouts and comments in place
        return NodeEdit(last.value, ", training=self.training", kind="insert_after")
