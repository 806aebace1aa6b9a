from __future__ import annotations

import libcst as cst

from torchlint.analysis.execution import file_trains
from torchlint.analysis.grad_mode import GradOff, called_only_with_grad_off, decorated_no_grad
from torchlint.analysis.nodes import last_name_part
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, defines_matching, imports
from torchlint.rule import Rule
from torchlint.rules.evaluation.functions import (
    class_sets_eval,
    file_facts,
    is_eval_name,
    is_pytest_test,
    model_names,
    scan_function,
)
from torchlint.rules.evaluation.modes import runs_only_mode_free_models
from torchlint.rules.evaluation.screens import EVAL_NAME
from torchlint.rules.patterns import MODEL_NAME


class InferenceWithoutEval(Rule):
    """## What it does
    Flags an evaluation function that runs a model without switching it to evaluation
    mode with `.eval()`: under `torch.no_grad()`, or, in a file that trains, without
    either `no_grad` or `.eval()`.

    In a file that trains (it back-propagates or steps an optimizer), an evaluation
    function that runs the model with gradients on is flagged too: the model is still in
    training mode there, and the missing `no_grad` is TL401's finding besides. A function
    that this file only calls with gradients off (`with torch.inference_mode():
    evaluate(model, loader)`) counts as running under `no_grad`.

    Not flagged: a helper that this file also calls from a training step or from a
    framework's per-batch hook (`validation_step`): the caller owns the mode there, and
    switching to eval would leave training in eval mode; methods of module classes;
    functions whose callers in this file already called `.eval()`; and a model whose class
    is known here and has no layer that depends on the mode (no dropout, batch norm,
    instance norm, recurrent layer with dropout, nor code reading `self.training`): the
    file's global of such a model, or the one every call in the file passes.

    ## Why is this bad?
    `torch.no_grad()` only stops autograd from recording. Dropout keeps zeroing
    activations and batch norm keeps normalising with the statistics of the current
    batch (and keeps updating its running averages) until the model is put in eval mode.
    Validation scores then change from run to run, depend on the batch size, and the
    running statistics drift on validation data.

    ## Example
    ```python
    import torch


    @torch.no_grad()
    def validate(model, loader):
        losses = []
        for inputs, targets in loader:
            losses.append(torch.nn.functional.mse_loss(model(inputs), targets).item())
        return sum(losses) / len(losses)
    ```

    Use instead:
    ```python
    import torch


    @torch.no_grad()
    def validate(model, loader):
        model.eval()
        losses = []
        for inputs, targets in loader:
            losses.append(torch.nn.functional.mse_loss(model(inputs), targets).item())
        return sum(losses) / len(losses)
    ```

    ## Fix safety
    Unsafe: the fix inserts `model.eval()` as the first statement of the function. The
    model stays in eval mode after the function returns, so a training loop that calls
    it must switch back with `model.train()`; and a caller that set the mode on purpose
    (e.g. Monte Carlo dropout) gets a different behaviour.
    """

    code = "TL402"
    name = "inference-without-eval"
    # "enable_grad": grad_off() also accepts with-items whose text says enable_grad;
    # "backward"/"step": a file that trains flags evaluation without no_grad too
    triggers = ("no_grad", "inference_mode", "set_grad_enabled", "enable_grad", "backward",
                "step")
    # a torch import; a def named like evaluation (EVAL_NAME); a call or .forward of a
    # model-named parameter or self attribute (model_names without eval receivers)
    patterns = (r"\btorch\b",
                r"\bdef[\s\\]+(?:_*(?:val|valid|validate|validation|eval|evaluate|test|infer"
                r"|inference|predict)(?:_|\b)|\w*_(?:eval|test|validate|predict|inference)\b)",
                r"(?:" + MODEL_NAME + r")[\s\\)]*\(|(?:" + MODEL_NAME + r")[\s\\)]*\.[\s\\]*forward\b")
    # an evaluation function of the shape the rule reports (see screens.py)
    requires = imports("torch") & defines_matching(EVAL_NAME) & check(
        "torchlint.rules.evaluation.screens:may_flag_tl402")
    message = ("evaluation function '{function}' runs '{model}' under no_grad but never "
               "calls {model}.eval(); dropout and batch norm stay in training mode")
    fix_safety = "unsafe"
    fix_title = "Call .eval() on the model first"

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.context
        name = node.name.value
        if not is_eval_name(name) or is_pytest_test(ctx, node):
            return
        cls = ctx.enclosing_class(node)
        if cls is not None and ctx.is_module_class(cls):
            return  # the caller switches the whole module (and its children) to eval
        facts = scan_function(ctx, node)
        if facts.eval_receivers or facts.other_eval or facts.train_receivers:
            return
        if facts.backward or facts.needs_grad or not ctx.imports_from("torch"):
            return
        # gradients off around the whole function: its decorator, or every caller in the file
        # (``with torch.inference_mode(): evaluate(model, loader)``)
        decorated = decorated_no_grad(ctx, node, GradOff.MENTIONED) or (
            called_only_with_grad_off(ctx, name))
        # in a file that trains, the model is in training mode unless switched: an
        # evaluation that runs it with gradients on (TL401's finding) misses eval() as well
        trained = file_trains(ctx)
        models = model_names(ctx, node, facts, include_evaluated=False)
        called = [c for c in facts.calls
                  if c.name in models and (c.grad_free or decorated or trained)]
        if not called or class_sets_eval(ctx, node):  # the costly class-wide look comes last
            return
        first = next(i for i, c in enumerate(facts.calls) if c is called[0])
        if any(at <= first for at in facts.train_at.values()):
            return  # model.train() before the model runs: the mode is chosen on purpose
        callers = file_facts(ctx)
        if name in callers.called_after_eval or name in callers.called_from_training:
            return  # a helper of a training step or of a step hook: the caller owns the mode
        if any(last_name_part(c.call.func) in callers.eval_setters for c in facts.calls):
            return  # eval through a helper of this file (``with inference_context(model)``)
        model = called[0].name
        if runs_only_mode_free_models(ctx, node, model):
            return  # no dropout nor batch norm in that model: eval() would change nothing
        fix = None
        first = self._first_statement(node)
        if first is not None:
            fix = Fix.unsafe(NodeEdit(first, f"{model}.eval()", kind="insert_line_before"))
        message = None if called[0].grad_free or decorated else (
            f"evaluation function '{name}' runs '{model}' after training but never calls "
            f"{model}.eval(); dropout and batch norm stay in training mode")
        self.report(node.name, fix=fix, message=message, function=name, model=model)

    @staticmethod
    def _first_statement(node: cst.FunctionDef) -> cst.CSTNode | None:
        body = node.body
        if isinstance(body, cst.SimpleStatementSuite):
            return body.body[0] if body.body else None
        statements = list(body.body)
        if statements and _is_docstring(statements[0]):
            statements = statements[1:]
        return statements[0] if statements else None


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(
        stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value,
                                               (cst.SimpleString, cst.ConcatenatedString))
