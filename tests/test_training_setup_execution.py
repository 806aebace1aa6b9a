"""The training-setup rules (TL223, TL224, TL903) proven with real torch on the CPU: the
bug each reports really happens when the code runs, and TL223's fix cures it.

Run with: python -m pytest -m torch tests/test_training_setup_execution.py
"""

from __future__ import annotations

import textwrap
import warnings

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _codes(code: str, source: str) -> list[int]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("case.py", source), FileSettings.for_rules([rule]))
    return [d.line for d in result.diagnostics if d.code == code]


def _codes_preview(code: str, source: str) -> list[int]:
    rule = all_rules()[code]
    settings = FileSettings.for_rules([rule], options=Options(preview=True))
    result = lint_source(SourceFile("case.py", source), settings)
    return [d.line for d in result.diagnostics if d.code == code]


def _run(source: str) -> dict:
    namespace: dict = {"__name__": "__case__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "<case>", "exec"), namespace)
    return namespace


# ------------------------------------------------------------------------ TL223
_AMP_STEP = textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    from torch.amp import GradScaler

    def train(model, optimizer, x, y, scaler):
        norms = []
        for _ in range(3):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)))
            scaler.step(optimizer)
            scaler.update()
        return norms

    def unscaled(model, optimizer, x, y):
        norms = []
        for _ in range(3):
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)))
            optimizer.step()
        return norms

    def setup():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        return model, torch.optim.SGD(model.parameters(), lr=0.01), torch.randn(8, 4), torch.randn(8, 2)

    SCALE = 1024.0
    model, optimizer, x, y = setup()
    result = train(model, optimizer, x, y, GradScaler("cpu", init_scale=SCALE, growth_interval=1000))
    model, optimizer, x, y = setup()
    reference = unscaled(model, optimizer, x, y)
""")


def test_tl223_clip_before_unscale_sees_norms_times_the_scale_and_the_fix_cures_it() -> None:
    assert _codes("TL223", _AMP_STEP) == [12]
    rule = all_rules()["TL223"]
    fixed = fix_source(SourceFile("case.py", _AMP_STEP),
                       FileSettings.for_rules([rule], options=Options()), unsafe=True).source.text
    assert "        scaler.unscale_(optimizer)\n        norms.append(" in fixed
    assert _codes("TL223", fixed) == []
    before, after = _run(_AMP_STEP), _run(fixed)
    scale = before["SCALE"]
    # before: the clip measured the scaled gradients, the scale factor too large
    for seen, true in zip(before["result"], before["reference"]):
        assert seen == pytest.approx(true * scale, rel=1e-4)
    # after: the clip measures the true gradients, as a run without mixed precision does
    assert after["result"] == pytest.approx(after["reference"], rel=1e-4)


# ------------------------------------------------------------------------ TL903
_DATASET = textwrap.dedent("""
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __init__(self, n):
            self.n = n
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return self.n

        def __getitem__(self, index):
            return float(self.rng.random())

    def reseed(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed % 2**32)

    def draws(init=None):
        loader = DataLoader(Noisy(8), batch_size=4, num_workers=2, worker_init_fn=init)
        return [batch.tolist() for batch in loader]
""")


def test_tl903_two_workers_draw_the_same_numbers_until_reseeded(tmp_path, monkeypatch) -> None:
    flagged = _DATASET.replace("worker_init_fn=init", "")
    assert _codes("TL903", flagged) == [9]
    assert _codes("TL903", _DATASET) == []  # the worker_init_fn reseeds it
    (tmp_path / "tl903_dataset.py").write_text(_DATASET)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tl903_dataset

    # worker 0 loads the first batch, worker 1 the second: identical copies of the generator
    first, second = tl903_dataset.draws()
    assert first == second
    first, second = tl903_dataset.draws(tl903_dataset.reseed)
    assert first != second


# ------------------------------------------------------------------------ TL224
_FROZEN = textwrap.dedent("""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    for p in model.parameters():
        p.requires_grad = False
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    before = [p.detach().clone() for p in model.parameters()]
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        losses.append(float(loss))
        if loss.requires_grad:
            loss.backward()
        optimizer.step()
    after = [p.detach().clone() for p in model.parameters()]
""")


def test_tl224_step_leaves_every_frozen_parameter_unchanged() -> None:
    assert _codes("TL224", _FROZEN) == [9]
    ns = _run(_FROZEN)
    assert all(torch.equal(a, b) for a, b in zip(ns["before"], ns["after"]))
    assert ns["losses"][0] == ns["losses"][-1]  # the loss stays flat
    # the look-alike with a new head assigned after freezing trains that head
    grown = _FROZEN.replace("optimizer = ", "model[2] = torch.nn.Linear(8, 2)\noptimizer = ")
    ns = _run(grown)
    assert ns["losses"][-1] < ns["losses"][0]


def test_tl224_freezing_after_the_optimizer_is_built_leaves_it_nothing_to_train() -> None:
    freeze = "for p in model.parameters():\n    p.requires_grad = False\n"
    build = "optimizer = torch.optim.SGD(model.parameters(), lr=0.5)\n"
    after = _FROZEN.replace(freeze + build, build + freeze)
    assert after != _FROZEN
    assert _codes("TL224", after) == [9]  # at the freezing statement
    ns = _run(after)
    assert all(torch.equal(a, b) for a, b in zip(ns["before"], ns["after"]))
    assert ns["losses"][0] == ns["losses"][-1]


# ------------------------------------------------------------------------ TL310
_UNMOVED = textwrap.dedent("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    def run(model, dataset, device):
        model.to(device)
        outputs = []
        for x, y in DataLoader(dataset, batch_size=4):
            outputs.append(model(x))
        return outputs

    # the meta device stands in for a GPU: its tensors live off the CPU as CUDA ones do
    dataset = TensorDataset(torch.randn(8, 3), torch.randn(8, 2))
""")


def test_tl310_an_unmoved_batch_meets_a_moved_model() -> None:
    assert _codes("TL310", _UNMOVED) == [9]
    ns = _run(_UNMOVED)
    with pytest.raises(RuntimeError, match="device"):
        ns["run"](torch.nn.Linear(3, 2), ns["dataset"], "meta")
    moved = _UNMOVED.replace("model(x)", "model(x.to(device))")
    assert _codes("TL310", moved) == []
    ns = _run(moved)
    outputs = ns["run"](torch.nn.Linear(3, 2), ns["dataset"], "meta")
    assert all(out.device.type == "meta" for out in outputs)


# ------------------------------------------------------------------------ TL311
_COMPILED = textwrap.dedent("""
    import torch

    @torch.compile
    def printed(x):
        y = x * 2
        print("step")
        return y + 1

    @torch.compile
    def read(x):
        y = x.sum().item()
        return x * y

    @torch.compile
    def branched(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    @torch.compile
    def through_numpy(x):
        arr = (x * 2).cpu().numpy()
        return torch.from_numpy(arr) + 1
""")


def test_tl311_each_reported_form_splits_the_graph_and_numpy_does_not() -> None:
    assert _codes_preview("TL311", _COMPILED) == [7, 12, 18]
    ns = _run(_COMPILED)
    graphs: list[int] = []

    def counting(gm, example_inputs):
        graphs.append(1)
        return gm.forward

    torch._dynamo.reset()
    for name, expected in (("printed", 2), ("read", 2), ("branched", 2), ("through_numpy", 1)):
        graphs.clear()
        function = ns[name].__wrapped__ if hasattr(ns[name], "__wrapped__") else ns[name]
        torch.compile(function, backend=counting)(torch.ones(3))
        assert len(graphs) == expected, name
