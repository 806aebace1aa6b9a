"""Unit tests for the training-loop rules (TL201-TL205, TL209) beyond their fixtures."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def findings(code: str, source: str) -> list[tuple[int, int]]:
    rule = all_rules()[code]
    text = textwrap.dedent(source)
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}))
    return [(d.line, d.column) for d in result.diagnostics if d.code == code]


def fixed(code: str, source: str) -> str:
    rule = all_rules()[code]
    text = textwrap.dedent(source)
    return fix_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}), unsafe=True).source.text


TRAIN_LOOP = """
import torch.nn as nn

def train(model, loader, opt):
    crit = nn.CrossEntropyLoss()
    {init}
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        {use}
    {after}
"""


@pytest.mark.parametrize(("use", "after", "flagged"), [
    ("history.append(loss)", "print(history)", True),
    ("history.append(loss.item())", "print(history)", False),
    ("history.append(loss.detach().cpu())", "print(history)", False),
    ("history.append(loss)", "torch.stack(history).sum().backward()", False),
])
def test_tl201_cases(use: str, after: str, flagged: bool) -> None:
    source = TRAIN_LOOP.format(init="history = []", use=use, after=after)
    assert bool(findings("TL201", source)) is flagged


def test_tl201_reports_at_the_value_and_fixes_with_item() -> None:
    source = TRAIN_LOOP.format(init="history = []", use="history.append(loss)",
                               after="print(history)")
    assert findings("TL201", source) == [(12, 24)]
    assert "history.append(loss.item())" in fixed("TL201", source)


@pytest.mark.parametrize(("init", "use", "after", "flagged"), [
    ("total = 0.0", "total += loss", "print(total)", True),
    ("total = 0.0", "total += loss.item()", "print(total)", False),
    ("total = 0.0", "total += float(loss)", "print(total)", False),
    ("total = 0.0", "total += loss", "total.backward()", False),
    ("total = []", "total += loss", "print(total)", False),
])
def test_tl202_cases(init: str, use: str, after: str, flagged: bool) -> None:
    source = TRAIN_LOOP.format(init=init, use=use, after=after)
    assert bool(findings("TL202", source)) is flagged


def test_tl202_fix_parenthesises_expressions() -> None:
    source = TRAIN_LOOP.format(init="total = 0", use="total += loss * x.size(0)",
                               after="print(total)")
    assert "total += (loss * x.size(0)).item()" in fixed("TL202", source)


def test_tl203_only_bare_statements() -> None:
    source = """
    import torch
    torch.no_grad()
    with torch.no_grad():
        pass
    ctx = torch.enable_grad()
    """
    assert findings("TL203", source) == [(3, 1)]


def test_tl204_reports_the_backward_call() -> None:
    source = """
    import torch
    with torch.autocast("cuda"):
        loss = model(x).sum()
        loss.backward()
    loss.backward()
    """
    assert findings("TL204", source) == [(5, 5)]


def test_tl205_reports_the_innermost_loop_only() -> None:
    source = """
    for epoch in range(3):
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
    """
    assert findings("TL205", source) == [(3, 5)]


def test_tl209_guarded_or_unguarded() -> None:
    source = """
    import torch
    for i, batch in enumerate(loader):
        torch.cuda.empty_cache()
        if i % 5 == 0:
            torch.cuda.empty_cache()
    for i in range(10):  # not a loop of steps
        torch.cuda.empty_cache()
    """
    assert findings("TL209", source) == [(4, 5)]


def test_tl202_total_kept_on_self_is_named_in_the_message_and_fixed() -> None:
    source = """
import torch.nn.functional as F


class Loop:
    def __init__(self, model):
        self.model = model
        self.total = 0.0

    def step(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.total += loss
"""
    [(line, column)] = findings("TL202", source)
    assert line == 13
    assert "self.total += loss.item()" in fixed("TL202", source)
    # a total the class backpropagates keeps its graph on purpose
    wanted = source + "\n    def flush(self):\n        self.total.backward()\n"
    assert findings("TL202", wanted) == []
    # set in __init__ only as a model: no number, tensor or container to sum into
    assert findings("TL202", source.replace("self.total = 0.0", "self.total = model")) == []


def test_tl205_step_function_is_reported_at_its_name_unless_a_caller_clears() -> None:
    source = """
    def step(model, optimizer, x):
        model(x).sum().backward()
        optimizer.step()


    def fit(model, optimizer, batches):
        for x in batches:
            step(model, optimizer, x)
    """
    assert findings("TL205", source) == [(2, 5)]
    cleared = source.replace("for x in batches:\n", "for x in batches:\n        optimizer.zero_grad()\n")
    assert cleared != source and findings("TL205", cleared) == []
    # never run more than once in the file: its gradients start empty
    assert findings("TL205", source.replace("step(model, optimizer, x)\n", "pass\n")) == []
