"""Safe fixes of the deprecated-API rules TL707-TL717 and TL721, proven by execution: each
case runs before and after the fix with real torch on the CPU and must leave the same
``result`` (values, dtypes, shapes). Run with:
python -m pytest -m torch tests/test_fix_execution_migration_ext.py
"""

from __future__ import annotations

import pytest
from fix_execution_support import Case, Namespace, params, run_case, same, torch

pytestmark = pytest.mark.torch


def _default_dtype_set(before: Namespace, after: Namespace) -> None:
    same(before["result"], after["result"])
    assert before["result"][0] == after["result"][0] == torch.float64
    assert torch.get_default_dtype() == torch.float32  # each case put it back


def _same_backends(before: Namespace, after: Namespace) -> None:
    same(before["result"], after["result"])
    assert before["enabled"] == after["enabled"]
    assert before["after"] == after["after"] == {"flash": True, "efficient": True,
                                                 "math": True, "cudnn": True}


CASES: dict[str, list[Case]] = {
    "TL707": [
        Case("TL707", """
            import torch
            from torch import ger

            torch.manual_seed(0)
            A = torch.randn(5, 3, dtype=torch.float64)
            a, b = torch.randn(4), torch.randn(3)
            Q, R = torch.qr(A)
            complete = torch.qr(A, some=False)
            reduced = torch.qr(A, True)
            result = (Q, R, complete.Q, complete.R, reduced.Q, reduced.R, torch.ger(a, b),
                      ger(b, a))
        """),
        Case("TL707", """
            import torch

            torch.manual_seed(0)
            M = torch.randn(4, 4, dtype=torch.float64)
            spd = M @ M.T + 4 * torch.eye(4, dtype=torch.float64)
            batch = torch.stack([spd, 2 * spd])
            result = (torch.cholesky(spd), torch.cholesky(spd, upper=True),
                      torch.cholesky(batch, True), torch.cholesky(batch, upper=False))
        """),
        Case("TL707", """
            import torch

            torch.manual_seed(0)
            A, B, C = torch.randn(3, 4), torch.randn(4, 5), torch.randn(5, 2)
            result = (torch.chain_matmul(A, B, C), torch.chain_matmul(A, B))
        """),
        Case("TL707", """
            import torch

            torch.manual_seed(0)
            A = torch.randn(2, 4, 4, dtype=torch.float64)
            b = torch.randn(2, 4, 3, dtype=torch.float64)
            LU, pivots = torch.linalg.lu_factor(A)
            result = torch.lu_solve(b, LU, pivots)
        """),
    ],
    "TL708": [
        Case("TL708", """
            import math
            import torch

            torch.manual_seed(0)
            x = torch.randn(3, 4, 5, dtype=torch.float64)
            result = (
                torch.norm(x),
                torch.norm(x, p=2, dim=1),
                torch.norm(x, 1, -1, True),
                torch.norm(x, p="fro", dim=(0, 1)),
                torch.norm(x, "fro", [1, 2], keepdim=True),
                torch.norm(x, "fro", 2),
                torch.norm(x, p=float("inf"), dim=[0]),
                torch.norm(x, -math.inf, keepdim=True),
                torch.norm(x, p=torch.inf),
                torch.norm(x, 0),
                torch.norm(x, 0.5, dim=2),
                torch.norm(x.float(), p=3, dtype=torch.float64),
                torch.norm(x, p="nuc", dim=(1, 2)),
                torch.norm(x, "nuc", [0, 2], True),
            )
        """),
        Case("TL708", """
            import torch
            from torch import norm

            torch.manual_seed(0)
            v = torch.randn(6, requires_grad=True)
            n = norm(v, 2)
            n.backward()
            result = (n, v.grad)
        """),
    ],
    "TL712": [
        Case("TL712", """
            import torch
            from functorch import grad, vmap, grad_and_value, hessian

            def f(x):
                return (x.sin() * x).sum()

            x = torch.linspace(-1, 1, 5, dtype=torch.float64)
            result = (vmap(torch.sin)(x.reshape(5, 1)), grad(f)(x), grad_and_value(f)(x),
                      hessian(f)(x))
        """),
        Case("TL712", """
            import torch
            import functorch

            def f(x):
                return x.sin() * x

            x = torch.linspace(-1, 1, 4, dtype=torch.float64)
            t = torch.ones(4, dtype=torch.float64)
            out, vjp_fn = functorch.vjp(f, x)
            result = (functorch.jvp(f, (x,), (t,)), out, vjp_fn(t),
                      functorch.jacrev(f)(x), functorch.jacfwd(f)(x),
                      functorch.functionalize(f)(x))
        """),
    ],
    "TL713": [Case("TL713", """
        import torch
        import torch.nn.functional as F

        def backends():
            return {"flash": torch.backends.cuda.flash_sdp_enabled(),
                    "efficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
                    "math": torch.backends.cuda.math_sdp_enabled(),
                    "cudnn": torch.backends.cuda.cudnn_sdp_enabled()}

        torch.manual_seed(0)
        q, k, v = torch.randn(3, 2, 4, 8, 16).unbind(0)
        with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False,
                                            enable_cudnn=False):
            enabled = backends()
            out = F.scaled_dot_product_attention(q, k, v)
        after = backends()
        result = out
    """, _same_backends)],
    "TL714": [Case("TL714", """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn import UpsamplingBilinear2d

        torch.manual_seed(0)
        x = torch.randn(1, 2, 5, 7)
        result = (
            F.upsample(x, scale_factor=2),
            F.upsample(x, size=(9, 4), mode="bilinear", align_corners=False),
            F.upsample_nearest(x, scale_factor=3),
            F.upsample_nearest(x, (8, 8)),
            F.upsample_bilinear(x, scale_factor=2),
            F.upsample_bilinear(x, size=(3, 11)),
            nn.UpsamplingNearest2d(scale_factor=2)(x),
            nn.UpsamplingNearest2d(size=(6, 6))(x),
            UpsamplingBilinear2d(scale_factor=1.5)(x),
            nn.UpsamplingBilinear2d((10, 3))(x),
        )
    """)],
    "TL715": [Case("TL715", """
        import torch

        result = (torch.range(0, 9, dtype=torch.long), torch.range(1, 10, 3, dtype=torch.float32),
                  torch.range(-5, -1, step=2, dtype=torch.int32),
                  torch.range(2, 6, dtype=torch.float64, requires_grad=True))
    """)],
    "TL716": [Case("TL716", """
        import torch

        torch.set_default_tensor_type(torch.DoubleTensor)
        result = (torch.get_default_dtype(), torch.tensor([1.5]), torch.zeros(2),
                  torch.ones(2, dtype=torch.float32))
        torch.set_default_dtype(torch.float32)
    """, _default_dtype_set)],
    "TL717": [
        Case("TL717", """
            import torch

            torch.manual_seed(0)
            a, b = torch.randn(8, 8), torch.randn(8, 8)
            with torch.cpu.amp.autocast():
                default = a @ b
            with torch.cpu.amp.autocast(True, torch.bfloat16):
                positional = a @ b
            with torch.cpu.amp.autocast(enabled=False):
                off = a @ b
            scaler = torch.cpu.amp.GradScaler(2.0 ** 8, 3.0, enabled=True)
            result = (default, positional, off, scaler.is_enabled(), scaler.get_scale(),
                      scaler.get_growth_factor())
        """),
        Case("TL717", """
            import torch
            from torch.cuda.amp import custom_bwd, custom_fwd

            class Cube(torch.autograd.Function):
                @staticmethod
                @custom_fwd(cast_inputs=torch.float64)
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return x ** 3

                @staticmethod
                @custom_bwd
                def backward(ctx, grad):
                    (x,) = ctx.saved_tensors
                    return 3 * x ** 2 * grad

            class Twice(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd()
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                @torch.cuda.amp.custom_bwd
                def backward(ctx, grad):
                    return grad * 2

            x = torch.linspace(-1, 1, 5, requires_grad=True)
            y = Cube.apply(x) + Twice.apply(x)
            y.sum().backward()
            result = (y, x.grad)
        """),
    ],
    "TL721": [Case("TL721", """
        import torch
        import torch.nn.functional as F
        from torch.nn.functional import tanh

        torch.manual_seed(0)
        x = torch.randn(5, requires_grad=True)
        y = F.sigmoid(x) * tanh(x) + F.tanh(input=x)
        y.sum().backward()
        result = (y, x.grad)
    """)],
}

PARAMS = params(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_fix_keeps_behaviour(case: Case) -> None:
    run_case(case)
