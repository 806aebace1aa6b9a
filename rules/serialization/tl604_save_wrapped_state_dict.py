from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import module_value
from torchlint.analysis.nodes import get_arg, iter_nodes, method_call
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})
_MOVES = ("to", "cuda")


class SaveWrappedStateDict(Rule):
    """## What it does
    Flags `torch.save(model.state_dict(), ...)` where `model` was wrapped in `DataParallel`
    or `DistributedDataParallel` in the same scope.

    ## Why is this bad?
    The wrapper holds the real network as its `.module` attribute, so every key of the
    wrapper's state dict starts with `module.`. A plain, unwrapped model later refuses to
    load that checkpoint (`Missing key(s) ... Unexpected key(s) module.conv1.weight`) unless
    the keys are rewritten. Saving `model.module.state_dict()` stores the keys the bare
    network expects.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.DataParallel(nn.Linear(4, 4))
    torch.save(model.state_dict(), "model.pt")
    ```

    Use instead:
    ```python
    import torch
    from torch import nn

    model = nn.DataParallel(nn.Linear(4, 4))
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Fix safety
    Unsafe: the saved keys lose their `module.` prefix, so code that loads the file into a
    wrapped model must now load into `model.module` instead. When the wrapping happens only
    on some paths (inside an `if`), the finding has no fix: `.module` would not exist on the
    others.
    """

    code = "TL604"
    name = "save-wrapped-state-dict"
    # WRAPPERS: (Distributed)DataParallel, spelled in the import or the attribute
    triggers = ("DataParallel",)
    # a torch import; a way to call torch.save (see torch_function); a `.state_dict()` call
    patterns = (r"\btorch\b",
                torch_function("save"),
                r"\bstate_dict\b")
    message = ("{name} is wrapped in {wrapper}: its state_dict keys start with 'module.'; "
               "save {name}.module.state_dict()")
    fix_safety = "unsafe"
    fix_title = "Save the wrapped module's state_dict()"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in SAVE_FUNCTIONS:
            return
        arg = get_arg(node, "obj", 0)
        if arg is None:
            return
        value = arg.value
        candidates = [value]
        if isinstance(value, cst.Dict):
            candidates = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
        for candidate in candidates:
            self._check(candidate)

    def _check(self, expr: cst.BaseExpression) -> None:
        attribute = method_call(expr, "state_dict")
        if attribute is None or not isinstance(attribute.value, cst.Name):
            return
        name = attribute.value.value
        ctx = self.context
        bound = ctx.binding(name)
        value: cst.BaseExpression | None = None
        if bound is not None and bound.kind == "assign":
            value = bound.value
        elif bound is None and ctx.current_function is not None:
            found = module_value(ctx, name)
            value = found[1] if found is not None else None
        wrapper = self._wrapper(value)
        fix = None
        if wrapper is not None:
            fix = Fix.unsafe(NodeEdit(attribute.value, f"{name}.module"))
        elif bound is None:
            wrapper = self._wrapped_on_some_path(name, expr)
        if wrapper is None:
            return
        self.report(expr, fix=fix, name=name, wrapper=wrapper)

    def _wrapper(self, value: cst.BaseExpression | None) -> str | None:
        while value is not None:
            move = method_call(value, *_MOVES)
            if move is None:
                break
            value = move.value
        if isinstance(value, cst.Call):
            qual = self.context.qualified_name(value.func)
            if qual in WRAPPERS:
                return qual.rsplit(".", 1)[1]
        return None

    def _wrapped_on_some_path(self, name: str, until: cst.CSTNode) -> str | None:
        """A wrapping ``name = DataParallel(...)`` earlier in this function, inside a branch."""
        scope = self.context.current_function
        if scope is None:
            return None
        for ancestor in reversed(self.context.ancestors):
            if ancestor is scope:
                break
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.Try)):
                return None  # the save may sit on the unwrapped path
        if any(isinstance(node, cst.Attribute) and node.attr.value == "module"
               and isinstance(node.value, cst.Name) and node.value.value == name
               for node in iter_nodes(scope.body)):
            return None  # the code already deals with .module somewhere
        for node in iter_nodes(scope.body):
            if node is until:
                return None
            if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets
            ):
                wrapper = self._wrapper(node.value)
                if wrapper is not None:
                    return wrapper
        return None
