"""The screen's checks of the device rules (rules/devices/screens.py): each holds on the
shapes its rule reports (aliases, project names, notebooks' programs) and rules out the
common clean shapes that made the rule's older trigger hold."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.registry import all_rules
from torchlint.rules.devices import screens
from torchlint.source import SourceFile

Check = Callable[[FileFacts, Options], bool]


def _holds(check: Check, text: str, options: Options | None = None) -> bool:
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return check(facts, options or Options())


def _lint_codes(text: str, code: str) -> list[str]:
    """The findings of the rule alone, forced to run (no prefilter), on ``text``."""
    settings = FileSettings.for_rules([all_rules()[code]], {code})
    source = SourceFile("example.py", textwrap.dedent(text))
    return [d.code for d in lint_source(source, settings, prefilter=False).diagnostics]


# ------------------------------------------------------------------ TL310
TL310_FIRES = [
    # the rule's example: a model moved in the function, a loop over a DataLoader
    """
    import torch
    from torch.utils.data import DataLoader

    def train(model, dataset):
        device = torch.device("cuda")
        model.to(device)
        for x, y in DataLoader(dataset, batch_size=32):
            y = y.to(device)
            model(x)
    """,
    # a script: the model moved at module level, used by a function as a global
    """
    import torch.utils.data as tud
    net = Net().cuda()
    loader = tud.DataLoader(ds)

    def run():
        for i, (inputs, labels) in enumerate(loader):
            out = net(inputs.float())
    """,
    # a loader a project function returns (the rule reads the project), unpacked, in tqdm
    """
    from tqdm import tqdm
    from .data import build_loaders

    def main(cfg):
        model = build(cfg)
        model = model.to(cfg.device)
        train_loader, val_loader = build_loaders(cfg)
        for batch in tqdm(train_loader):
            inputs, targets = batch
            model(inputs)
    """,
    # a loader returned by a function of the file; a model wrapped after its move
    """
    from torch.utils.data import DataLoader
    from torch.nn.parallel import DistributedDataParallel as DDP

    def make():
        return DataLoader(ds)

    def main():
        model = DDP(Net().to(rank))
        for data in make():
            model(data)
    """,
    # self.loader assigned a DataLoader in another method; self.model moved here
    """
    from torch.utils.data import DataLoader

    class Trainer:
        def setup(self):
            self.loader = DataLoader(self.ds)

        def fit(self):
            self.model.cuda()
            for x, y in self.loader:
                self.model(x)
    """,
]

TL310_SILENT = [
    # the batch is moved (rebinding or .to) before the model sees it
    """
    from torch.utils.data import DataLoader

    def train(model, ds, device):
        model.to(device)
        for x, y in DataLoader(ds):
            x = x.to(device)
            model(x)
    """,
    # the model is a parameter moved nowhere in the file
    """
    def train_one_epoch(model, loader):
        for input, target in loader:
            output = model(input)
    """,
    # moved to the CPU
    """
    from torch.utils.data import DataLoader

    def evaluate(model, ds):
        model.to("cpu")
        for x, y in DataLoader(ds):
            model(x)
    """,
    # Lightning places the batches
    """
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader

    def run(model, ds):
        model.cuda()
        for x, y in DataLoader(ds):
            model(x)
    """,
    # a loop over something that is no loader
    """
    def run(model, items):
        model.cuda()
        for x in range(10):
            model(x)
        for x in items:
            model(x)
    """,
    # the move comes after the loop in the same function
    """
    from torch.utils.data import DataLoader

    def run(model, ds):
        for x, y in DataLoader(ds):
            model(x)
        model.cuda()
    """,
    # a loader with a collate function, which may move the batch
    """
    from torch.utils.data import DataLoader

    def run(model, ds):
        model.cuda()
        for x, y in DataLoader(ds, collate_fn=to_device):
            model(x)
    """,
]


@pytest.mark.parametrize("text", TL310_FIRES)
def test_tl310_check_holds_where_the_rule_reports(text: str) -> None:
    assert _holds(screens.may_flag_tl310, text)


@pytest.mark.parametrize("text", TL310_SILENT)
def test_tl310_check_rules_out_clean_loops(text: str) -> None:
    assert not _holds(screens.may_flag_tl310, text)


def test_tl310_a_lightning_name_rebound_in_the_file_does_not_silence_the_check() -> None:
    text = """
    from torch.utils.data import DataLoader
    try:
        import lightning
    except ImportError:
        lightning = None

    def run(model, ds):
        model.cuda()
        for x, y in DataLoader(ds):
            model(x)
    """
    assert _holds(screens.may_flag_tl310, text)


# ------------------------------------------------------------------ TL301
TL301_FIRES = [
    """
    import torch

    for step in range(1000):
        frames = torch.ones((1000, 64, 64)).cuda()
    """,
    # an alias, conversions in between, a device named for one
    """
    import torch as T

    def forward(self, x):
        return T.zeros(8).long().view(1, 8).to(x.device)
    """,
    """
    from torch import arange

    class Net:
        def forward(self, x):
            return arange(10).to(self.dev)
    """,
    # a *_like factory of a host tensor; an f-string device
    """
    import torch

    def step(rank):
        return torch.zeros_like(torch.tensor([1, 2])).to(f"cuda:{rank}")
    """,
]

TL301_SILENT = [
    # device= given; a move of something else; a draw with its own generator
    """
    import torch

    def f(x, g):
        a = torch.zeros(3, device="cuda")
        b = torch.tensor([1, 2]).cuda()
        c = torch.randn(3, generator=g).cuda()
        d = x.cuda()
        e = torch.zeros(3).to(torch.float16)
        return a, b, c, d, e
    """,
    # a *_like factory of a tensor that may already be on the device
    """
    import torch

    def f(x):
        return torch.zeros_like(x.grad).cuda()
    """,
    # a method that depends on the device sits in between
    """
    import torch

    def f():
        return torch.zeros(3).numpy().cuda()
    """,
]


@pytest.mark.parametrize("text", TL301_FIRES)
def test_tl301_check_holds_where_the_rule_reports(text: str) -> None:
    assert _holds(screens.may_flag_tl301, text)


@pytest.mark.parametrize("text", TL301_SILENT)
def test_tl301_check_rules_out_clean_moves(text: str) -> None:
    assert not _holds(screens.may_flag_tl301, text, Options(preview=True))


def test_tl301_one_off_setup_counts_with_preview_off_too() -> None:
    """A one-off move is a preview shape of the rule: counted, and used by a `# noqa`, in a
    run without preview."""
    text = """
    import torch
    mask = torch.ones(3).cuda()  # noqa: TL301
    """
    assert _holds(screens.may_flag_tl301, text)


# ------------------------------------------------------------------ TL302
TL302_FIRES = [
    """
    def step(model, loader, device):
        for images, labels in loader:
            images.to(device)
    """,
    """
    import torch as T

    def f():
        x = T.zeros(3).float()
        x.cuda()
    """,
    # a whole batch's item; an element unpacked from a batch
    """
    def f(train_loader):
        for i, batch in enumerate(train_loader):
            batch["image"].cuda()
    """,
    """
    def f(train_loader):
        for batch in train_loader:
            x, y = batch
            y.cpu()
    """,
    # a legacy constructor a project module may alias (the rule reads the project)
    """
    from .utils import FloatTensor

    def f():
        x = FloatTensor(3)
        x.cuda()
    """,
]

TL302_SILENT = [
    # modules move in place; parameters are unknown; the move is assigned
    """
    import torch

    class Net(torch.nn.Module):
        pass

    def main(device, x):
        model = Net()
        model.to(device)
        x.cuda()
        y = x.cuda()
    """,
    # a batch from a loop over something that is no loader
    """
    def f(items):
        for a, b in items:
            a.cuda()
    """,
]


@pytest.mark.parametrize("text", TL302_FIRES)
def test_tl302_check_holds_where_the_rule_reports(text: str) -> None:
    assert _holds(screens.may_flag_tl302, text)


@pytest.mark.parametrize("text", TL302_SILENT)
def test_tl302_check_rules_out_modules_and_unknown_names(text: str) -> None:
    assert not _holds(screens.may_flag_tl302, text)


# ------------------------------------------------------------------ TL303
def test_tl303_check_needs_a_cuda_call_before_the_setting() -> None:
    fires = """
    import os
    import torch

    print(torch.cuda.device_count())
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    """
    assert _holds(screens.may_flag_tl303, fires)
    assert _holds(screens.may_flag_tl303, """
    from os import environ
    x = y.to("cuda:0")
    environ.update({"CUDA_VISIBLE_DEVICES": "0"})
    """)
    assert _holds(screens.may_flag_tl303, """
    import os
    def main(m):
        m.cuda()
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
    """)
    assert not _holds(screens.may_flag_tl303, """
    import os
    import torch

    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    torch.cuda.manual_seed(0)
    print(torch.cuda.device_count())
    """)
    assert not _holds(screens.may_flag_tl303, """
    import os
    import torch

    torch.cuda.empty_cache()
    d = torch.device("cuda")
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    """)


# ------------------------------------------------------------------ TL305
def test_tl305_check_needs_a_stop_after_a_start_outside_loops_in_a_cuda_file() -> None:
    fires = all_rules()["TL305"].doc_example("## Example")  # the rule's own example
    assert "batch.cuda()" in fires
    assert _holds(screens.may_flag_tl305, fires)
    assert _holds(screens.may_flag_tl305, """
    from time import time as now

    def bench(model, x):
        t0 = now()
        model(x)
        t1 = now()
        print(t1 - t0, "cuda")
    """.replace('"cuda"', '"cuda:0"'))
    # after a loop, in its else clause: not inside its body
    assert _holds(screens.may_flag_tl305, """
    import time

    def bench(model, x):
        x = x.cuda()
        t0 = time.time()
        for _ in range(3):
            warm_up()
        else:
            model(x)
            print(time.time() - t0)
    """)
    # a running total inside the loop (an ETA)
    assert not _holds(screens.may_flag_tl305, """
    import time

    def train(model, loader):
        start = time.time()
        for x in loader:
            model(x.cuda())
            print(time.time() - start)
    """)
    # no CUDA in the file
    assert not _holds(screens.may_flag_tl305, fires.replace("batch.cuda()", "batch"))
    # one timestamp only
    assert not _holds(screens.may_flag_tl305, """
    import time
    x = y.cuda()
    print(time.time())
    """)


def test_tl305_check_holds_where_cuda_is_named_only_inside_a_dotted_name() -> None:
    """``torch.cuda.empty_cache()`` makes the file a CUDA one for the rule: the facts see
    ``cuda`` inside a dotted name, not only at its end."""
    text = """
    import time
    import torch

    def bench(model, x):
        start = time.perf_counter()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        model(x)
        end = time.perf_counter()
        return end - start
    """
    assert _lint_codes(text, "TL305")
    assert _holds(screens.may_flag_tl305, text)


def test_tl305_check_needs_the_start_in_the_stops_function() -> None:
    """The rule reads what runs before the stop in its own function: a start taken in
    another method (a callback's ``on_start``) is not one."""
    text = """
    import time

    class Monitor:
        def on_start(self):
            self.t0 = time.perf_counter()

        def on_end(self, model, x):
            model(x.cuda())
            return time.perf_counter() - self.t0
    """
    assert not _holds(screens.may_flag_tl305, text)
    assert not _lint_codes(text, "TL305")
    inline = text.replace("model(x.cuda())", "self.t0 = time.perf_counter()\n"
                          "            model(x.cuda())")
    assert _holds(screens.may_flag_tl305, inline)
    assert _lint_codes(inline, "TL305")


def test_tl301_a_seeded_draw_stays_on_the_host_on_purpose() -> None:
    drawn = textwrap.dedent("""
        import torch

        def sample(model):
            for _ in range(3):
                model(torch.randn(64, 20).to(device))
        """)
    assert _holds(screens.may_flag_tl301, drawn)
    # seeded at module level, in the function, or in its class: silent
    assert not _holds(screens.may_flag_tl301, drawn + "\ntorch.manual_seed(1)\n")
    assert not _holds(screens.may_flag_tl301, drawn.replace(
        "    for _", "    seed_everything(0)\n    for _"))
    # seeding a generator of its own, or seeding inside another function, does not count
    assert _holds(screens.may_flag_tl301, drawn + "\ng = torch.Generator().manual_seed(0)\n")
    assert _holds(screens.may_flag_tl301, drawn + "\ndef other():\n    torch.manual_seed(0)\n")


def test_tl303_check_keeps_to_the_scope_of_the_setting() -> None:
    # the CUDA call is in another function; the function launches child processes
    assert not _holds(screens.may_flag_tl303, """
    import os

    def build(m):
        m.cuda()

    def main():
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    """)
    assert not _holds(screens.may_flag_tl303, """
    import os, subprocess, torch

    def main():
        n = torch.cuda.device_count()
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        subprocess.run(["train.py"])
    """)
    assert _holds(screens.may_flag_tl303, """
    import os, torch

    def main():
        n = torch.cuda.device_count()
        os.environ.update(**{"CUDA_VISIBLE_DEVICES": "0"})
    """)
