"""Unit tests for the device and data-movement rules (TL302-TL308) and their helpers."""

from __future__ import annotations

import textwrap

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def lint(code: str, source: str) -> list[tuple[int, int, str]]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("example.py", textwrap.dedent(source)), FileSettings.for_rules([rule], {code}))
    return [(d.line, d.column, d.message) for d in result.diagnostics]


def fixed(code: str, source: str) -> str:
    rule = all_rules()[code]
    out = fix_source(SourceFile("example.py", textwrap.dedent(source)), FileSettings.for_rules([rule], {code}), unsafe=True)
    return out.source.text


def test_opt_in_rules_are_not_default() -> None:
    rules = all_rules()
    assert [c for c in ("TL302", "TL303", "TL304", "TL305") if not rules[c].default] == []
    assert [c for c in ("TL306", "TL307", "TL308") if rules[c].default] == []


def test_tl302_single_batch_of_packages_with_inplace_to_is_silent() -> None:
    source = """
    from torch_geometric.loader import DataLoader

    def run(loader, device):
        for data in loader:
            data.to(device)
    """
    assert lint("TL302", source) == []


def test_tl302_unpacked_batch_is_flagged_even_with_such_packages() -> None:
    source = """
    import transformers

    def run(loader, device):
        for x, y in loader:
            x.to(device)
    """
    assert [line for line, _, _ in lint("TL302", source)] == [6]


def test_tl302_fix_keeps_multiline_call_intact() -> None:
    source = """
    import torch

    def run(device):
        mask = torch.ones(3)
        mask.to(
            device,
        )
        return mask
    """
    assert "    mask = mask.to(\n        device,\n    )\n" in fixed("TL302", source)


def test_tl302_reports_the_call_position() -> None:
    source = """
    import torch
    x = torch.zeros(2)
    x.cuda()
    """
    assert lint("TL302", source)[0][:2] == (4, 1)


def test_tl303_names_the_initialising_call() -> None:
    source = """
    import os
    import torch
    n = torch.cuda.device_count()
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """
    ((line, column, message),) = lint("TL303", source)
    assert (line, column) == (5, 1)
    assert "torch.cuda.device_count()" in message


def test_tl303_other_module_named_os_is_silent() -> None:
    source = """
    import mylib as os
    import torch
    torch.cuda.init()
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """
    assert lint("TL303", source) == []


def test_tl304_adds_torch_import_when_only_tensor_is_imported() -> None:
    source = """
    import numpy as np
    from torch import tensor

    t = tensor(np.zeros(3))
    """
    out = fixed("TL304", source)
    assert "import torch\n" in out
    assert "t = torch.from_numpy(np.zeros(3))" in out


def test_tl305_reports_at_the_stop_call() -> None:
    source = """
    import time
    import torch

    def bench(model, x):
        x = x.cuda()
        t0 = time.time()
        model(x)
        return time.time() - t0
    """
    assert [(line, column) for line, column, _ in lint("TL305", source)] == [(9, 12)]


def test_tl306_chain_reported_once() -> None:
    source = """
    def train(model, loader, opt):
        for x in loader:
            loss = model(x.cuda())
            loss.backward()
            values = loss.detach().cpu().numpy()
    """
    assert len(lint("TL306", source)) == 1


def test_tl307_message_lists_both_options() -> None:
    source = """
    from torch.utils.data import DataLoader

    def run(ds, device="cuda"):
        loader = DataLoader(ds)
        for x, y in loader:
            x = x.to(device, non_blocking=True)
    """
    ((_, _, message),) = lint("TL307", source)
    assert "`num_workers` and `pin_memory`" in message
    # without non_blocking copies, pinned memory would save little: only the workers
    ((_, _, message),) = lint("TL307", source.replace(", non_blocking=True", ""))
    assert "pin_memory" not in message


def test_tl308_fix_is_idempotent() -> None:
    source = """
    from torch.utils.data import DataLoader

    def run(ds, device):
        loader = DataLoader(ds, num_workers=2, pin_memory=True)
        for x, y in loader:
            x = x.to(device)
    """
    once = fixed("TL308", source)
    assert "x = x.to(device, non_blocking=True)" in once
    assert fixed("TL308", once) == once


def test_tl302_integer_batch_index_fix_is_unsafe_and_key_fix_safe() -> None:
    source = """
    def run(loader, device):
        for batch in loader:
            batch["image"].to(device)
            batch[0].cuda()
    """
    rule = all_rules()["TL302"]
    result = lint_source(SourceFile("example.py", textwrap.dedent(source)), FileSettings.for_rules([rule], {"TL302"}))
    assert [d.fix.is_safe if d.fix else None for d in result.diagnostics] == [True, False]
    assert 'batch["image"] = batch["image"].to(device)' in fixed("TL302", source)
    assert "batch[0] = batch[0].cuda()" in fixed("TL302", source)


def test_tl302_unpacked_batch_stays_silent_when_the_batch_was_rebound() -> None:
    source = """
    def run(loader, device, model):
        for data in loader:
            data = model.prepare(data)
            inputs, labels = data
            inputs.cuda()
    """
    assert lint("TL302", source) == []


def fix_safety(code: str, source: str) -> list[bool | None]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("example.py", textwrap.dedent(source)),
                         FileSettings.for_rules([rule], {code}))
    return [d.fix.is_safe if d.fix else None for d in result.diagnostics]


def test_tl302_fix_is_unsafe_when_a_module_built_here_takes_the_tensor() -> None:
    source = """
    import torch

    def check(Net, moved):
        net = Net()
        x = torch.rand(2, 3)
        x.cuda()
        out = net(x)
        other = Net()
        other.cuda()
        y = torch.rand(2, 3)
        y.cuda()
        return out, other(y)
    """
    assert fix_safety("TL302", source) == [False, True]


def test_tl301_random_draws_get_an_unsafe_fix_and_deterministic_ones_a_safe_fix() -> None:
    source = """
    import torch

    def training_step(device):
        a = torch.zeros(3).to(device)
        b = torch.randn(3).to(device)
        c = torch.empty(3).normal_().cuda()
        d = torch.arange(3).float().cuda()
        return a, b, c, d
    """
    assert fix_safety("TL301", source) == [True, False, False, True]


def test_tl301_a_seed_anywhere_in_the_function_keeps_random_draws_silent() -> None:
    source = """
    import torch
    import lightning as L

    def training_step(device, seed):
        if seed is not None:
            L.seed_everything(seed)
        noise = torch.randn(3).to(device)
        zeros = torch.zeros(3).to(device)
        return noise, zeros
    """
    assert [line for line, _, _ in lint("TL301", source)] == [9]


def test_tl302_legacy_constructors_through_aliases_make_tensors() -> None:
    source = """
    import torch as T
    import numpy as np

    Tensor = T.cuda.FloatTensor if T.cuda.is_available() else T.FloatTensor
    Array = np.ndarray

    def build(n):
        scale = T.Tensor(n)
        scale.cuda()
        mask = Tensor(n, n)
        mask.cpu()
        plain = Array(n)
        plain.cpu()
        return scale, mask, plain
    """
    assert [line for line, _, _ in lint("TL302", source)] == [10, 12]
    assert "    scale = scale.cuda()\n" in fixed("TL302", source)


def test_tl305_cpu_work_made_in_the_function_is_not_gpu_work() -> None:
    source = """
    import time
    import torch

    DEVICE = "cuda"

    def bench(n):
        a = torch.randn(n, n)
        start = time.perf_counter()
        torch.matmul(a, a)
        return time.perf_counter() - start
    """
    assert lint("TL305", source) == []
    # a device move in the function puts the work on the GPU
    moved = source.replace("torch.randn(n, n)", "torch.randn(n, n).to(DEVICE)")
    assert [line for line, _, _ in lint("TL305", moved)] == [11]
    # work on a parameter may be on the GPU
    given = source.replace("def bench(n):", "def bench(n, a):").replace(
        "a = torch.randn(n, n)\n        ", "")
    assert [line for line, _, _ in lint("TL305", given)] == [10]


def test_tl302_last_statement_of_a_notebook_cell_is_displayed_not_discarded(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from torchlint.cli import main

    cells = ["import torch\nm = torch.Tensor([[2, 5], [4, 2]])",
             "device = torch.device('cuda')\nm.to(device)",
             "m.cuda()\nprint(m)"]
    notebook = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                           "execution_count": None} for c in cells],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                "nbformat_minor": 5}
    path = tmp_path / "tour.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--select", "TL302", "--no-cache",
                                       "--output-format", "concise", str(path)])
    found = [line for line in result.output.splitlines() if ": TL302 " in line]
    assert len(found) == 1 and "cell 3:1:" in found[0], result.output


def _tl301_lines(source: str, *, preview: bool) -> tuple[list[int], int]:
    rule = all_rules()["TL301"]
    result = lint_source(SourceFile("example.py", textwrap.dedent(source)),
                         FileSettings.for_rules([rule], {"TL301"},
                                                options=Options(preview=preview)))
    return [d.line for d in result.diagnostics], result.preview_only


def test_tl301_is_default_where_the_code_runs_repeatedly_and_preview_in_one_off_setup() -> None:
    source = """
    import torch

    mask = torch.ones(3).cuda()  # module level, once

    def build(n):
        return torch.zeros(n).cuda()  # called once below

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("pos", torch.arange(8).cuda())  # the constructor

        def forward(self, x):
            return x + torch.ones(8).cuda()  # every forward

    def step(model, loader):
        for x in loader:
            noise = torch.zeros(4).cuda()  # every batch
            model(x + noise)

    table = build(3)
    if __name__ == "__main__":
        dummy = torch.ones(2).cuda()  # a script's setup
    """
    assert _tl301_lines(source, preview=False) == ([15, 19], 4)
    assert _tl301_lines(source, preview=True) == ([4, 7, 12, 15, 19, 24], 0)


def test_tl301_a_function_called_from_a_loop_runs_repeatedly() -> None:
    source = """
    import torch

    def sample_noise(n, device):
        return torch.zeros(n).to(device)

    def main(device):
        for epoch in range(10):
            print(sample_noise(4, device))
    """
    assert _tl301_lines(source, preview=False) == ([5], 0)
