"""Safe fixes of the training-loop extension rules (TL212, TL213) proven by execution.

Both rules fix a bug, so the code before and after the fix differs in a documented way:
TL212's freezing loop freezes only once fixed; TL213's block raises until fixed. Run with:
python -m pytest -m torch tests/test_fix_execution_training_ext.py
"""

from __future__ import annotations

import pytest
from fix_execution_support import Case, Namespace, params, run_case, same, torch

pytestmark = pytest.mark.torch


def _frozen_after_fix(before: Namespace, after: Namespace) -> None:
    """Before: the typo set a stray attribute, the backbone kept training. After: it is
    frozen, only the head moved, and the head's update is the same in both runs."""
    assert before["backbone_requires_grad"] == [True, True]
    assert after["backbone_requires_grad"] == [False, False]
    assert not torch.equal(before["backbone_after"], before["backbone_before"])
    same(after["backbone_after"], after["backbone_before"])
    same(before["head_after"], after["head_after"])
    assert not torch.equal(after["head_after"], after["head_before"])
    assert before["stray_attribute"] is True and after["stray_attribute"] is False


def _unfrozen_after_fix(before: Namespace, after: Namespace) -> None:
    assert before["result"] == [False, False] and after["result"] == [True, True]


def _no_grad_entered(before: Namespace, after: Namespace) -> None:
    """Before: entering the class raised. After: the block runs without recording."""
    assert "result" not in before
    out, requires_grad, enabled_inside = after["result"]
    assert requires_grad is False and enabled_inside is False
    same(out, after["expected"])


def _enable_grad_entered(before: Namespace, after: Namespace) -> None:
    grad = after["result"]
    same(grad, after["expected"])


CASES: dict[str, list[Case]] = {
    "TL212": [
        Case("TL212", """
            import torch
            import torch.nn as nn

            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
            backbone, head = model[0], model[1]
            for p in backbone.parameters():
                p.require_grad = False
            backbone_requires_grad = [p.requires_grad for p in backbone.parameters()]
            stray_attribute = any(k.startswith("require_g") for k in vars(backbone.weight))

            trainable = [p for p in model.parameters() if p.requires_grad]
            optimizer = torch.optim.SGD(trainable, lr=0.5)
            backbone_before = backbone.weight.detach().clone()
            head_before = head.weight.detach().clone()
            x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            backbone_after = backbone.weight.detach().clone()
            head_after = head.weight.detach().clone()
        """, _frozen_after_fix),
        Case("TL212", """
            import torch

            layer = torch.nn.Linear(3, 2)
            layer.requires_grad_(False)
            for p in layer.parameters():
                p.require_grad = True
            result = [p.requires_grad for p in layer.parameters()]
        """, _unfrozen_after_fix),
    ],
    "TL213": [
        Case("TL213", """
            import torch

            torch.manual_seed(0)
            model = torch.nn.Linear(3, 2)
            x = torch.randn(4, 3)
            expected = model(x).detach()
            with torch.no_grad:
                out = model(x)
                enabled_inside = torch.is_grad_enabled()
            result = (out, out.requires_grad, enabled_inside)
        """, _no_grad_entered, before_raises=TypeError),
        Case("TL213", """
            import torch
            from torch import enable_grad

            x = torch.tensor([1.0, 2.0, 3.0])
            expected = 2 * x
            with torch.no_grad():
                with enable_grad:
                    leaf = x.clone().requires_grad_()
                    (leaf ** 2).sum().backward()
            result = leaf.grad
        """, _enable_grad_entered, before_raises=TypeError),
        Case("TL213", """
            import torch
            from torch.autograd import grad_mode

            torch.manual_seed(0)
            model = torch.nn.Linear(3, 2)
            x = torch.randn(4, 3)
            expected = model(x).detach()
            with grad_mode.inference_mode as mode:
                out = model(x)
                enabled_inside = torch.is_grad_enabled()
            result = (out, out.requires_grad, enabled_inside)
        """, _no_grad_entered, before_raises=TypeError),
        Case("TL213", """
            import torch

            torch.manual_seed(0)
            model = torch.nn.Linear(3, 2)
            x = torch.randn(4, 3)
            expected = model(x).detach()
            frozen = True
            with (torch.no_grad if frozen else torch.enable_grad()), torch.autocast("cpu",
                                                                                   enabled=False):
                out = model(x)
                enabled_inside = torch.is_grad_enabled()
            result = (out, out.requires_grad, enabled_inside)
        """, _no_grad_entered, before_raises=TypeError),
    ],
}

PARAMS = params(CASES)


@pytest.mark.parametrize("case", PARAMS)
def test_fix_makes_the_code_work(case: Case) -> None:
    run_case(case)
