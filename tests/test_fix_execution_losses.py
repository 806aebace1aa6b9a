"""The loss and numerics rules' fixes (TL214-TL217, TL503-TL505) run with real torch.

None of these fixes is safe: each changes what the code computes, on purpose. So instead of
"same results", every case checks what the rule's documentation promises: the fixed code
parses, runs, and computes the intended quantity (cross-entropy of the logits, log1p,
logsumexp...), and where the promise is about precision, the fixed code is the better one.
Run with: python -m pytest -m torch tests/test_fix_execution_losses.py
"""

from __future__ import annotations

import textwrap
import warnings

import pytest
from fix_execution_support import Case, Namespace, params, same, torch

from torchlint.config.file_settings import FileSettings
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

pytestmark = pytest.mark.torch

F = torch.nn.functional

# Rules of this group with a safe fix: none (the check that every safe fix runs reads this).
CASES: dict[str, list[Case]] = {}


def _fixed(code: str, source: str) -> str:
    rule = all_rules()[code]
    outcome = fix_source(SourceFile("case.py", source), FileSettings.for_rules([rule], {code}),
                         unsafe=True)
    assert not [d for d in outcome.result.diagnostics if d.code == code and d.fix is not None]
    return outcome.source.text


def _run(text: str) -> Namespace:
    namespace: Namespace = {"__name__": "__fix_case__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(text, "<case>", "exec"), namespace)
    return namespace


def run_unsafe_case(case: Case) -> None:
    """Fix the case with unsafe fixes too, run both versions, and let the case check them."""
    before = textwrap.dedent(case.source).lstrip()
    after = _fixed(case.code, before)
    assert after != before, f"{case.code}: no fix applied to the case"
    assert _fixed(case.code, after) == after, "a second run changes the fixed code"
    assert case.check is not None
    case.check(_run(before), _run(after))


def _with_logits(body: str) -> str:
    """``body`` after a preamble making class scores, class labels and binary targets."""
    return textwrap.dedent("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        torch.manual_seed(0)
        logits = torch.randn(8, 5) * 4
        y = torch.randint(0, 5, (8,))
        targets = torch.randint(0, 2, (8, 5)).float()
    """) + textwrap.dedent(body)


def _cross_entropy_of_logits(before: Namespace, after: Namespace) -> None:
    logits, y = after["logits"], after["y"]
    intended = F.cross_entropy(logits, y)
    for name in ("a", "b", "c"):
        same(after[name], intended)
        doubled = F.cross_entropy(F.softmax(logits, dim=1), y)
        same(before[name], doubled)
        assert not torch.allclose(before[name], intended)


def _nll_of_log_probabilities(before: Namespace, after: Namespace) -> None:
    logits, y = after["logits"], after["y"]
    intended = F.cross_entropy(logits, y)
    for name in ("a", "b", "c"):
        assert torch.allclose(after[name], intended)
        same(before[name], F.nll_loss(F.softmax(logits, dim=1), y))


def _bce_of_logits(before: Namespace, after: Namespace) -> None:
    logits, targets = after["logits"], after["targets"]
    intended = F.binary_cross_entropy_with_logits(logits, targets)
    for name in ("a", "b"):
        same(after[name], intended)
        twice = F.binary_cross_entropy_with_logits(torch.sigmoid(logits), targets)
        same(before[name], twice)
        assert not torch.allclose(before[name], intended)


def _bce_with_logits_agrees_and_does_not_saturate(before: Namespace, after: Namespace) -> None:
    assert torch.allclose(before["moderate"], after["moderate"], atol=1e-6)
    # a confidently wrong logit: sigmoid(40) is 1.0 in float32, BCELoss clamps log(0) at -100
    assert before["saturated"].item() == pytest.approx(100.0)
    assert after["saturated"].item() == pytest.approx(40.0)
    assert after["grad"].item() == pytest.approx(1.0)
    assert before["grad"].item() == 0.0


def _log1p(before: Namespace, after: Namespace) -> None:
    x = after["x"]
    same(after["result"], torch.log1p(x))
    assert torch.allclose(before["result"], after["result"], rtol=1e-5)
    assert before["tiny"].item() == 0.0  # 1 + 1e-8 rounds to 1 in float32
    assert after["tiny"].item() == pytest.approx(1e-8, rel=1e-6)


def _expm1(before: Namespace, after: Namespace) -> None:
    h = after["h"]
    same(after["result"], torch.expm1(h) / h)
    assert torch.allclose(before["result"], after["result"], rtol=1e-3)
    assert before["tiny"].item() == 0.0
    assert after["tiny"].item() == pytest.approx(1e-8, rel=1e-6)


def _logsumexp(before: Namespace, after: Namespace) -> None:
    scores = after["scores"]
    same(after["a"], torch.logsumexp(scores, dim=-1))
    same(after["b"], torch.logsumexp(scores, dim=1, keepdim=True))
    assert torch.allclose(before["a"], after["a"], atol=1e-5)
    assert torch.allclose(before["b"], after["b"], atol=1e-5)
    assert torch.isinf(before["large"]).all()  # exp(100) overflows in float32
    assert torch.isfinite(after["large"]).all()
    assert after["large"][0].item() == pytest.approx(100 + torch.log(torch.tensor(3.0)).item())


UNSAFE_CASES: dict[str, list[Case]] = {
    "TL214": [Case("TL214", _with_logits("""
        criterion = nn.CrossEntropyLoss()
        a = F.cross_entropy(F.softmax(logits, dim=1), y)
        b = criterion(logits.softmax(-1), y)
        c = nn.CrossEntropyLoss()(nn.Softmax(dim=1)(logits), y)
    """), _cross_entropy_of_logits)],
    "TL215": [Case("TL215", _with_logits("""
        from torch.nn.functional import softmax
        a = F.nll_loss(softmax(logits, dim=1), y)
        b = nn.NLLLoss()(torch.softmax(logits, 1), y)
        c = F.nll_loss(nn.Softmax(dim=1)(logits), y)
    """), _nll_of_log_probabilities)],
    "TL216": [Case("TL216", _with_logits("""
        bce = nn.BCEWithLogitsLoss()
        a = bce(torch.sigmoid(logits), targets)
        b = F.binary_cross_entropy_with_logits(logits.sigmoid(), targets)
    """), _bce_of_logits)],
    "TL217": [Case("TL217", """
        import torch
        import torch.nn.functional as F
        from torch.nn.functional import binary_cross_entropy

        torch.manual_seed(0)
        logits = torch.randn(16)
        targets = torch.randint(0, 2, (16,)).float()
        moderate = F.binary_cross_entropy(torch.sigmoid(logits), targets, reduction="sum")
        wrong = torch.tensor([40.0], requires_grad=True)
        saturated = binary_cross_entropy(input=torch.sigmoid(wrong), target=torch.zeros(1))
        saturated.backward()
        grad = wrong.grad
    """, _bce_with_logits_agrees_and_does_not_saturate)],
    "TL503": [Case("TL503", """
        import torch
        from torch import log

        x = torch.linspace(0.01, 3.0, 50)
        result = torch.log(1 + x)
        tiny = log(torch.tensor(1e-8) + 1.0)
    """, _log1p)],
    "TL504": [Case("TL504", """
        import torch

        h = torch.linspace(0.01, 3.0, 50)
        result = (torch.exp(h) - 1.) / h
        tiny = torch.exp(torch.tensor(1e-8)) - 1
    """, _expm1)],
    "TL505": [Case("TL505", """
        import torch

        torch.manual_seed(0)
        scores = torch.randn(4, 6)
        a = torch.log(torch.sum(torch.exp(scores), dim=-1))
        b = torch.log(torch.exp(scores).sum(1, keepdim=True))
        large = torch.log(torch.exp(torch.full((2, 3), 100.0)).sum(-1))
    """, _logsumexp)],
}


@pytest.mark.parametrize("case", params(UNSAFE_CASES))
def test_unsafe_fix_computes_what_it_promises(case: Case) -> None:
    run_unsafe_case(case)


def test_every_fixing_rule_of_the_group_has_a_case() -> None:
    fixing = {code for code in ("TL214", "TL215", "TL216", "TL217", "TL502", "TL503", "TL504",
                                "TL505", "TL506") if all_rules()[code].fix_safety != "none"}
    assert fixing == set(UNSAFE_CASES)


def test_implicit_softmax_dim_is_the_batch_for_3d_inputs() -> None:
    """TL502's claim: without dim, a 3-D input is normalised over dimension 0."""
    x = torch.randn(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        implicit = F.softmax(x)
        four_d = F.softmax(x[None].expand(2, 2, 3, 4))
    same(implicit, F.softmax(x, dim=0))
    same(four_d, F.softmax(x[None].expand(2, 2, 3, 4), dim=1))
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        F.softmax(x)
