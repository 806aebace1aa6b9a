from __future__ import annotations

import libcst as cst

from torchlint.analysis.execution import runs_repeatedly
from torchlint.analysis.nodes import get_arg, has_keyword, method_call, positional_args
from torchlint.analysis.torch_facts import is_device_like, is_dtype
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls_method, check
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.devices.factories import (
    DEVICE_FACTORIES,
    FactoryChain,
    draws_with_generator,
    factory_chain,
    in_dead_branch,
    like_source,
    on_host,
    seeded,
)

_MOVE_KEYWORDS = {"device", "dtype", "non_blocking"}
# factories that only make floating-point (or complex) tensors: ``dtype=<int type>`` fails
_FLOAT_ONLY = frozenset({"rand", "randn", "rand_like", "randn_like", "linspace", "logspace"})
_INTEGER_DTYPES = frozenset({"int", "int8", "int16", "int32", "int64", "long", "short", "uint8",
                             "bool", "uint16", "uint32", "uint64"})
# the leaf names of DEVICE_FACTORIES (zeros|ones|...), for the prefilter
_FACTORIES = "|".join(sorted(q.rsplit(".", 1)[1] for q in DEVICE_FACTORIES))


class CreateThenMove(Rule):
    """## What it does
    Flags a tensor built on the CPU by a factory that could have filled it on the device
    (`torch.zeros`, `ones`, `empty`, `full`, `eye`, `arange`, `linspace`, `logspace`,
    `rand`, `randn`, `randint`, `randperm` and the `*_like` forms) and then moved with
    `.cuda()` or `.to(device)`, right away or after conversions that do not depend on the
    device (`.long()`, `.float()`, `.half()`, `.view(...)`, `.unsqueeze(0)`, `.to(dtype)`...).

    It does not flag `torch.tensor(data)` or `torch.as_tensor(data)`: Python data is always
    gathered on the host, and `device=` copies it over just the same. It does not flag a
    random draw that uses an explicit `generator=` or runs where the code seeds the random
    stream (`torch.manual_seed`, `seed_everything`... in the function, its class or the
    module; seeding a generator of its own, `torch.Generator(...).manual_seed(0)`, does not
    count): drawing on the host there is how the values stay the same on every device. A
    `*_like(src)` factory allocates on `src`'s device, so it is flagged only when `src` is
    known to be a host tensor. It does not flag test files (`test_*.py`, files under
    `tests/`): a test builds its small inputs once, and the copy costs nothing.

    Reported by default where the code runs repeatedly: in a loop body (training,
    evaluation, data loading, sampling), in `forward` and the other methods of module classes
    (not their constructors), in functions that run per batch or per request (`__call__`,
    `encode_*`, `decode*`, collate and step functions) and in the functions of the file they
    call or a loop calls. One-off setup (module-level code outside loops, a `__main__` block,
    a function called once) is reported only in preview mode: there the copy happens once
    and costs nothing measurable.

    ## Why is this bad?
    The tensor is allocated and filled in host memory, then a second copy is allocated
    on the device and the data crosses the bus. Passing `device=` makes the factory
    allocate where the tensor is needed, once. In a training step this is pure waste
    on every iteration.

    ## Example
    ```python
    import torch

    for step in range(1000):
        frames = torch.ones((1000, 64, 64)).cuda()
        steps = torch.arange(10).to(device)
        labels = torch.zeros(8).long().cuda()
    ```

    Use instead:
    ```python
    import torch

    for step in range(1000):
        frames = torch.ones((1000, 64, 64), device="cuda")
        steps = torch.arange(10, device=device)
        labels = torch.zeros(8, device="cuda").long()
    ```

    ## Fix safety
    Safe for the deterministic factories: the device (and a dtype given to `.to`) moves into
    the factory call, and the conversions in between stay where they were, now running on
    the device; the result is the same tensor (values, dtype, shape, strides) on the same
    device. `.cuda()` becomes `device="cuda"`, `.cuda(0)` becomes `device="cuda:0"`.
    Unsafe for random factories and random fills (`.uniform_()`, `.normal_()`): the values
    then come from the device's generator, a different stream from the host's. No fix when
    the move also casts after other conversions, when `.expand()` sits in between (the move
    makes the tensor dense, the factory on the device would not), or when a float-only
    factory would receive an integer dtype.
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
    requires = calls_method("cuda", "to") & check("torchlint.rules.devices.screens:may_flag_tl301")
    message = "tensor created on the CPU, then moved to {device}; pass device= to the factory"
    fix_safety = "sometimes"
    fix_title = "Pass device= to the factory"

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "cuda", "to")
        if attribute is None:
            return
        ctx = self.context
        if ctx.is_test_file:
            return  # inputs built once per test: nothing measurable to save
        chain = factory_chain(ctx, attribute.value)
        if chain is None:
            return
        factory = chain.factory
        if has_keyword(factory, "device"):
            return
        if chain.random and (draws_with_generator(factory) or seeded(ctx)):
            return  # values drawn from the host's generator on purpose
        if in_dead_branch(ctx):
            return
        if attribute.attr.value == "cuda":
            moved = self._cuda_target(node)
        else:
            moved = self._to_target(node, factory)
        if moved is None:
            return
        device, dtype = moved
        if chain.leaf.endswith("_like") and not self._like_source_on_host(factory, device, node):
            return
        self.report(node, device=ctx.code(device),
                    fix=self._fix(node, attribute, chain, device, dtype),
                    preview=not runs_repeatedly(ctx))  # set up once: the copy costs nothing

    def _like_source_on_host(self, factory: cst.Call, device: cst.BaseExpression,
                             node: cst.Call) -> bool:
        """``torch.zeros_like(src)`` allocates on ``src``'s device: only a host ``src`` makes
        a host tensor, and moving it to ``src.device`` does nothing."""
        source = like_source(factory)
        if source is None or not on_host(self.context, source, node):
            return False
        spelled = self.context.code(source)
        return self.context.code(device) not in (spelled, f"{spelled}.device")

    def _fix(self, node: cst.Call, attribute: cst.Attribute, chain: FactoryChain,
             device: cst.BaseExpression, dtype: cst.BaseExpression | None) -> Fix | None:
        factory = chain.factory
        if not chain.exact:
            return None
        if dtype is not None and (chain.methods or has_keyword(factory, "dtype")
                                  or self._dtype_refused(factory, dtype)):
            return None  # the dtype would be applied before the conversions, or refused
        pairs: list[tuple[str, cst.BaseExpression]] = [("device", device)]
        if dtype is not None:
            pairs.append(("dtype", dtype))
        built = with_keywords(factory, *pairs)
        receiver = attribute.value
        if receiver is factory:
            new = built.with_changes(lpar=[*node.lpar, *factory.lpar],
                                     rpar=[*factory.rpar, *node.rpar])
        else:
            replaced = receiver.deep_replace(factory, built)
            assert isinstance(replaced, cst.BaseExpression)
            new = replaced.with_changes(lpar=[*node.lpar, *receiver.lpar],
                                        rpar=[*receiver.rpar, *node.rpar])
        edit = NodeEdit(node, self.context.code(new))
        # a random draw moves from the host's generator to the device's: other values
        return Fix.unsafe(edit) if chain.random else Fix.safe(edit)

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
