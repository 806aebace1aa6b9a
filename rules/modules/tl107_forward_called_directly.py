from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import code, dotted_name, iter_nodes, last_name_part, method_call
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.rule import Rule


class ForwardCalledDirectly(Rule):
    """## What it does
    Flags `module.forward(x)`: calling a module's `forward` method by name instead of
    calling the module itself, `module(x)`.

    ## Why is this bad?
    `nn.Module.__call__` does more than run `forward`: it runs the forward pre-hooks
    and forward hooks registered with `register_forward_pre_hook` /
    `register_forward_hook` (used by pruning, quantization observers, feature
    extractors, profilers and many libraries), and the backward hooks. Calling
    `forward` directly skips all of them, so those tools silently see nothing.
    `super().forward(...)` inside a subclass's own `forward` is the exception: that is
    how a subclass extends its parent.

    ## Example
    ```python
    import torch
    from torch import nn

    encoder = nn.Linear(16, 8)
    features = encoder.forward(torch.randn(4, 16))
    ```

    Use instead:
    ```python
    import torch
    from torch import nn

    encoder = nn.Linear(16, 8)
    features = encoder(torch.randn(4, 16))
    ```

    ## Fix safety
    Unsafe: `module(x)` now runs the registered hooks, which can change the result
    (a hook may modify inputs or outputs) or its cost. If the object is not a module
    but some other class with a `forward` method and no `__call__`, the fixed code fails.
    """

    code = "TL107"
    name = "forward-called-directly"
    triggers = ("forward",)
    # an attribute `.forward` (whitespace, backslashes or comment lines may follow the dot);
    # a torch import or a module class (nn.Module/LightningModule base)
    patterns = (r"\.(?:[\s\\]|#[^\r\n]*[\r\n])*forward\b", r"\btorch\b|Module\b")
    message = "'{receiver}.forward(...)' bypasses the module's hooks; call '{receiver}(...)'"
    fix_safety = "unsafe"
    fix_title = "Call the module instead of .forward()"

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "forward")
        if attribute is None:
            return
        target = attribute.value
        ctx = self.context
        if isinstance(target, cst.Call):
            callee = ctx.qualified_name(target.func)
            if callee in ("builtins.super", "builtins.type") or last_name_part(
                target.func) in ("super", "type"):
                return
        if _is_remote(target):
            return  # RPC proxies (rref.remote().forward, RemoteModule.forward) have no __call__
        if self._is_script_class(target):
            return  # torch.classes.* objects (TorchScript custom classes) have no __call__
        if self._is_class(target):
            return  # Base.forward(self, x): an explicit parent call
        if not ctx.imports_from("torch") and not ctx.module_class_names:
            return
        shown = code(target)
        fix = None
        if "\n" not in code(attribute) and "#" not in code(attribute):
            # only the callee changes: the arguments keep their own layout
            fix = Fix.unsafe(NodeEdit(attribute, shown))
        self.report(node, fix=fix, receiver=shown if len(shown) <= 40 else "module")

    def _is_script_class(self, target: cst.BaseExpression) -> bool:
        """``self.X`` that the class sets to ``torch.classes.ns.Cls()`` somewhere."""
        attr = dotted_name(target)
        cls = self.context.enclosing_class()
        if attr is None or not attr.startswith("self.") or cls is None:
            return False
        for node in iter_nodes(cls.body):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) and any(
                    dotted_name(t.target) == attr for t in node.targets):
                qual = self.context.qualified_name(node.value.func) or ""
                if qual.startswith(_CUSTOM_CLASS_ROOTS):
                    return True
        return False

    def _is_class(self, target: cst.BaseExpression) -> bool:
        ctx = self.context
        name = last_name_part(target)
        if not isinstance(target, (cst.Name, cst.Attribute)) or name is None:
            return False
        if ctx.local_module_class(target) is not None:
            return True
        qual = ctx.qualified_name(target)
        if qual is not None and qual.rsplit(".", 1)[-1][:1].isupper():
            return True
        return name[:1].isupper() and not name.isupper()


_CUSTOM_CLASS_ROOTS = ("torch.classes.", "torch.ops.")


_REMOTE_METHODS = ("remote", "rpc_async", "rpc_sync")


def _is_remote(target: cst.BaseExpression) -> bool:
    if method_call(target, *_REMOTE_METHODS) is not None:
        return True
    name = (last_name_part(target) or "").lower()
    return "remote" in name or "rref" in name
