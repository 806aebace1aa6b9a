from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import bound_names
from torchlint.analysis.nodes import (
    get_arg,
    is_literal_true,
    iter_nodes,
    self_attribute,
    single_target,
    string_value,
)
from torchlint.analysis.torch_facts import TENSOR_FACTORIES, is_tensor_factory
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, self_store_call
from torchlint.rule import Rule
from torchlint.rules.modules.module_classes import is_module_class
from torchlint.rules.modules.tensor_attributes import (
    alternatives,
    is_reshaping,
    may_be_scalar,
    read_when_computing,
    updated_when_computing,
)
from torchlint.rules.patterns import ASSIGNED, DOTTED, GAP

# methods that turn a tensor into another tensor (so a chain on a factory is still a tensor)
_TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "view", "reshape",
    "unsqueeze", "squeeze", "t", "transpose", "permute", "expand", "repeat", "flatten",
    "contiguous", "clone", "cuda", "to", "cpu", "mul", "add", "div", "sub", "sqrt", "exp",
    "log", "triu", "tril", "neg", "abs", "reciprocal", "unfold", "flip", "__neg__",
})
# calls that make a tensor besides the matchers' factories
_MORE_FACTORIES = frozenset({
    "torch.from_numpy", "torch.normal", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
    "torch.BoolTensor", "torch.tril_indices", "torch.triu_indices",
})
# attributes a framework handles itself (Lightning moves example_input_array)
_FRAMEWORK_ATTRIBUTES = frozenset({"example_input_array"})
# using these on the attribute means the author moves it to the right device by hand
_MOVES = frozenset({"to", "cuda", "cpu", "type_as"})
# prefilter piece: the factories' own names (zeros|tensor|...)
_FACTORY_NAMES = "|".join(sorted({q.rsplit(".", 1)[1] for q in TENSOR_FACTORIES
                                  | _MORE_FACTORIES}, key=lambda n: (-len(n), n)))


class TensorAttributeNotRegistered(Rule):
    """## What it does
    Flags a tensor created with a factory (`torch.zeros`, `torch.tensor`, `torch.arange`,
    ...) in a module's `__init__` and stored as a plain attribute, neither registered as a
    buffer nor wrapped in `nn.Parameter`, when the module's computation reads it: `forward`,
    a Lightning step (`training_step`...), or a method they call on `self`. The module
    may derive from `nn.Module`, from a `torch.nn` layer (`class ScaledNorm(nn.BatchNorm2d)`)
    or from a module class of the file or the project; the tensor may be stored directly or
    through a local name (`mask = torch.ones(n, n).triu()`, then `self.mask = mask`).

    Not flagged: an attribute only read elsewhere (CPU-side sampling, a `collate_fn`) or
    never read; one moved by hand where it is used (`.to(...)`, `.cuda()`, `.type_as(...)`,
    `device=`), unless the computation also updates it from its old value (a running
    statistic: moving it does not save it); a tensor created with an explicit `device=`; `torch.tensor(x)` whose data
    may be a single number (a config value, `dim ** -0.5`): a 0-d CPU tensor works with
    tensors on any device, and a constant of the configuration need not be saved (data
    that is visibly a list, array or reshaped tensor is reported); and test files.

    ## Why is this bad?
    `nn.Module` tracks parameters, buffers and submodules; a plain tensor attribute is
    none of them. `model.to(device)`, `.cuda()` and `.half()` leave it where it was, so
    the first forward pass on the GPU fails with a device mismatch, and it is missing
    from `state_dict()`, so saving and loading silently drop it. Constants such as
    normalisation statistics or masks belong in `self.register_buffer(...)`.

    ## Example
    ```python
    import torch
    from torch import nn


    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)

        def forward(self, x):
            return x - self.mean
    ```

    Use instead:
    ```python
    import torch
    from torch import nn


    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1))

        def forward(self, x):
            return x - self.mean
    ```

    ## Fix safety
    Unsafe: `self.X = value` becomes `self.register_buffer("X", value)`. The tensor now
    follows `.to()`/`.cuda()`, but it also appears in `state_dict()`, so checkpoints saved
    before the change no longer load with `strict=True` (pass `persistent=False` if it
    should stay out). No fix is offered when the tensor has `requires_grad=True`: it was
    meant to be a learnable `nn.Parameter`.
    """

    code = "TL104"
    name = "tensor-attribute-not-registered"
    triggers = ("__init__",)
    # `self.X =` in a `def __init__`; a torch import (the class may derive from a layer or
    # from a module class of another file, so `Module` need not be named); the stored value starts
    # with the factory (chained methods come after it): `= torch.zeros`, `= (th . zeros`,
    # `= zeros` (from torch import zeros), or the factory is imported under an alias (`as Z`)
    patterns = (r"\bself\b", r"\bdef[\s\\]+__init__\b", r"\btorch\b",
                ASSIGNED + DOTTED + r"(?:" + _FACTORY_NAMES + r")\b"
                r"|\b(?:" + _FACTORY_NAMES + r")" + GAP + r"+as\b")
    requires = self_store_call(*TENSOR_FACTORIES, *_MORE_FACTORIES, methods=("__init__",)) & (
        check("torchlint.rules.modules.screens:may_flag_tl104"))
    message = ("tensor stored as plain attribute `self.{attr}`: it will not follow .to()/.cuda() "
               "nor be saved; use register_buffer or nn.Parameter")
    fix_safety = "unsafe"
    fix_title = "Register it as a buffer"

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        """``self.scale: Tensor = torch.tensor(...)``"""
        if node.value is None:
            return
        found = self._finding(node)
        if found is None:
            return
        attr, fixable = found
        fix = Fix.unsafe(NodeEdit(node, f'self.register_buffer("{attr}", '
                                        f'{self.context.code(node.value)})')) if fixable else None
        self.report(node.target, fix=fix, attr=attr)

    def visit_Assign(self, node: cst.Assign) -> None:
        found = self._finding(node)
        if found is None:
            return
        attr, fixable = found
        fix = None
        if fixable:
            fix = Fix.unsafe(
                NodeEdit(node.targets[0], f'self.register_buffer("{attr}", '),
                NodeEdit(node.value, ")", "insert_after"),
            )
        self.report(node.targets[0].target, fix=fix, attr=attr)

    def _finding(self, node: cst.Assign | cst.AnnAssign) -> tuple[str, bool] | None:
        """(attribute, fixable) when ``node`` stores an unregistered factory tensor."""
        attr = self_attribute(single_target(node))
        if attr is None or attr in _FRAMEWORK_ATTRIBUTES or not self._in_module_init():
            return None
        assert node.value is not None
        ctx = self.context
        if ctx.is_test_file:
            return None  # test modules are built to check behaviour, often on purpose
        found = self._factory(node.value)
        if found is None and isinstance(node.value, cst.Name):
            # ``mask = torch.ones(n, n).triu(); ...; self.mask = mask``
            bound = ctx.binding(node.value.value, node)
            if bound is not None and bound.kind == "assign" and bound.value is not None:
                found = self._factory(bound.value)
        if found is None:
            return None
        factory, reshaped = found
        if get_arg(factory, "device") is not None or may_be_scalar(ctx, factory, reshaped, node):
            return None  # placed on a chosen device, or a 0-d constant usable on any device
        cls = ctx.enclosing_class()
        if cls is None or not read_when_computing(ctx, cls, attr) or self._handled_elsewhere(
                cls, attr, node):
            return None  # never read by forward: kept for CPU-side work, or dead
        grad = get_arg(factory, "requires_grad")
        fixable = (grad is None or not is_literal_true(grad.value)) and self._can_register(
            cls, attr)
        return attr, fixable

    def _in_module_init(self) -> bool:
        """In ``__init__`` of a module class: one deriving from ``nn.Module``, a ``torch.nn``
        layer (``class MyNorm(nn.BatchNorm2d)``) or a module class of the file or project."""
        function = self.context.current_function
        if function is None or function.name.value != "__init__":
            return False
        cls = self.context.enclosing_class()
        return cls is not None and is_module_class(self.context, cls)

    def _factory(self, value: cst.BaseExpression) -> tuple[cst.Call, bool] | None:
        """The factory call a stored value starts with, and whether the chain reshapes it."""
        reshaped = False
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            value.func.attr.value in _TENSOR_METHODS
        ) and not self._is_factory(value):
            reshaped |= is_reshaping(value.func.attr.value)
            value = value.func.value
        if self._is_factory(value):
            assert isinstance(value, cst.Call)
            return value, reshaped
        return None

    def _is_factory(self, value: cst.BaseExpression) -> bool:
        return is_tensor_factory(self.context, value) or (
            isinstance(value, cst.Call) and self.context.qualified_name(value.func) in _MORE_FACTORIES)

    def _can_register(self, cls: cst.ClassDef, attr: str) -> bool:
        """register_buffer needs Module.__init__ to have run and the name to be free."""
        for stmt in cls.body.body:
            if isinstance(stmt, cst.SimpleStatementLine) and any(
                attr in bound_names(small) for small in stmt.body
                if not (isinstance(small, cst.AnnAssign) and small.value is None)
            ):  # (a bare annotation ``mask: Tensor`` creates no class attribute)
                return False  # a class attribute of that name: register_buffer refuses it
        function = self.context.current_function
        if function is None or not isinstance(function.body, cst.IndentedBlock):
            return False
        statements = list(function.body.body)
        here = next((i for i, s in enumerate(statements)
                     if any(a is s for a in self.context.ancestors)), None)
        init = next((i for i, s in enumerate(statements) if _calls_parent_init(s)), None)
        return here is not None and init is not None and init < here

    def _handled_elsewhere(self, cls: cst.ClassDef, attr: str,
                           stored: cst.Assign | cst.AnnAssign) -> bool:
        """register_buffer/register_parameter("attr"), an nn.Parameter, or a manual move
        (which does not save a state the computation updates: a running statistic)."""
        updated = updated_when_computing(self.context, cls, attr)
        init = self.context.current_function
        assignments = 0
        for node in iter_nodes(cls.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                method = node.func.attr.value
                if method in ("register_buffer", "register_parameter") and node.args and (
                    string_value(node.args[0].value) == attr
                ):
                    return True
                if method in _MOVES and self_attribute(node.func.value) == attr and not updated:
                    return True
            if isinstance(node, cst.Call) and get_arg(node, "device") is not None and any(
                    self_attribute(a.value) == attr for a in node.args) and not updated:
                return True  # torch.as_tensor(self.X, device=x.device): moved where used
            elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) \
                    else [node.target]
                if any(self_attribute(t) == attr for t in targets):
                    if updated and _is_move_of(node.value, attr):
                        continue  # self.X = self.X.to(x.device) before updating it
                    if init is not None and node is not stored and alternatives(
                            init, stored, node):
                        continue  # the other branch of an if in __init__ stores something else
                    assignments += 1
                    value = node.value
                    if isinstance(value, cst.Call) and (
                        self.context.qualified_name(value.func) in (
                            "torch.nn.Parameter", "torch.nn.parameter.Parameter")
                    ):
                        return True
        return assignments > 1


def _is_move_of(value: cst.BaseExpression | None, attr: str) -> bool:
    """``self.<attr>.to(...)``, ``.cuda()``, ``.cpu()``, ``.type_as(...)``."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
        value.func.attr.value in _MOVES) and self_attribute(value.func.value) == attr


def _calls_parent_init(stmt: cst.CSTNode) -> bool:
    for node in iter_nodes(stmt):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value == "__init__"
        ):
            return True
    return False
