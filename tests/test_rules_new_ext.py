"""Unit tests for TL108, TL222 and TL605 beyond their fixtures: what each one proves before
it reports, the shared facts they read, and (marked ``torch``) the failures they predict
and the fixes they offer, checked against real torch on the CPU."""

from __future__ import annotations

import dataclasses
import textwrap

import libcst as cst
import pytest
from test_rules_training import findings, fixed

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import file_uses_cuda
from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "__case__"}
    exec(compile(textwrap.dedent(source), "<case>", "exec"), namespace)
    return namespace


# ------------------------------------------------------------------------ shared facts
@pytest.mark.parametrize(("source", "uses"), [
    ("import torch\nx = torch.ones(2).cuda()\n", True),
    ("import torch\ndev = torch.device('cuda:1')\n", True),
    ("import torch\nx = torch.ones(2)\n", False),
    # a file that runs on the CPU on purpose
    ("import torch\nwith torch.cpu.amp.autocast():\n    y = x.cuda()\n", False),
])
def test_file_uses_cuda(source: str, uses: bool) -> None:
    ctx = FileContext("t.py", cst.parse_module(source))
    assert file_uses_cuda(ctx) is uses


# ------------------------------------------------------------------------ TL222
def test_tl222_reports_the_call_and_names_the_files_device() -> None:
    source = """
    import torch
    def step(model, x):
        with torch.autocast(enabled=True):
            return model(x.to("cuda"))
    """
    assert findings("TL222", source) == [(4, 10)]
    assert 'torch.autocast(device_type="cuda", enabled=True)' in fixed("TL222", source)
    cpu = source.replace('x.to("cuda")', "x")
    assert 'torch.autocast(device_type="cpu", enabled=True)' in fixed("TL222", cpu)


@pytest.mark.parametrize("call", [
    'torch.autocast("cpu")',
    "torch.amp.autocast(device.type, enabled=True)",
    'torch.amp.autocast(device_type="cuda")',
    "torch.amp.autocast(*args)",
    "torch.amp.autocast(**kwargs)",
    "torch.cuda.amp.autocast()",
    "torch.cpu.amp.autocast()",
])
def test_tl222_silent_when_the_device_is_given_or_fixed(call: str) -> None:
    assert findings("TL222", f"import torch\nwith {call}:\n    pass\n") == []


def test_tl222_follows_imports_not_spellings() -> None:
    assert findings("TL222", "import torch\nfrom torch.amp import autocast as cast\n"
                             "with cast():\n    pass\n") == [(3, 6)]
    assert findings("TL222", "import torch\nfrom apex import autocast\n"
                             "with autocast():\n    pass\n") == []


@pytest.mark.torch
def test_tl222_the_call_raises_and_the_fixed_call_runs() -> None:
    torch = pytest.importorskip("torch")
    source = """
    import torch
    x = torch.ones(2, 3)
    with torch.amp.autocast(dtype=torch.bfloat16):
        y = x @ x.T
    """
    with pytest.raises(TypeError, match="device_type"):
        _run(source)
    after = fixed("TL222", source)
    assert 'autocast(device_type="cpu", dtype=torch.bfloat16)' in after
    assert _run(after)["y"].dtype == torch.bfloat16


# ------------------------------------------------------------------------ fresh tensors
def _expr(source: str, expression: str) -> tuple[FileContext, cst.BaseExpression]:
    return FileContext("t.py", cst.parse_module(source)), cst.parse_expression(expression)


@pytest.mark.parametrize(("expression", "device", "dtype"), [
    ("torch.randn(3, 4)", "cpu", "float32"),
    ("torch.randn(3, 4) * 0.02", "cpu", "float32"),
    ("torch.empty(3).normal_(0, 1)", "cpu", "float32"),
    ('torch.zeros(3, device="cuda:1", dtype=torch.half)', "cuda", "float16"),
    ("torch.arange(5)", "cpu", None),
    ("torch.tensor([1, 2])", "cpu", "int64"),
    ("torch.tensor([1, 2.5])", "cpu", "float32"),
    ("torch.randn(3).cuda()", "cuda", "float32"),
    ('torch.ones(2).to("cuda", torch.float64)', "cuda", "float64"),
    ("torch.ones(2, device=dev)", None, "float32"),
])
def test_fresh_placement(expression: str, device: str | None, dtype: str | None) -> None:
    from torchlint.analysis.fresh_tensors import Placement, fresh_placement
    ctx, expr = _expr("import torch\n", expression)
    assert fresh_placement(ctx, expr) == Placement(device, dtype)


@pytest.mark.parametrize("expression", [
    "torch.tensor(weights)", "torch.randn_like(x)", "weights", "torch.ones(2).to(dev)",
])
def test_fresh_placement_unknown(expression: str) -> None:
    from torchlint.analysis.fresh_tensors import fresh_placement
    ctx, expr = _expr("import torch\n", expression)
    assert fresh_placement(ctx, expr) is None


def test_fresh_placement_unknown_when_the_file_changes_torchs_defaults() -> None:
    from torchlint.analysis.fresh_tensors import fresh_placement
    ctx, expr = _expr("import torch\ntorch.set_default_device('cuda')\n", "torch.randn(3)")
    assert fresh_placement(ctx, expr) is None


@pytest.mark.parametrize(("expression", "free"), [
    ("torch.randn(3)", True),
    ("torch.from_numpy(a).float()", True),
    ("torch.tensor(h)", True),  # copies and detaches
    ("[1.0, 2.0]", True),
    ("torch.randn(3, requires_grad=True)", False),
    ("torch.as_tensor(h)", False),
    ("h", False),
    ("model(x)", False),
    ("h.cuda()", False),
    ("h.detach()", True),
    ("torch.autograd.Variable(h)", True),
    ("torch.autograd.Variable(h, requires_grad=True)", False),
])
def test_carries_no_graph(expression: str, free: bool) -> None:
    from torchlint.analysis.fresh_tensors import carries_no_graph
    ctx, expr = _expr("import torch\n", expression)
    assert carries_no_graph(ctx, expr) is free


# ------------------------------------------------------------------------ TL108
MODULE = """
import torch
from torch import nn
{setup}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = {value}
"""


def test_tl108_reports_the_method_call() -> None:
    source = MODULE.format(setup="", value="nn.Parameter(torch.randn(2)).cuda()")
    assert findings("TL108", source) == [(8, 18)]
    assert "self.w = nn.Parameter(torch.randn(2).cuda())" in fixed("TL108", source)


@pytest.mark.parametrize(("setup", "value"), [
    ("torch.set_default_dtype(torch.float64)", "nn.Parameter(torch.randn(2)).double()"),
    ("torch.set_default_device('cuda')", "nn.Parameter(torch.randn(2)).cuda()"),
    ("", "nn.Parameter(torch.randn(2, device='cuda')).to('cuda:0')"),
    ("", "nn.Parameter(torch.randn(2)).cpu()"),
    ("", "nn.Parameter(*tensors).cuda()"),
    ("", "torch.nn.Parameter(data=torch.randn(2).cuda())"),
    ("import mylib as nn", "nn.Parameter(torch.randn(2)).cuda()"),
])
def test_tl108_silent_when_the_method_may_return_the_parameter(setup: str, value: str) -> None:
    assert findings("TL108", MODULE.format(setup=setup, value=value)) == []


def test_tl108_follows_a_chain_and_the_data_keyword() -> None:
    source = MODULE.format(setup="",
                           value="nn.Parameter(data=torch.ones(2), requires_grad=False).half().cuda()")
    assert findings("TL108", source) == [(8, 18)]
    out = fixed("TL108", source)
    assert "nn.Parameter(data=torch.ones(2).half().cuda(), requires_grad=False)" in out


# ------------------------------------------------------------------------ TL605
@dataclasses.dataclass
class RunSettings:
    """A project's dataclass of settings, saved in a checkpoint."""

    lr: float = 0.1


def _lint(code: str, source: str, target: tuple[int, int] | None = None,
          preview: bool = True) -> list:
    settings = FileSettings.for_rules([all_rules()[code]], {code},
                                      options=Options(target_torch=target, preview=preview))
    result = lint_source(SourceFile("t.py", textwrap.dedent(source)), settings)
    return [d for d in result.diagnostics if d.code == code]


def _findings_for(code: str, source: str, target: tuple[int, int] | None,
                  preview: bool) -> list[int]:
    return [d.line for d in _lint(code, source, target, preview)]


WHOLE_MODEL = """
import torch
from torch import nn

def train(path):
    net = nn.Linear(2, 2)
    torch.save(net.eval(), path + "/net.pt")

def test(path):
    return torch.load(path + "/net.pt")
"""


@pytest.mark.parametrize(("target", "preview", "lines"), [
    (None, False, [10]),
    ((2, 6), False, [10]),
    ((2, 4), False, []),  # an older target: a preview finding
    ((2, 4), True, [10]),
])
def test_tl605_tier_follows_the_target(target: tuple[int, int] | None, preview: bool,
                                       lines: list[int]) -> None:
    assert _findings_for("TL605", WHOLE_MODEL, target, preview) == lines


def test_tl605_no_fix_where_weights_only_does_not_exist() -> None:
    for target, fixable in (((1, 12), False), ((1, 13), True)):
        assert [d.fix is not None for d in _lint("TL605", WHOLE_MODEL, target)] == [fixable]


def test_tl605_and_tl601_never_report_the_same_load() -> None:
    both = _findings_for("TL601", WHOLE_MODEL + "\nother = torch.load('x.pt')\n", None, True)
    assert both == [12]
    assert _findings_for("TL605", WHOLE_MODEL, None, True) == [10]


@pytest.mark.parametrize("saved", [
    "net.state_dict()", "{'w': net.state_dict(), 'epoch': 3}", "[torch.ones(2)]",
    "vars(args)", "{'opt': opt.state_dict()}", "make_checkpoint(net)", "{**extra}",
])
def test_tl605_silent_for_plain_checkpoints(saved: str) -> None:
    source = f"""
    import argparse
    import torch
    from torch import nn
    args = argparse.ArgumentParser().parse_args()
    net = nn.Linear(2, 2)
    opt = torch.optim.Adam(net.parameters())
    torch.save({saved}, "c.pt")
    state = torch.load("c.pt")
    """
    assert findings("TL605", source) == []


@pytest.mark.parametrize(("saved", "what"), [
    ("net", "a whole module"),
    ("copy.deepcopy(net).half()", "a whole module"),
    ("{'args': args}", "an argparse.Namespace"),
    ("dict(config=argparse.Namespace(lr=1))", "an argparse.Namespace"),
    ("(opt,)", "an optimizer object"),
    ("{'sched': torch.optim.lr_scheduler.StepLR(opt, 3)}", "a learning-rate scheduler object"),
    ("Settings()", "an instance of the project's class Settings"),
    ("torchvision.models.resnet18()", "a whole module"),
])
def test_tl605_names_what_the_unpickler_refuses(saved: str, what: str) -> None:
    source = f"""
    import argparse
    import copy
    import torch
    import torchvision
    from torch import nn
    class Settings:
        pass
    args = argparse.ArgumentParser().parse_args()
    net = nn.Linear(2, 2)
    opt = torch.optim.Adam(net.parameters())
    def save(epoch):
        torch.save({saved}, "run/%d.pt" % epoch)
    def load():
        return torch.load("run/%d.pt" % 0)
    """
    assert findings("TL605", source) == [(15, 12)]
    assert what in _lint("TL605", source)[0].message


def test_tl605_matches_the_path_a_method_returns() -> None:
    source = """
    import torch
    from torch import nn
    class Trainer:
        def save(self, epoch):
            torch.save(self.model, self.checkpoint_path(epoch))
        def resume(self, epoch):
            self.model = torch.load(self.checkpoint_path(epoch - 1))
    """
    assert findings("TL605", source) == []  # self.model: what it holds is unknown
    known = source.replace("torch.save(self.model,", "torch.save(nn.Linear(2, 2),")
    assert findings("TL605", known) == [(8, 22)]


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["module", "namespace", "dataclass", "optimizer", "scheduler"])
def test_tl605_each_refused_type_fails_the_weights_only_load(kind: str, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    import argparse
    import pickle

    net = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    objects = {
        "module": net,
        "namespace": {"args": argparse.Namespace(lr=0.1)},
        "dataclass": {"config": RunSettings()},
        "optimizer": {"optimizer": opt},
        "scheduler": {"scheduler": torch.optim.lr_scheduler.StepLR(opt, 3)},
    }
    path = tmp_path / "c.pt"
    torch.save(objects[kind], path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path, weights_only=True)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)  # the default from 2.6
    assert torch.load(path, weights_only=False) is not None


@pytest.mark.torch
def test_tl605_plain_checkpoints_load_with_weights_only(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    net = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(net.parameters())
    net(torch.ones(1, 2)).sum().backward()
    opt.step()
    saved = [net.state_dict(), torch.ones(3), {"epoch": 3, "loss": 0.5, "name": "run"},
             [torch.zeros(2), (1, 2.0)], {"optimizer": opt.state_dict()},
             {"scheduler": torch.optim.lr_scheduler.StepLR(opt, 3).state_dict()}]
    for index, value in enumerate(saved):
        path = tmp_path / f"{index}.pt"
        torch.save(value, path)
        torch.load(path, weights_only=True)


@pytest.mark.torch
def test_tl605_the_fixed_load_reads_the_checkpoint(tmp_path, monkeypatch) -> None:
    pytest.importorskip("torch")
    import pickle
    monkeypatch.chdir(tmp_path)
    source = """
    import torch
    from torch import nn
    torch.save(nn.Linear(2, 2), "net.pt")
    net = torch.load("net.pt", map_location="cpu")
    """
    with pytest.raises(pickle.UnpicklingError):
        _run(source)
    after = fixed("TL605", source)
    assert 'torch.load("net.pt", map_location="cpu", weights_only=False)' in after
    assert isinstance(_run(after)["net"], __import__("torch").nn.Linear)


def test_tl605_matches_the_path_a_function_of_the_file_returns() -> None:
    source = """
    import os
    import torch
    from torch import nn
    def checkpoint_path(run):
        return os.path.join(run, "last.pt")
    def save(run):
        torch.save(nn.Linear(2, 2), checkpoint_path(run))
    def resume(other_run):
        return torch.load(checkpoint_path(other_run))
    """
    assert findings("TL605", source) == [(10, 12)]
    imported = """
    import torch
    from torch import nn
    from paths import checkpoint_path
    def save(run):
        torch.save(nn.Linear(2, 2), checkpoint_path(run))
    def resume(other_run):
        return torch.load(checkpoint_path(other_run))
    """
    assert findings("TL605", imported) == []  # another module's function: arguments differ
