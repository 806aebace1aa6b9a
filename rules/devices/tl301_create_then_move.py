from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg, has_keyword, method_call, positional_args
from torchlint.analysis.torch_facts import (
    TENSOR_FACTORIES,
    is_device_like,
    is_dtype,
    is_tensor_factory,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule

_MOVE_KEYWORDS = {"device", "dtype", "non_blocking"}
# factories that only make floating-point (or complex) tensors: ``dtype=<int type>`` fails
_FLOAT_ONLY = frozenset({"rand", "randn", "rand_like", "randn_like", "linspace", "logspace"})
_INTEGER_DTYPES = frozenset({"int", "int8", "int16", "int32", "int64", "long", "short", "uint8",
                             "bool", "uint16", "uint32", "uint64"})
# the leaf names of TENSOR_FACTORIES (zeros|ones|...), for the prefilter
_FACTORIES = "|".join(sorted(q.rsplit(".", 1)[1] for q in TENSOR_FACTORIES))


class CreateThenMove(Rule):
    """## What it does
    Flags a tensor built by a factory (`torch.zeros`, `torch.tensor`, `torch.arange`, ...)
    on the CPU and moved to a device right away with `.cuda()` or `.to(device)`.

    ## Why is this bad?
    The tensor is allocated and filled in host memory, then a second copy is allocated
    on the device and the data crosses the bus. Passing `device=` makes the factory
    allocate where the tensor is needed, once. In a training step this is pure waste
    on every iteration.

    ## Example
    ```python
    import torch

    mask = torch.ones(128, 128).cuda()
    steps = torch.arange(10).to(device)
    ```

    Use instead:
    ```python
    import torch

    mask = torch.ones(128, 128, device="cuda")
    steps = torch.arange(10, device=device)
    ```

    ## Fix safety
    Safe: the device (and a dtype given to `.to`) moves into the factory call, and the
    result is the same tensor on the same device. `.cuda()` becomes `device="cuda"`,
    `.cuda(0)` becomes `device="cuda:0"`.
    """

    code = "TL301"
    name = "create-then-move"
    # factories are torch.* names ("cuda"/".to" missed `torch.zeros(3).` + newline + `to(d)`)
    triggers = ("torch",)
    # a torch import; `.cuda(`/`.to(` right after a call's `)` (or after a comment line);
    # a factory name as attribute (torch.zeros, T.zeros), in an import list, or after a comment
    patterns = (r"\btorch\b",
                r"\)[\s\\)]*\.[\s\\]*(?:cuda|to)[\s\\]*[(#)]"
                r"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*(?:cuda|to)[\s\\]*[(#)]",
                r"\.[\s\\]*(?:" + _FACTORIES + r")\b"
                r"|(?:\bimport|,)[\s\\(]*(?:" + _FACTORIES + r")[ \t\f]*(?:[,)#\\;]|as\b|$)"
                r"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*(?:" + _FACTORIES + r")\b")
    message = "tensor created on the CPU, then moved to {device}; pass device= to the factory"
    fix_safety = "safe"
    fix_title = "Pass device= to the factory"

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "cuda", "to")
        if attribute is None:
            return
        factory = attribute.value
        if not is_tensor_factory(self.context, factory):
            return
        assert isinstance(factory, cst.Call)
        if has_keyword(factory, "device"):
            return
        if attribute.attr.value == "cuda":
            moved = self._cuda_target(node)
        else:
            moved = self._to_target(node, factory)
        if moved is None:
            return
        device, dtype = moved
        shown = self.context.code(device)
        fix = None
        if device is not None and not (dtype is not None and (
            has_keyword(factory, "dtype") or self._dtype_refused(factory, dtype)
        )):
            pairs: list[tuple[str, cst.BaseExpression]] = [("device", device)]
            if dtype is not None:
                pairs.append(("dtype", dtype))
            new = with_keywords(factory, *pairs).with_changes(
                lpar=[*node.lpar, *factory.lpar], rpar=[*factory.rpar, *node.rpar])
            fix = Fix.safe(NodeEdit(node, self.context.code(new)))
        self.report(node, device=shown, fix=fix)

    def _dtype_refused(self, factory: cst.Call, dtype: cst.BaseExpression) -> bool:
        """``torch.randn(3).to(d, torch.long)`` casts; ``torch.randn(3, dtype=torch.long)`` fails.
        """
        factory_name = (self.context.qualified_name(factory.func) or "").rsplit(".", 1)[-1]
        if factory_name not in _FLOAT_ONLY:
            return False
        if not is_dtype(self.context, dtype):
            return True  # x.dtype, a parameter...: it might be an integer type
        return (self.context.qualified_name(dtype) or "").rsplit(".", 1)[-1] in _INTEGER_DTYPES

    def _is_device(self, node: cst.BaseExpression) -> bool:
        """Device-like, or an f-string spelling one (``f"cuda:{rank}"``)."""
        if is_device_like(self.context, node):
            return True
        if isinstance(node, cst.FormattedString) and node.parts and isinstance(
            node.parts[0], cst.FormattedStringText
        ):
            return node.parts[0].value.startswith(("cuda:", "xpu:", "mps:"))
        return False

    def _cuda_target(self, node: cst.Call) -> tuple[cst.BaseExpression, None] | None:
        if any(a.star for a in node.args) or any(
            a.keyword is not None and a.keyword.value not in _MOVE_KEYWORDS for a in node.args
        ):
            return None
        arg = get_arg(node, "device", 0)
        if arg is None:
            return cst.SimpleString('"cuda"'), None
        value = arg.value
        if isinstance(value, cst.Integer):
            return cst.SimpleString(f'"cuda:{value.value}"'), None
        return value, None

    def _to_target(self, node: cst.Call, factory: cst.Call
                   ) -> tuple[cst.BaseExpression, cst.BaseExpression | None] | None:
        if any(a.star for a in node.args) or any(
            a.keyword is not None and a.keyword.value not in _MOVE_KEYWORDS for a in node.args
        ):
            return None
        device_arg = get_arg(node, "device")
        positional = positional_args(node)
        if device_arg is None:
            if not positional or not self._is_device(positional[0].value):
                return None
            device_arg = positional[0]
            rest = positional[1:]
        else:
            rest = positional
        dtype_arg = get_arg(node, "dtype")
        if dtype_arg is None and rest:
            # Tensor.to(device, dtype): whatever follows the device is the dtype
            if len(rest) > 1:
                return None
            dtype_arg = rest[0]
        return device_arg.value, dtype_arg.value if dtype_arg is not None else None
