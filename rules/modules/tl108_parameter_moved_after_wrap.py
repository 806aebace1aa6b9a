from __future__ import annotations

import libcst as cst

from torchlint.analysis.fresh_tensors import Placement, cast_target, fresh_placement
from torchlint.analysis.nodes import get_arg, self_attribute
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import chained_call
from torchlint.fix.edits import keeps_comments
from torchlint.rule import Rule

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# methods that always return another tensor object, whatever the value (reshaping ones
# return a view: a plain tensor too; .contiguous() may return the parameter itself)
_ALWAYS_NEW = frozenset({"clone", "detach", "view", "reshape", "t", "transpose", "permute",
                         "unsqueeze", "squeeze", "flatten", "expand", "repeat"})
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


class ParameterMovedAfterWrap(Rule):
    """## What it does
    Flags `self.X = nn.Parameter(...).cuda()` (or `.to(...)`, `.half()`, `.double()`, any
    move or cast that provably returns a new tensor) in a module class: the method is
    applied to the parameter instead of to the value it wraps.

    ## Why is this bad?
    A move or cast of a `Parameter` returns a plain tensor, computed from the parameter:
    a non-leaf with a `grad_fn`. That tensor is what gets stored, so `self.X` is not a
    registered parameter: it is missing from `model.parameters()` (the optimizer never
    sees it) and from `state_dict()`, its value never changes during training, and
    `model.to(...)` does not move it. Nothing fails: the model just trains without it.

    The rule reports only when the method provably returns a new tensor: a reshape
    (`.view(...)`, `.t()`, ...), `.clone()` or `.detach()` always does; a move or cast does
    when the wrapped value is made on the spot (`torch.randn(3, 4)`, on the CPU in the
    default dtype unless told otherwise) and the method sends it to another device or dtype. `.float()` on a
    float32 value, or `.to(device)` with a device only known at run time, may hand back the
    parameter itself, and are left alone.

    ## Example
    ```python
    import torch
    from torch import nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(8)).cuda()
    ```

    Use instead:
    ```python
    import torch
    from torch import nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(8).cuda())
    ```

    ## Fix safety
    Safe: the method moves inside the `Parameter(...)` call, so the same values, on the
    same device and in the same dtype, are wrapped as a registered, trainable parameter.
    The only change is the bug's cure: the attribute now appears in `parameters()` and
    `state_dict()`.
    """

    code = "TL108"
    name = "parameter-moved-after-wrap"
    triggers = ("Parameter",)
    patterns = (r"\bParameter\b", r"\btorch\b")
    # a method called on the result of nn.Parameter(...) at once: the only shape reported
    requires = chained_call(*PARAMETER)
    message = (".{method}() of an nn.Parameter returns a plain tensor: self.{attr} is not a "
               "registered parameter; call .{method}() on the wrapped value")
    fix_safety = "safe"
    fix_title = "Move the call inside nn.Parameter(...)"

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._check(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node.target, node.value)

    def _check(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        attr = self_attribute(target)
        if attr is None or not self.context.in_module_class():
            return
        call = value
        while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = call.func.value
            if isinstance(receiver, cst.Call) and self.context.qualified_name(
                    receiver.func) in PARAMETER:
                self._check_method(call, receiver, attr)
                return
            call = receiver

    def _check_method(self, call: cst.Call, parameter: cst.Call, attr: str) -> None:
        assert isinstance(call.func, cst.Attribute)
        method = call.func.attr.value
        data = get_arg(parameter, "data", 0)
        if data is None or data.star:
            return
        if method not in _ALWAYS_NEW:
            made = fresh_placement(self.context, data.value)
            target = cast_target(self.context, call)
            if made is None or target is None or not Placement.differs_from(target, made):
                return
        self.report(call, fix=self._fix(call, parameter, data), method=method, attr=attr)

    def _fix(self, call: cst.Call, parameter: cst.Call, data: cst.Arg) -> Fix | None:
        assert isinstance(call.func, cst.Attribute)
        value = data.value
        if not isinstance(value, _ATOMS) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        moved = call.with_changes(func=call.func.with_changes(value=value))
        args = [moved_arg if arg is data else arg for arg in parameter.args
                for moved_arg in (data.with_changes(value=moved),)]
        new = parameter.with_changes(args=args, lpar=call.lpar, rpar=call.rpar)
        text = self.context.code(new)
        return Fix.safe(NodeEdit(call, text)) if keeps_comments(call, text) else None
