"""Unit tests for the training-loop extension rules (TL212, TL213, TL218-TL221) beyond their
fixtures: the scoping of optimizer and scheduler bindings, what counts as another backward
pass, which seeds are loop-invariant, and the prefilter patterns."""

from __future__ import annotations

import re
import textwrap

import pytest
from test_rules_training import findings, fixed

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def prefilter_passes(code: str, source: str) -> bool:
    rule = all_rules()[code]
    text = textwrap.dedent(source)
    return any(t in text for t in rule.triggers) and all(
        re.search(p, text, re.MULTILINE) for p in rule.patterns)


# ------------------------------------------------------------------------ TL212
def test_tl212_reports_the_attribute_and_renames_only_it() -> None:
    source = """
    import torch
    layer = torch.nn.Linear(2, 2)
    for p in layer.parameters():
        p.require_grad = False  # keep frozen
    """
    assert findings("TL212", source) == [(5, 5)]
    assert "    p.requires_grad = False  # keep frozen\n" in fixed("TL212", source)


@pytest.mark.parametrize("read", [
    "print(cfg.require_grad)",
    "flag = getattr(cfg, 'require_grad')",
    "cfg.require_grad += 1",
    "del cfg.require_grad",
])
def test_tl212_a_read_anywhere_makes_it_the_projects_attribute(read: str) -> None:
    source = f"""
    import torch
    def set_flags(cfg, p):
        p.require_grad = False
    {read}
    """
    assert findings("TL212", source) == []


def test_tl212_needs_torch_and_skips_self() -> None:
    assert findings("TL212", "import numpy\nx.require_grad = False\n") == []
    assert findings("TL212", """
    import torch
    class Cfg:
        def __init__(self):
            self.require_grad = False
    """) == []
    assert findings("TL212", "from torch import nn\nlayer.weight.require_grad = False\n") == [
        (2, 1)]


# ------------------------------------------------------------------------ TL213
def test_tl213_resolves_through_imports_only() -> None:
    assert findings("TL213", """
    import torch as T
    with T.inference_mode:
        pass
    """) == [(3, 6)]
    assert findings("TL213", """
    from mxnet.autograd import no_grad
    with no_grad:
        pass
    """) == []
    assert findings("TL213", """
    import torch
    no_grad = torch.no_grad()
    with no_grad:
        pass
    """) == []


def test_tl213_decorators_are_fine() -> None:
    assert findings("TL213", """
    import torch
    @torch.no_grad
    def f(x):
        return x
    @torch.enable_grad()
    def g(x):
        return x
    """) == []


@pytest.mark.parametrize("source", [
    "import torch\nwith torch.no_grad :\n    pass\n",
    "from torch import no_grad as ng\nwith ng:\n    pass\n",
    "import torch\nwith torch.\\\n    enable_grad:\n    pass\n",
    "import torch\nNG = torch.no_grad\nwith NG:\n    pass\n",
])
def test_tl213_prefilter_lets_uncalled_spellings_through(source: str) -> None:
    assert prefilter_passes("TL213", source)


def test_tl213_prefilter_skips_files_that_always_call() -> None:
    assert not prefilter_passes("TL213", "import torch\nwith torch.no_grad():\n    pass\n")


# ------------------------------------------------------------------------ TL218
BACKWARD_ZERO_STEP = """
import torch

{setup}

def train(model, loader{extra}):
    {local}
    for x, y in loader:
        model(x).sum().backward()
        {zero}.zero_grad()
        {step}
"""


@pytest.mark.parametrize(("setup", "extra", "local", "zero", "step", "flagged"), [
    # the optimizer itself, by text
    ("", ", opt", "", "opt", "opt.step()", True),
    ("", ", opt, scaler", "", "opt", "scaler.step(opt)", True),
    # the model of an optimizer built in this function
    ("", "", "opt = torch.optim.SGD(model.parameters(), lr=0.1)", "model", "opt.step()", True),
    # a parameter shadows a module-level optimizer over another model
    ("opt = torch.optim.SGD(net.parameters(), lr=0.1)", ", opt", "", "model", "opt.step()",
     False),
    # a module-level optimizer of this model, read as a global
    ("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "", "", "model", "opt.step()", True),
    # an optimizer over a parameter list: its model is unknown
    ("", "", "opt = torch.optim.SGD([w], lr=0.1)", "model", "opt.step()", False),
    # a closure recomputes the gradients
    ("", ", opt, closure", "", "opt", "opt.step(closure)", False),
    # another object's step
    ("", ", opt, sched", "", "opt", "sched.step()", False),
])
def test_tl218_which_zero_grad_clears_which_step(setup: str, extra: str, local: str, zero: str,
                                                 step: str, flagged: bool) -> None:
    source = BACKWARD_ZERO_STEP.format(setup=setup, extra=extra, local=local or "pass",
                                       zero=zero, step=step)
    assert bool(findings("TL218", source)) is flagged


def test_tl218_a_helper_that_backpropagates_counts_as_a_backward() -> None:
    source = """
    import torch

    def penalty_backward(model, x):
        torch.autograd.grad(model(x).sum(), x)

    def train(model, loader, opt):
        for x, y in loader:
            model(x).sum().backward()
            opt.zero_grad()
            penalty_backward(model, x)
            opt.step()
    """
    assert findings("TL218", source) == []


def test_tl218_self_attributes_resolve_within_their_class() -> None:
    source = """
    import torch

    class A:
        def __init__(self, net, head):
            self.opt = torch.optim.SGD(head.parameters(), lr=0.1)
            self.net = net

        def step(self, x):
            self.net(x).sum().backward()
            self.net.zero_grad()
            self.opt.step()

    class B:
        def __init__(self, net):
            self.net = net
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def step(self, x):
            self.net(x).sum().backward()
            self.net.zero_grad()
            self.opt.step()
    """
    assert findings("TL218", source) == [(21, 9)]


def test_tl218_zero_grad_after_the_step_of_this_backward() -> None:
    source = """
    import torch

    def train(model, loader, opt):
        for x, y in loader:
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
            opt.step()
    """
    assert findings("TL218", source) == []


# ------------------------------------------------------------------------ TL219
SCHEDULER_LOOP = """
import torch
from torch.optim import lr_scheduler

def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = {scheduler}
    for epoch in range(epochs):
        {before}
        sched.step()
        for x, y in loader:
            opt.step()
"""


@pytest.mark.parametrize(("scheduler", "before", "flagged"), [
    ("lr_scheduler.StepLR(opt, 10)", "pass", True),
    ("lr_scheduler.StepLR(optimizer=opt, step_size=10)", "pass", True),
    ("lr_scheduler.StepLR(other, 10)", "pass", False),
    ("lr_scheduler.ReduceLROnPlateau(opt)", "pass", False),
    ("make_scheduler(opt)", "pass", False),
    # the optimizer already stepped earlier in the body
    ("lr_scheduler.StepLR(opt, 10)", "opt.step()", False),
    ("lr_scheduler.StepLR(opt, 10)", "for x, y in loader:\n            opt.step()", False),
])
def test_tl219_cases(scheduler: str, before: str, flagged: bool) -> None:
    source = SCHEDULER_LOOP.format(scheduler=scheduler, before=before)
    assert bool(findings("TL219", source)) is flagged


def test_tl219_reports_at_the_scheduler_step_attribute() -> None:
    source = SCHEDULER_LOOP.format(scheduler="lr_scheduler.StepLR(opt, 10)", before="pass")
    assert findings("TL219", source) == [(11, 9)]


def test_tl219_a_scheduler_bound_to_two_optimizers_is_unknown() -> None:
    source = """
    import torch
    from torch.optim import lr_scheduler

    def train(model, loader, opt, other, fine_tune):
        if fine_tune:
            sched = lr_scheduler.StepLR(other, 10)
        else:
            sched = lr_scheduler.StepLR(opt, 10)
        for x, y in loader:
            sched.step()
            opt.step()
    """
    assert findings("TL219", source) == []


@pytest.mark.parametrize(("target", "flagged"), [
    (None, True), ((1, 0), False), ((1, 1), True), ((2, 13), True)])
def test_tl219_silent_for_a_target_before_1_1(target: tuple[int, int] | None,
                                              flagged: bool) -> None:
    """Before torch 1.1 the scheduler was documented to step first."""
    rule = all_rules()["TL219"]
    text = textwrap.dedent(SCHEDULER_LOOP.format(scheduler="lr_scheduler.StepLR(opt, 10)",
                                                 before="pass"))
    settings = FileSettings.for_rules([rule], {"TL219"}, options=Options(target_torch=target))
    result = lint_source(SourceFile("t.py", text), settings)
    assert bool([d for d in result.diagnostics if d.code == "TL219"]) is flagged


# ------------------------------------------------------------------------ TL220
RETAIN_LOOP = """
import torch
from torch.autograd import grad

def train(model, loader, opt, memory):
    for x, y in loader:
        out = model(x, memory)
        loss = (out - y).pow(2).mean()
        {extra}
        {call}
        opt.step()
"""


@pytest.mark.parametrize(("call", "extra", "flagged"), [
    ("loss.backward(retain_graph=True)", "pass", True),
    ("loss.backward(None, True)", "pass", False),  # positional: not the documented spelling
    ("loss.mean().backward(retain_graph=True)", "pass", True),
    ("(loss * 2).backward(retain_graph=True)", "pass", True),
    ("scaler.scale(loss).backward(retain_graph=True)", "pass", True),
    ("loss.backward(retain_graph=False)", "pass", False),
    ("loss.backward(retain_graph=keep)", "pass", False),
    # `memory` is not bound in the body: a value from before the loop
    ("memory.backward(retain_graph=True)", "pass", False),
    ("(loss + memory).backward(retain_graph=True)", "pass", False),
    ("loss.backward(retain_graph=True)", "g = grad(out.sum(), x)", False),
    ("loss.backward(retain_graph=True)", "out.sum().backward()", False),
    ("loss.backward(retain_graph=True)", "if False:\n            out.mean().backward()", False),
    ("loss.backward(retain_graph=True)", "h = hvp(loss, create_graph=True)", False),
])
def test_tl220_cases(call: str, extra: str, flagged: bool) -> None:
    source = RETAIN_LOOP.format(call=call, extra=extra)
    assert bool(findings("TL220", source)) is flagged


def test_tl220_uses_the_innermost_loop() -> None:
    source = """
    import torch

    def train(model, loader, opt, extra):
        for epoch in range(3):
            for x, y in loader:
                loss = model(x).sum()
                loss.backward(retain_graph=True)
            extra.backward()
    """
    assert findings("TL220", source) == [(8, 13)]


# ------------------------------------------------------------------------ TL221
SEED_LOOP = """
import random
import torch

def train(model, loader, opt, seed, seeds, cfg):
    for epoch in range(3):
        for i, (x, y) in enumerate(loader):
            {seeding}
            model(x).sum().backward()
            opt.step()
"""


@pytest.mark.parametrize(("seeding", "flagged"), [
    ("torch.manual_seed(seed)", True),
    ("torch.manual_seed(cfg.seed)", True),
    ("torch.manual_seed(cfg['seed'] * 2 + 1)", True),
    ("torch.manual_seed(int(seed))", True),
    ("torch.manual_seed(seed + epoch)", False),
    ("torch.manual_seed(seeds[i])", False),
    ("torch.manual_seed(random.randint(0, 100))", False),
    ("torch.manual_seed(hash_seed(seed))", False),
    ("g = torch.manual_seed(seed)", False),
    ("torch.manual_seed(seed := seed + 1)", False),
])
def test_tl221_cases(seeding: str, flagged: bool) -> None:
    assert bool(findings("TL221", SEED_LOOP.format(seeding=seeding))) is flagged


def test_tl221_attribute_counters_vary() -> None:
    source = """
    import torch

    class T:
        def fit(self, loader):
            for x, y in loader:
                torch.manual_seed(self.cfg.seed + self.step)
                self.model(x).sum().backward()
                self.step += 1
    """
    assert findings("TL221", source) == []


def test_tl221_a_loop_building_a_model_each_time_is_a_run() -> None:
    source = """
    import torch
    from torch import nn

    def compare(x, y, widths):
        for width in widths:
            torch.manual_seed(0)
            model = nn.Linear(4, width)
            model(x).sum().backward()
    """
    assert findings("TL221", source) == []


def test_tl221_reports_at_the_call() -> None:
    assert findings("TL221", SEED_LOOP.format(seeding="torch.manual_seed(seed)")) == [(8, 13)]
