from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import (
    code,
    dotted_name,
    iter_nodes,
    last_name_part,
    method_call,
    self_attribute,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check
from torchlint.rule import Rule
from torchlint.rules.modules.forward_calls import (
    Place,
    defines_call,
    is_dummy_input,
    is_warm_up,
    module_receiver,
    patches_forward,
)
from torchlint.rules.modules.module_classes import is_module_class


class ForwardCalledDirectly(Rule):
    """## What it does
    Flags `module.forward(x)`: calling a module's `forward` method by name instead of
    calling the module itself, `module(x)`. It reports only receivers known to be torch
    modules: `self` in a module class (also a subclass of a `torch.nn` layer), its
    attributes and their items (`self.proj`, `self.heads[k]`), names that say model
    (`model`, `net`, `encoder`...), names bound to a layer or to a module class of the
    file, and the items of a loop over a module's `ModuleList` or `children()`.

    It stays silent where calling `forward` is deliberate or harmless: on objects that are
    not torch modules (an OpenCV `dnn` net or another framework's object, a C++/CUDA
    extension's `forward` function, a class that defines its own `__call__`, `self` in a
    plain or ABC class); in code that wraps or replaces `forward` (a function assigning
    `x.forward = ...`, a registered or hook-named function, which must not re-enter the
    hooks); in `__init__` (no hook exists yet), warm-up, benchmark and TorchScript paths
    (`forward_torchscript`, an `if torch.jit.is_scripting():` branch, the items of a sliced
    `ModuleList`, which TorchScript can only call through `forward`); on a dummy input
    (`torch.zeros(...)`, a shape probe); on a module built for the one call
    (`ROIAlign(...).forward(x)`); and in test files.

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
    from torch import nn

    encoder = nn.Linear(16, 8)


    def embed(batch):
        return encoder.forward(batch)
    ```

    Use instead:
    ```python
    from torch import nn

    encoder = nn.Linear(16, 8)


    def embed(batch):
        return encoder(batch)
    ```

    ## Fix safety
    Unsafe: `module(x)` now runs the registered hooks, which can change the result
    (a hook may modify inputs or outputs) or its cost. Classes of the file that define
    their own `__call__` are not reported (the call would mean something else), but a
    class from elsewhere may define one too, so the fix is never applied silently.
    """

    code = "TL107"
    name = "forward-called-directly"
    triggers = ("forward",)
    # an attribute `.forward` (whitespace, backslashes or comment lines may follow the dot);
    # no more: a file may hold module classes deriving from another file's without naming
    # torch or Module
    patterns = (r"\.(?:[\s\\]|#[^\r\n]*[\r\n])*forward\b",)
    requires = check("torchlint.rules.modules.screens:may_flag_tl107")
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
        if not ctx.imports_from("torch") and not ctx.module_class_names:
            return
        if ctx.is_test_file or not self._hook_bypass(node, target):
            return
        shown = code(target)
        fix = None
        if "\n" not in code(attribute) and "#" not in code(attribute):
            # only the callee changes: the arguments keep their own layout
            fix = Fix.unsafe(NodeEdit(attribute, shown))
        self.report(node, fix=fix, receiver=shown if len(shown) <= 40 else "module")

    def _hook_bypass(self, call: cst.Call, target: cst.BaseExpression) -> bool:
        """Is ``target`` a module whose hooks ``call`` skips, where they could matter?"""
        ctx = self.context
        if _is_remote(target):
            return False  # RPC proxies (rref.remote().forward, RemoteModule.forward) have no __call__
        if self._is_script_class(target):
            return False  # torch.classes.* objects (TorchScript custom classes) have no __call__
        if self._is_class(target):
            return False  # Base.forward(self, x): an explicit parent call
        if ctx.qualified_name(target) is not None:
            return False  # an imported module: a C++/CUDA extension's forward function
        place = Place(ctx)
        if patches_forward(ctx, place) or is_dummy_input(ctx, call):
            return False  # wraps or replaces forward; a shape probe or warm-up pass
        own = isinstance(target, cst.Name) and target.value == "self" or (
            self_attribute(target) is not None)
        if own and is_warm_up(place):
            return False  # construction, warm-up and TorchScript paths
        if isinstance(target, cst.Name) and target.value == "self":
            cls = place.cls
            return cls is not None and is_module_class(ctx, cls) and not defines_call(ctx, cls)
        if isinstance(target, cst.Call) and self._is_class(target.func):
            return False  # a module built for this one call: no hook can be registered on it
        return module_receiver(ctx, target, place, call)

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
