"""Safe fixes proven by execution: run the code before and after the fix with real torch.

Each case is a small program that leaves its outcome in ``result``. The fix must apply,
and both versions run on the CPU (``"cuda"`` is rewritten to ``"cpu"`` in both when the
case asks for it). Most rules promise the very same values, dtypes, shapes and registered
parameters; rules that fix a bug promise a documented difference, checked by the case's own
``check``. Run with: python -m pytest -m torch tests/test_fix_execution.py
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fix_execution_support import Case, Namespace, all_case_codes, params, run_case, same, torch

pytestmark = pytest.mark.torch


def _registered_more(before: Namespace, after: Namespace) -> None:
    """Bug-fix rules TL101/TL102: same forward results, the hidden layers now registered."""
    b, a = before["model"], after["model"]
    same(before["result"], after["result"])
    names_b, names_a = set(dict(b.named_parameters())), set(dict(a.named_parameters()))
    assert names_b < names_a
    assert len(list(a.parameters())) == after["expected_parameters"]


def _modulelist_nested(before: Namespace, after: Namespace) -> None:
    grid = after["grid"]
    assert len(list(grid.parameters())) == 2 * 3 * 2
    same(after["result"], after["expected"])


def _expand_clone(before: Namespace, after: Namespace) -> None:
    # before: the write leaks into every row and into the source; after: one element
    assert before["row"][0, 0].item() == 1.0 and before["grid"][2, 0].item() == 1.0
    assert after["row"].sum().item() == 0.0
    expected = torch.zeros(3, 4)
    expected[0, 0] = 1.0
    same(after["grid"], expected)


def _eval_called(before: Namespace, after: Namespace) -> None:
    assert before["result"] is True and after["result"] is False


def _dropout_training(before: Namespace, after: Namespace) -> None:
    same(before["train_out"], after["train_out"])  # training: the same draw, same values
    same(after["eval_out"], after["deterministic"])  # eval: no dropout any more
    assert not torch.equal(before["eval_out"], before["deterministic"])


def _same_layout(before: Namespace, after: Namespace) -> None:
    same(before["result"], after["result"])
    for a, b in zip(before["result"], after["result"]):
        assert a.stride() == b.stride() and a.is_contiguous() == b.is_contiguous()


def _reshape_where_view_failed(before: Namespace, after: Namespace) -> None:
    same(after["result"], after["expected"])


CASES: dict[str, list[Case]] = {
    "TL002": [Case("TL002", """
        import torch

        x = torch.ones(2)  # noqa: TL001
        y = x * 2  # noqa: TL001  # the comment's words stay
        result = (x, y)
    """)],
    "TL101": [Case("TL101", """
        import torch
        import torch.nn as nn

        class Tower(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                self.blocks = [nn.Linear(width, width) for _ in range(depth)]
                self.out = nn.Linear(width, 1)

            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return self.out(x)

        torch.manual_seed(0)
        model = Tower(4, 3)
        result = model(torch.ones(2, 4))
        expected_parameters = 2 * 3 + 2
    """, _registered_more)],
    "TL102": [Case("TL102", """
        import torch
        from torch import nn

        class MultiHead(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.heads = {"a": nn.Linear(width, 1), "b": nn.Linear(width, 2)}

            def forward(self, x):
                return [self.heads[k](x) for k in sorted(self.heads)]

        torch.manual_seed(0)
        model = MultiHead(4)
        result = model(torch.ones(3, 4))
        expected_parameters = 4
    """, _registered_more)],
    "TL103": [Case("TL103", """
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        grid = nn.ModuleList([[nn.Linear(8, 8) for _ in range(3)] for _ in range(2)])
        x = torch.ones(1, 8)
        result = grid[1][2](x)
        expected = torch.nn.functional.linear(x, grid[1][2].weight, grid[1][2].bias)
    """, _modulelist_nested, before_raises=TypeError)],
    "TL207": [Case("TL207", """
        import torch

        row = torch.zeros(1, 4)
        grid = row.expand(3, 4)
        grid[0, 0] = 1.0
    """, _expand_clone)],
    "TL301": [
        Case("TL301", """
            import torch

            device = torch.device("cpu")
            for step in range(2):
                mask = torch.ones(4, 4).to(device)
                steps = torch.arange(10).to(device, dtype=torch.float64)
                full = torch.full((2, 3), 7).to(device)
            result = (mask, steps, full)
        """),
        Case("TL301", """
            import torch

            for step in range(2):
                mask = torch.ones(4, 4).cuda()
                ids = torch.tensor([1, 2, 3]).cuda()
            result = (mask, ids)
        """, cpu=True),
        Case("TL301", """
            import torch

            device = torch.device("cpu")
            for step in range(2):
                labels = torch.zeros(3).long().cuda()
                scale = torch.ones(4).view(1, 4, 1, 1).to(device)
                pos = torch.arange(5).unsqueeze(0).float().to(device=device)
                grid = torch.arange(6).view(2, 3).t().half().to(device)
                filled = torch.empty(2).fill_(3).repeat(2).to(torch.int64).to(device)
            result = (labels, scale, pos, grid, filled)
        """, _same_layout, cpu=True),
    ],
    "TL302": [Case("TL302", """
        import torch

        def step(loader, device):
            seen = []
            for images, labels in loader:
                images.to(device)
                seen.append(images.sum())
            return seen

        result = step([(torch.ones(2, 3), torch.zeros(2))], torch.device("cpu"))
    """)],
    "TL308": [Case("TL308", """
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def run(dataset, device):
            loader = DataLoader(dataset, batch_size=2, pin_memory=True)
            out = []
            for images, labels in loader:
                images = images.to(device)
                out.append(images * 2)
            return out

        torch.manual_seed(0)
        data = TensorDataset(torch.randn(6, 3), torch.arange(6))
        result = run(data, torch.device("cpu"))
    """)],
    "TL404": [Case("TL404", """
        import torch

        model = torch.nn.Linear(4, 2)
        model.eval
        result = model.training
    """, _eval_called)],
    "TL405": [Case("TL405", """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 4)

            def forward(self, x):
                return self.fc(F.dropout(x, p=0.5))

        torch.manual_seed(0)
        head = Head()
        x = torch.ones(8, 16)
        torch.manual_seed(1)
        train_out = head(x)
        head.eval()
        torch.manual_seed(1)
        eval_out = head(x)
        deterministic = head.fc(x)
    """, _dropout_training)],
    "TL501": [
        Case("TL501", """
            import torch

            torch.manual_seed(0)
            x = torch.randn(1, 4, 1)
            result = x.permute(0, 2, 1).view(-1)
        """),
        Case("TL501", """
            import torch

            torch.manual_seed(0)
            x = torch.randn(8, 16, 32)
            result = x.permute(0, 2, 1).view(8, -1)
            expected = x.permute(0, 2, 1).contiguous().view(8, -1)
        """, _reshape_where_view_failed, before_raises=RuntimeError),
        Case("TL501", """
            import torch

            torch.manual_seed(0)
            x = torch.randn(2, 3, 4, 5)
            b, c, h, w = x.shape
            result = x.permute(0, 2, 3, 1).view(b, h, w * c)
            expected = x.permute(0, 2, 3, 1).contiguous().view(b, h, w * c)
        """, _reshape_where_view_failed, before_raises=RuntimeError),
    ],
    "TL701": [Case("TL701", """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        torch.manual_seed(0)
        a, b = torch.randn(4, 3), torch.randn(4, 3)
        result = (
            nn.MSELoss(size_average=False)(a, b),
            nn.L1Loss(reduce=False)(a, b),
            F.mse_loss(a, b, size_average=True),
            nn.SmoothL1Loss(size_average=False, reduce=True)(a, b),
        )
    """)],
    "TL702": [Case("TL702", """
        import torch

        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        model(torch.randn(5, 4)).pow(2).sum().backward()
        norm = torch.nn.utils.clip_grad_norm(model.parameters(), max_norm=0.1)
        result = (norm, [p.grad for p in model.parameters()])
    """)],
    "TL703": [Case("TL703", """
        import warnings
        import torch
        from torch.cuda.amp import autocast, GradScaler

        warnings.simplefilter("ignore")
        scaler = GradScaler(init_scale=128.0)
        with autocast(dtype=torch.float16):
            y = torch.ones(2, 2) @ torch.ones(2, 2)
        with torch.cuda.amp.autocast(enabled=False):
            z = torch.ones(3) * 2
        result = (scaler.is_enabled(), y, z)
    """)],
    "TL704": [Case("TL704", """
        import torch
        from torch.autograd import Variable

        torch.manual_seed(0)
        weights = Variable(torch.randn(3, 3), requires_grad=True)
        plain = Variable(torch.ones(2))
        result = (weights, plain)
    """),
        # Variable(h) is h.detach(): the fix keeps the graph cut where h carries one
        Case("TL704", """
            import torch
            from torch.autograd import Variable

            torch.manual_seed(0)
            a = torch.randn(3, requires_grad=True)
            h = a * 2
            cut = Variable(h)
            leaf = Variable(h * 3, requires_grad=True)
            (cut * leaf).sum().backward()
            result = (cut, leaf, cut.grad_fn is None, leaf.is_leaf, leaf.grad, a.grad)
        """),
        # Variable(x, requires_grad=True) makes a new leaf: x itself keeps requires_grad=False
        Case("TL704", """
            import torch
            from torch.autograd import Variable

            x = torch.ones(3)
            weights = Variable(x, requires_grad=True)
            (weights * 2).sum().backward()
            result = (x.requires_grad, weights.requires_grad, weights.grad, x.grad)
        """),
    ],
    "TL705": [
        Case("TL705", """
            import torch

            result = (torch.LongTensor([0, 2, 1]), torch.FloatTensor([[1.5, 2.0]]),
                      torch.ByteTensor((1, 0)), torch.DoubleTensor([1, 2]))
        """),
        Case("TL705", """
            import torch

            result = torch.cuda.FloatTensor([1.0, 2.0])
        """, cpu=True),
    ],
}

PARAMS = params(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_fix_keeps_behaviour(case: Case) -> None:
    run_case(case)


def test_every_safe_fix_rule_has_a_case() -> None:
    """A rule with a safe fix that no case runs is a fix nobody has executed."""
    listing = subprocess.run([sys.executable, "-m", "torchlint", "rules", "--format", "json"],
                             capture_output=True, text=True, check=True).stdout
    safe = {r["code"] for r in json.loads(listing) if r["fix"] in ("safe", "sometimes")}
    missing = sorted(safe - all_case_codes())
    assert not missing, f"safe-fix rules without an execution case: {missing}"
