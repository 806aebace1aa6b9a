from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere, module_value
from torchlint.analysis.nodes import get_arg, iter_nodes, method_call
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, check
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
    on some paths (inside an `if` without an `else` that wraps too), the finding has no fix:
    `.module` would not exist on the others. When every branch of an `if`/`elif`/`else`
    wraps the model, `.module` exists on every path and the fix is offered.
    """

    code = "TL604"
    name = "save-wrapped-state-dict"
    # WRAPPERS: (Distributed)DataParallel, spelled in the import or the attribute
    triggers = ("DataParallel",)
    # a torch import; a way to call torch.save (see torch_function); a `.state_dict()` call
    patterns = (r"\btorch\b",
                torch_function("save"),
                r"\bstate_dict\b")
    requires = calls(*SAVE_FUNCTIONS) & check(
        "torchlint.rules.serialization.screens:may_flag_tl604")
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
        if wrapper is None:
            # wrapped in every branch of an if/elif/else: .module exists on every path
            wrapper = self._wrapped_on_every_path(name)
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

    def _wrapped_on_every_path(self, name: str) -> str | None:
        """The wrapper when the statement that last binds ``name`` before the save (in the
        save's block, or the blocks around it within the function) is an
        ``if``/``elif``/``else`` whose every branch ends by wrapping it."""
        ancestors = self.context.ancestors
        for index in range(len(ancestors) - 1, 0, -1):
            statement, block = ancestors[index], ancestors[index - 1]
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if not isinstance(block, (cst.IndentedBlock, cst.Module)):
                continue
            body = list(block.body)
            position = next((i for i, s in enumerate(body) if s is statement), None)
            if position is None:
                continue
            for previous in reversed(body[:position]):
                if binds_anywhere(previous, name):
                    return self._every_branch_wraps(previous, name) if isinstance(
                        previous, cst.If) else None
        return None

    def _every_branch_wraps(self, node: cst.If, name: str) -> str | None:
        found: list[str] = []
        branch: cst.If | cst.Else | None = node
        while branch is not None:
            wrapper = self._ends_wrapping(branch.body, name)
            if wrapper is None:
                return None
            found.append(wrapper)
            if isinstance(branch, cst.Else):
                return found[0]
            branch = branch.orelse
        return None  # no else: one path leaves it unwrapped

    def _ends_wrapping(self, block: cst.BaseSuite, name: str) -> str | None:
        for statement in reversed(list(getattr(block, "body", ()))):
            if not binds_anywhere(statement, name):
                continue
            assign: cst.CSTNode = statement
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                assign = statement.body[0]
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(
                        assign.targets[0].target, cst.Name) and (
                    assign.targets[0].target.value == name):
                return self._wrapper(assign.value)
            return None
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
