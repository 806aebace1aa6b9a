from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.grad_mode import decorated_no_grad
from torchlint.analysis.nodes import (
    code,
    get_arg,
    has_keyword,
    has_star_args,
    iter_nodes,
    semantic_children,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, check
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.evaluation.functions import self_name
from torchlint.rules.evaluation.screens import DROPOUTS


class FunctionalDropoutTraining(Rule):
    """## What it does
    Flags `F.dropout(...)` and its variants (`dropout1d/2d/3d`, `alpha_dropout`,
    `feature_alpha_dropout`) called without a `training` argument.

    Not flagged: a call that only runs in training (under `if self.training`, after
    `if not self.training: return`, in `training_step`/`*train*` functions) or whose
    probability follows the mode (`p = self.p if self.training else 0.0`, or a parameter
    tested `if p > 0` that callers set to 0 in eval); dropout meant to stay on at
    inference (a comment says so, a Tacotron-style `Prenet`, a sampler's noise dropout,
    sampling methods and functions decorated with `no_grad`); methods of classes that are
    not modules (hooks, samplers, pipelines); and test files.

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
    # a functional dropout called without training= (see screens.py)
    requires = calls(*DROPOUTS) & check("torchlint.rules.evaluation.screens:may_flag_tl405")
    message = "{function}() without training=: it keeps dropping activations after model.eval()"
    fix_safety = "safe"
    fix_title = "Pass training=self.training"

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        qual = ctx.qualified_name(node.func)
        if qual not in DROPOUTS:
            return
        if has_keyword(node, "training") or has_star_args(node) or get_arg(node, None, 2):
            return
        if self._deliberate(node):
            return
        fix = None
        function = ctx.current_function
        if node.args and function is not None and ctx.in_module_class() and (
            self_name(ctx, function) == "self"
        ):
            fix = Fix.safe(self._edit(node))
        self.report(node, fix=fix, function=qual.rsplit(".", 1)[1])

    def _deliberate(self, node: cst.Call) -> bool:
        """The call drops only in training anyway, or drops at inference on purpose."""
        ctx = self.context
        if ctx.is_test_file:
            return True
        function = ctx.current_function
        cls = ctx.enclosing_class(function) if function is not None else None
        if cls is not None and not ctx.is_module_class(cls):
            return True  # a hook, sampler or pipeline method: no mode to follow
        if cls is not None and cls.name.value.lower().endswith("prenet"):
            return True  # Tacotron-style prenets keep dropout on at inference by design
        probability = get_arg(node, "p", 1)
        if probability is not None and _says_training(probability.value, ctx, node):
            return True  # p = self.p if self.training else 0.0
        if probability is not None and "noise" in code(probability.value).lower():
            return True  # a noise-dropout option of a sampler: meant to run in eval
        for anc in reversed(ctx.ancestors[:-1]):
            if isinstance(anc, cst.FunctionDef):
                name = anc.name.value
                if name in _TRAINING_ONLY or "train" in name.lower().split("_") or (
                        name.startswith(_SAMPLING)) or decorated_no_grad(ctx, anc):
                    return True
                if _returns_unless_training(anc, node):
                    return True
            if isinstance(anc, cst.If) and _positive_training(anc.test) and _inside(
                    anc.body, node, ctx):
                return True
            if isinstance(anc, cst.If) and probability is not None and isinstance(
                    probability.value, cst.Name) and _tests_positive(
                    anc.test, probability.value.value) and _inside(anc.body, node, ctx):
                return True  # if p > 0: F.dropout(x, p) -- the caller passes 0 in eval
        return _comment_says_on_purpose(ctx, node)

    def _edit(self, node: cst.Call) -> NodeEdit:
        last = node.args[-1]
        if isinstance(last.comma, cst.Comma) and isinstance(
                last.comma.whitespace_after, cst.ParenthesizedWhitespace):
            # one argument per line with a trailing comma: the keyword gets its own line
            training = cst.Attribute(value=cst.Name("self"), attr=cst.Name("training"))
            return NodeEdit(node, self.context.code(with_keywords(node, ("training", training))))
        # text right after the last argument keeps other layouts and comments in place
        return NodeEdit(last.value, ", training=self.training", kind="insert_after")


# functions that only run while training, and sampling methods (which run in eval)
_TRAINING_ONLY = frozenset({"training_step", "train_step", "compute_loss"})
_SAMPLING = ("sample", "p_sample", "inference", "generate", "infer")
_ON_PURPOSE = ("always", "inference", "test time", "test-time", "eval mode", "monte carlo",
               "mc dropout", "mc-dropout", "at eval")


def _positive_training(test: cst.BaseExpression) -> bool:
    """The test reads ``self.training`` (or a ``training`` flag) not under ``not``."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            continue
        if isinstance(node, cst.Attribute) and node.attr.value == "training" or (
                isinstance(node, cst.Name) and node.value in ("training", "is_training")):
            return True
        stack.extend(semantic_children(node))
    return False


def _says_training(expr: cst.BaseExpression, ctx: FileContext, at: cst.CSTNode) -> bool:
    """``expr`` (the probability) depends on the mode: it reads ``training``, or is a name
    last bound to something that does (``p = 0.0 if not self.training else self.p``)."""
    if _mentions_training(expr):
        return True
    if isinstance(expr, cst.Name):
        bound = ctx.binding(expr.value, at)
        return bound is not None and bound.value is not None and _mentions_training(bound.value)
    return False


def _mentions_training(expr: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Attribute) and n.attr.value == "training" or (
        isinstance(n, cst.Name) and n.value in ("training", "is_training"))
        for n in iter_nodes(expr))


def _tests_positive(test: cst.BaseExpression, name: str) -> bool:
    """``if p > 0``, ``if p``, ``if p and ...``: the body runs only for a non-zero ``p``."""
    if isinstance(test, cst.Name):
        return test.value == name
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_positive(test.left, name) or _tests_positive(test.right, name)
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and (
            test.left.value == name) and len(test.comparisons) == 1:
        return isinstance(test.comparisons[0].operator, (cst.GreaterThan, cst.NotEqual))
    return False


def _inside(block: cst.CSTNode, node: cst.CSTNode, ctx: FileContext) -> bool:
    index = ctx.index_of(block)
    return index >= 0 and index < ctx.index_of(node)


def _returns_unless_training(function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """``if not self.training: return x`` at the top of the function body, before the call."""
    for stmt in function.body.body:
        if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.UnaryOperation) and isinstance(
                stmt.test.operator, cst.Not) and _mentions_training(stmt.test) and any(
                isinstance(s, cst.Return) for n in iter_nodes(stmt.body) for s in [n]):
            return True
        if any(n is node for n in iter_nodes(stmt)):
            return False
    return False


def _comment_says_on_purpose(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A comment on the call's statement or the two lines above says dropout stays on."""
    statement = next((a for a in reversed(ctx.ancestors)
                      if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement))),
                     None)
    if statement is None:
        return False
    text = ctx.code(statement).lower()
    comments = [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
    comments += [line.comment.value.lower() for line in getattr(statement, "leading_lines", ())
                 if line.comment is not None]
    return any(word in comment for comment in comments for word in _ON_PURPOSE)
