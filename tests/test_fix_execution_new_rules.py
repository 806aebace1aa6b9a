"""Safe fixes of the second-extension rules, proven by execution with real torch on the CPU.

TL108 fixes a bug, so its cases check the promised difference: before the fix the moved or
cast attribute is a plain non-leaf tensor missing from ``parameters()`` and ``state_dict()``;
after it, the same values (dtype, shape, device) are a registered, trainable parameter.
Run with: python -m pytest -m torch tests/test_fix_execution_new_rules.py
"""

from __future__ import annotations

import pytest
from fix_execution_support import Case, Namespace, params, run_case, same, torch

pytestmark = pytest.mark.torch


def _registered_after_fix(before: Namespace, after: Namespace) -> None:
    old, new = before["model"], after["model"]
    for name in before["moved"]:
        value_before, value_after = getattr(old, name), getattr(new, name)
        assert name not in dict(old.named_parameters()) and name not in old.state_dict()
        assert not value_before.is_leaf and value_before.grad_fn is not None
        assert name in dict(new.named_parameters()) and name in new.state_dict()
        assert isinstance(value_after, torch.nn.Parameter) and value_after.is_leaf
        same(value_before, value_after)
    # the optimizer now reaches the parameter: one step changes it
    optimizer = torch.optim.SGD(new.parameters(), lr=0.1)
    new().sum().backward()
    kept = {name: getattr(new, name).detach().clone() for name in before["moved"]}
    optimizer.step()
    for name in before["moved"]:
        assert not torch.equal(getattr(new, name).detach(), kept[name])


CASES: dict[str, list[Case]] = {
    "TL108": [Case("TL108", """
        import torch
        from torch import nn

        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.randn(3, 4)).double()
                self.bias = nn.Parameter(torch.zeros(4) + 0.5).to(torch.float64)
                self.gain = nn.Parameter(torch.tensor([2.0])).half()
                self.kernel = nn.Parameter(torch.randn(12)).view(3, 4)

            def forward(self):
                return (self.weight * self.bias).sum() * self.gain.double() + self.kernel.sum()

        torch.manual_seed(0)
        model = Scaled()
        moved = ("weight", "bias", "gain", "kernel")
        result = model()
    """, check=_registered_after_fix)],
}


@pytest.mark.parametrize("case", params(CASES))
def test_fix_cures_the_bug(case: Case) -> None:
    run_case(case)
