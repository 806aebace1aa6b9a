"""The safe fixes of the deprecated-API rules (TL701-TL721) keep more than values: each case
here runs the code before and after the fix with real torch on the CPU and compares what a
fix could quietly change besides the values: gradients and ``requires_grad`` (does the
graph flow, and to the same leaves), dtypes (promotion), and aliasing (is the result a
copy or a view of its input: a later in-place write must affect the same tensors).
Run with: python -m pytest -m torch tests/test_fix_execution_migration_exact.py
"""

from __future__ import annotations

import itertools

import pytest
from fix_execution_support import Case, Namespace, params, run_case, same

pytestmark = pytest.mark.torch


def _same_strides(before: Namespace, after: Namespace) -> None:
    """Same values and the same memory layout: a later .view() works (or fails) alike."""
    same(before["result"], after["result"])
    for old, new in zip(before["result"], after["result"]):
        assert old.stride() == new.stride() and old.is_contiguous() == new.is_contiguous()


def _legacy_reduction_cases() -> list[Case]:
    """Every literal combination of size_average= and reduce=, functional and module."""
    calls = []
    for size_average, reduce in itertools.product((None, True, False), repeat=2):
        given = ", ".join(f"{name}={value}" for name, value in (
            ("size_average", size_average), ("reduce", reduce)) if value is not None)
        if given:
            calls += [f"F.mse_loss(a, b, {given})", f"nn.L1Loss({given})(a, b)"]
    body = ",\n    ".join(calls)
    return [Case("TL701", f"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
a, b = torch.randn(4, 3, requires_grad=True), torch.randn(4, 3)
losses = [
    {body},
    # legacy arguments win over reduction= when both are given
    F.mse_loss(a, b, size_average=False, reduction="mean"),
    nn.MSELoss(reduction="none", reduce=True)(a, b),
]
grads = [torch.autograd.grad(loss.sum(), a)[0] for loss in losses]
result = (losses, grads)
""")]


CASES: dict[str, list[Case]] = {
    "TL701": _legacy_reduction_cases(),
    "TL702": [Case("TL702", """
        import torch

        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        model(torch.randn(5, 4)).pow(2).sum().backward()
        grads = [p.grad for p in model.parameters()]  # the same tensors, clipped in place
        norm = torch.nn.utils.clip_grad_norm(model.parameters(), 0.1, norm_type=1.0)
        result = (norm, grads, [p.grad is g for p, g in zip(model.parameters(), grads)])
    """)],
    "TL705": [Case("TL705", """
        import torch

        values = (torch.LongTensor([1.7, -2.2]), torch.ByteTensor([0, 255]),
                  torch.IntTensor([[1, 2], [3, 4]]), torch.BoolTensor([True, False]),
                  torch.HalfTensor([0.1, 65504.0]), torch.DoubleTensor([1e-300]),
                  torch.FloatTensor([]))
        weights = torch.FloatTensor([1.0, 2.0])
        weights.requires_grad_()
        (weights * 3).sum().backward()
        result = (values, [v.is_contiguous() for v in values], weights.grad)
    """)],
    "TL707": [Case("TL707", """
        import torch
        from torch import ger

        torch.manual_seed(0)
        M = torch.randn(4, 4, dtype=torch.float64)
        spd = (M @ M.T + 4 * torch.eye(4, dtype=torch.float64)).requires_grad_()
        a = torch.randn(4, dtype=torch.float64, requires_grad=True)
        b = torch.randn(3, dtype=torch.float64)
        Q, R = torch.qr(spd)
        lower = torch.cholesky(spd)
        upper = torch.cholesky(spd, upper=True)
        outer = ger(a, b)
        chained = torch.chain_matmul(spd, spd, M)
        total = Q.sum() + R.sum() + lower.sum() + (upper * 2).sum() + outer.sum() + chained.sum()
        grads = torch.autograd.grad(total, (spd, a))
        # results are new tensors: writing into one leaves the inputs alone
        outer.detach().zero_()
        result = (Q, R, lower, upper, outer, chained, grads, a)
    """), Case("TL707", """
        import torch

        torch.manual_seed(0)
        M = torch.randn(2, 5, 5, dtype=torch.float64)
        spd = M @ M.mT + 5 * torch.eye(5, dtype=torch.float64)
        into = torch.empty(2, 5, 5, dtype=torch.float64)
        torch.cholesky(spd, upper=True, out=into)
        result = (torch.cholesky(spd, upper=True), torch.cholesky(spd[0], True), into,
                  torch.cholesky(spd))
    """, check=_same_strides)],
    "TL708": [Case("TL708", """
        import torch

        x = torch.tensor([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], requires_grad=True)
        h = torch.tensor([1.0, 2.0], dtype=torch.float16)
        norms = (torch.norm(x), torch.norm(x, dim=1), torch.norm(x, p=1, dim=1, keepdim=True),
                 torch.norm(x, p=float("inf"), dim=1), torch.norm(x, "fro", dim=(0, 1)),
                 torch.norm(h), torch.norm(x, p=3))
        grads = [torch.autograd.grad(n.sum(), x)[0] for n in norms if n.requires_grad]
        result = (norms, grads, [n.dtype for n in norms])
    """)],
    "TL714": [Case("TL714", """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        torch.manual_seed(0)
        x = torch.randn(1, 2, 3, 3, requires_grad=True)
        outs = (F.upsample(x, scale_factor=2), F.upsample_nearest(x, size=5),
                F.upsample_bilinear(x, scale_factor=2), nn.UpsamplingNearest2d(scale_factor=2)(x),
                nn.UpsamplingBilinear2d(size=(4, 4))(x))
        grads = [torch.autograd.grad(o.pow(2).sum(), x)[0] for o in outs]
        result = (outs, grads)
    """)],
    "TL715": [Case("TL715", """
        import torch

        steps = torch.range(0, 6, 2, dtype=torch.float64, requires_grad=True)
        ints = torch.range(1, 4, dtype=torch.int64)
        (steps * 2).sum().backward()
        result = (steps, ints, steps.grad, steps.is_leaf)
    """)],
    "TL721": [Case("TL721", """
        import torch
        import torch.nn.functional as F

        x = torch.linspace(-3, 3, 7, dtype=torch.float64, requires_grad=True)
        s, t = F.sigmoid(x), F.tanh(x)
        grads = torch.autograd.grad((s * t).sum(), x)
        result = (s, t, grads, F.sigmoid(x.detach().half()).dtype)
    """)],
}


@pytest.mark.parametrize("case", params(CASES))
def test_fix_keeps_gradients_dtypes_and_aliasing(case: Case) -> None:
    run_case(case)
