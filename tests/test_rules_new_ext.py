"""Unit tests for TL108, TL222 and TL605 beyond their fixtures: what each one proves before
it reports, the shared facts they read, and (marked ``torch``) the failures they predict
and the fixes they offer, checked against real torch on the CPU."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from test_rules_training import findings, fixed

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import file_uses_cuda


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
