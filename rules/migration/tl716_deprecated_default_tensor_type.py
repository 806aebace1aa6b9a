from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import iter_calls, last_name_part, string_value
from torchlint.analysis.torch_releases import (
    SET_DEFAULT_DEVICE,
    SET_DEFAULT_TENSOR_TYPE,
    Deprecation,
    by_name,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    bind,
    deprecated_callee,
    make_fix,
    releases,
    renamed_call,
    spell,
)

DEPRECATED = by_name(SET_DEFAULT_TENSOR_TYPE)
CPU_TYPES = {"torch.FloatTensor": "torch.float32", "torch.DoubleTensor": "torch.float64"}
CUDA_TYPES = {"torch.cuda.FloatTensor": "torch.float32",
              "torch.cuda.DoubleTensor": "torch.float64"}
# calls that also set the default device: with one of them in the file, the order of the
# settings matters and a dtype-only replacement may leave another device in force
DEFAULT_SETTERS = frozenset({"set_default_tensor_type", "set_default_device"})


class DeprecatedDefaultTensorType(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.set_default_tensor_type(...)`.

    ## Why is this bad?
    It is deprecated since torch 2.1 and warns on every call. It sets two things at once,
    the default floating dtype and the default device, through the legacy tensor-type
    classes; `torch.set_default_dtype` and `torch.set_default_device` say which of the two
    is meant.

    ## Example
    ```python
    import torch

    torch.set_default_tensor_type(torch.DoubleTensor)
    ```

    Use instead:
    ```python
    import torch

    torch.set_default_dtype(torch.float64)
    ```

    ## Fix safety
    Safe for `torch.FloatTensor` / `torch.DoubleTensor` (or those names as strings), which
    become `torch.set_default_dtype(torch.float32 / torch.float64)`, when the file makes no
    other `set_default_tensor_type` or `set_default_device` call (the old call also put the
    default device back to the CPU). Unsafe for `torch.cuda.FloatTensor` /
    `torch.cuda.DoubleTensor` in a statement of its own: `set_default_dtype(...)` followed by
    `torch.set_default_device("cuda")`, a different mechanism (a device context that
    applies to factory functions). No fix for other types. No fix emits an API newer
    than the code's target torch release (with no target known, a current torch is assumed).
    """

    code = "TL716"
    name = "deprecated-default-tensor-type"
    triggers = ("set_default_tensor_type",)
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\bset_default_tensor_type\b", r"\btorch\b")
    requires = api(*DEPRECATED)
    message = ("torch.set_default_tensor_type is deprecated; use torch.set_default_dtype "
               "(and torch.set_default_device)")
    fix_safety = "sometimes"
    fix_title = "Use torch.set_default_dtype"

    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`set_default_tensor_type` warns from that release; the rule does not fire for an older target.")

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        kind = tensor_type(self.context, node)
        if kind is None:
            return None
        cuda, dtype = kind
        statement = self._own_statement()
        if cuda and statement is None:
            return None
        if not cuda and other_default_setters(self.context, node):
            return None
        spelled = spell(self.context, node.func, dtype)
        if spelled is None:
            return None
        dtype_text, dtype_need = spelled
        arg = node.args[0].with_changes(value=cst.parse_expression(dtype_text), keyword=None,
                                        equal=cst.MaybeSentinel.DEFAULT)

        def fixable(call: cst.Call) -> bool:
            found = tensor_type(self.context, call)
            if deprecated_callee(self.context, call.func, DEPRECATED) is None or found is None:
                return False
            if found[0]:
                return own_statement(index_for(self.context).parents, call) is not None
            return not other_default_setters(self.context, call)

        if not cuda:
            made = renamed_call(self.context, node, SET_DEFAULT_TENSOR_TYPE.replacement, [arg],
                                  fixable)
            if made is None:
                return None
            edits, need = made
            return make_fix(self.context, SET_DEFAULT_TENSOR_TYPE.change, edits,
                            (need, dtype_need))
        dtype_call = renamed_call(self.context, node, SET_DEFAULT_TENSOR_TYPE.replacement, [arg],
                                  fixable)
        device_call = renamed_call(self.context, node, SET_DEFAULT_DEVICE.replacement or "",
                                   [cst.Arg(cst.SimpleString('"cuda"'))])
        if dtype_call is None or device_call is None or statement is None:
            return None
        (dtype_edit, *cleanup), need = dtype_call
        (device_edit,), device_need = device_call
        edits = [NodeEdit(statement, dtype_edit.text, kind="insert_line_before"), device_edit,
                 *cleanup]
        return make_fix(self.context, SET_DEFAULT_DEVICE, edits, (need, device_need, dtype_need),
                        safe=False)

    def _own_statement(self) -> cst.SimpleStatementLine | None:
        return own_statement(index_for(self.context).parents, self.context.node)


def own_statement(parents: dict[cst.CSTNode, cst.CSTNode], call: cst.CSTNode
                  ) -> cst.SimpleStatementLine | None:
    """The statement line when the call is the whole of it."""
    expression = parents.get(call)
    line = parents.get(expression) if expression is not None else None
    if isinstance(expression, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and (
            len(line.body) == 1):
        return line
    return None


def tensor_type(ctx: FileContext, node: cst.Call) -> tuple[bool, str] | None:
    """(is it a CUDA type, the dtype it stands for) for the FloatTensor and DoubleTensor
    types passed as the class or its name."""
    args = bind(node, ("t",))
    if args is None or "t" not in args:
        return None
    value = args["t"].value
    name = string_value(value) or ctx.qualified_name(value) or ""
    if name in CPU_TYPES:
        return False, CPU_TYPES[name]
    if name in CUDA_TYPES:
        return True, CUDA_TYPES[name]
    return None


def other_default_setters(ctx: FileContext, node: cst.Call) -> bool:
    """The file makes another call named ``set_default_tensor_type`` or
    ``set_default_device`` (by spelling: any such call counts)."""
    calls = ctx.cached("default_setter_calls", lambda: [
        call for call in iter_calls(ctx.module)
        if last_name_part(call.func) in DEFAULT_SETTERS])
    return any(call is not node for call in calls)
