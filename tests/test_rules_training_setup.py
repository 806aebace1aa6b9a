"""Unit tests for the training-setup rules (TL109, TL223, TL224, TL310, TL802, TL903) beyond their
fixtures: module-level training scripts, bindings followed through the file, the shapes
that keep them silent, and their fixes."""

from __future__ import annotations

import os

from test_rules_training import findings, fixed

# ------------------------------------------------------------------------ TL223
SCRIPT = """
import torch
from torch.cuda.amp import GradScaler as Scaler

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = Scaler()
for x in range(3):
    scaler.scale(model(torch.randn(1, 2)).sum()).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # keep
    scaler.step(opt)
    scaler.update()
"""


def test_tl223_module_level_script_and_its_fix_keeps_the_comment() -> None:
    assert findings("TL223", SCRIPT) == [(10, 5)]
    out = fixed("TL223", SCRIPT)
    assert "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # keep\n" in out


def test_tl223_no_fix_when_two_optimizers_are_stepped() -> None:
    source = """
    import torch
    def train(model, a, b, loss):
        scaler = torch.amp.GradScaler()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(a)
        scaler.step(b)
    """
    assert findings("TL223", source) == [(6, 5)]
    assert "unscale_" not in fixed("TL223", source)


def test_tl223_silent_outside_training_code_or_for_a_non_torch_clip() -> None:
    assert findings("TL223", """
    from mylib import clip_grad_norm_
    def train(model, opt, scaler, loss):
        scaler.scale(loss).backward()
        clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
    """) == []
    # a scaler bound to something that is not a GradScaler in the file
    assert findings("TL223", """
    import torch
    class T:
        def __init__(self):
            self.scaler = ApexScaler()
        def step(self, model, opt, loss):
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            self.scaler.step(opt)
    """) == []


# ------------------------------------------------------------------------ TL802
def test_tl802_self_attributes_across_methods() -> None:
    source = """
    import torch.utils.data as tud
    class Trainer:
        def __init__(self, ds):
            self.sampler = tud.distributed.DistributedSampler(ds)
            self.loader = tud.DataLoader(ds, 4, False, self.sampler)
        def fit(self, epochs):
            while epochs:
                for batch in enumerate(self.loader):
                    self.step(batch)
                epochs -= 1
    """
    assert findings("TL802", source) == [(5, 24)]
    assert findings("TL802", source + "        self.sampler.set_epoch(epochs)\n") == []


def test_tl802_silent_for_a_non_torch_sampler_or_two_loaders_of_one_sampler() -> None:
    assert findings("TL802", """
    from mylib import DistributedSampler
    from torch.utils.data import DataLoader
    def train(ds, epochs):
        loader = DataLoader(ds, sampler=DistributedSampler(ds))
        for epoch in range(epochs):
            for b in loader:
                pass
    """) == []
    assert findings("TL802", """
    from torch.utils.data import DataLoader, DistributedSampler
    def train(ds, epochs, big):
        s = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=s) if big else None
        for epoch in range(epochs):
            for b in loader:
                pass
    """) == []


# ------------------------------------------------------------------------ TL903
DATASET = """
import numpy as np
from torch.utils.data import Dataset
rng = np.random.default_rng(0)
class Jitter(Dataset):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        {body}
"""


def test_tl903_module_generator_without_a_loader_in_the_file_is_reported() -> None:
    assert findings("TL903", DATASET.format(body="return rng.normal()")) == [(4, 7)]


def test_tl903_a_local_generator_of_the_same_name_is_not_the_module_one() -> None:
    body = "rng = np.random.default_rng(i)\n        return rng.normal()"
    assert findings("TL903", DATASET.format(body=body)) == []


def test_tl903_a_generator_of_another_library_is_not_followed() -> None:
    source = DATASET.replace("np.random.default_rng(0)", "mylib.default_rng(0)")
    assert findings("TL903", source.format(body="return rng.normal()")) == []


# ------------------------------------------------------------------------ TL224
def test_tl224_module_level_script_and_rebinding_in_between() -> None:
    source = """
    import torch
    net = torch.nn.Linear(2, 2)
    net.requires_grad_(False)
    {between}
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    """
    assert findings("TL224", source.format(between="pass")) == [(6, 7)]
    assert findings("TL224", source.format(between="net = torch.nn.Linear(2, 3)")) == []
    assert findings("TL224", source.format(between="net.add_module('head', torch.nn.Linear(2, 2))")) == []


def test_tl224_not_torch_optimizer_is_silent() -> None:
    assert findings("TL224", """
    import torch
    from mylib import SGD
    def f(m):
        m.requires_grad_(False)
        return SGD(m.parameters())
    """) == []


# ------------------------------------------------------------------------ TL310
def test_tl310_loader_bound_on_self_and_a_model_built_on_the_device() -> None:
    source = """
    import torch
    class Trainer:
        def __init__(self, ds):
            self.loader = torch.utils.data.DataLoader(ds, batch_size=2)
        def fit(self, net_cls):
            model = net_cls().to("cuda:0")
            for batch in self.loader:
                model(batch)
    """
    assert findings("TL310", source) == [(9, 19)]


def test_tl310_silent_for_a_cpu_device_object_and_a_rebound_batch() -> None:
    assert findings("TL310", """
    import torch
    def run(model, ds):
        dev = torch.device("cpu")
        model.to(dev)
        for x in torch.utils.data.DataLoader(ds):
            model(x)
    """) == []
    assert findings("TL310", """
    import torch
    def run(model, ds, prepare):
        model.cuda()
        for x in torch.utils.data.DataLoader(ds):
            x = prepare(x)
            model(x)
    """) == []


# ------------------------------------------------------------------------ TL311
def preview_findings(code: str, source: str) -> list[tuple[int, int]]:
    import textwrap

    from torchlint.analysis.options import Options
    from torchlint.config.file_settings import FileSettings
    from torchlint.engine.lint import lint_source
    from torchlint.registry import all_rules
    from torchlint.source import SourceFile

    settings = FileSettings.for_rules([all_rules()[code]], options=Options(preview=True))
    result = lint_source(SourceFile("t.py", textwrap.dedent(source)), settings)
    return [(d.line, d.column) for d in result.diagnostics if d.code == code]


def test_tl311_forward_of_an_instance_bound_then_compiled() -> None:
    source = """
    import torch
    class Net(torch.nn.Module):
        def forward(self, x):
            print(x.shape)
            return x
    net = Net()
    fast = torch.compile(net)
    """
    assert preview_findings("TL311", source) == [(5, 9)]
    from torchlint.registry import all_rules
    assert all_rules()["TL311"].preview  # runs only with --preview
    assert preview_findings("TL311", source.replace("fast = torch.compile(net)", "")) == []


def test_tl311_guarded_by_is_compiling_and_non_tensor_tests() -> None:
    assert preview_findings("TL311", """
    import torch
    @torch.compile
    def f(x, flag=True):
        if not torch.compiler.is_compiling():
            print("eager")
        if flag and x.dim() == 2:
            return x
        return x + 1
    """) == []


# ------------------------------------------------------------------------ TL109
MODEL = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.aux_head = nn.Linear(4, 2)

    def forward(self, x):
        return self.body(x)
"""


def test_tl109_an_attribute_read_in_another_file_of_the_project(tmp_path) -> None:
    from test_project import check, write

    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "train.py", "def loss(model, x):\n    return model.body(x).sum()\n")
    assert check(tmp_path, "--no-cache", "--preview", "--select", "TL109", "pkg/model.py") == [
        "8:9 TL109"]
    write(tmp_path / "pkg" / "aux.py", "def aux(model, x):\n    return model.aux_head(x)\n")
    assert check(tmp_path, "--no-cache", "--preview", "--select", "TL109", "pkg/model.py") == []


def test_tl109_a_cached_result_is_redone_when_another_file_starts_reading_it(tmp_path) -> None:
    from test_project import check, write

    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "train.py", "def loss(model, x):\n    return model.body(x)\n")
    assert check(tmp_path, "--preview", "--select", "TL109", "pkg/model.py") == ["8:9 TL109"]
    write(tmp_path / "pkg" / "train.py", "def loss(model, x):\n    return model.aux_head(x)\n")
    assert check(tmp_path, "--preview", "--select", "TL109", "pkg/model.py") == []


def test_tl903_global_numpy_draws_only_for_targets_before_1_9() -> None:
    import textwrap

    from torchlint.analysis.options import Options
    from torchlint.config.file_settings import FileSettings
    from torchlint.engine.lint import lint_source
    from torchlint.registry import all_rules
    from torchlint.source import SourceFile

    source = textwrap.dedent("""
    import numpy as np
    from torch.utils.data import DataLoader, Dataset
    class RandomDataset(Dataset):
        def __getitem__(self, index):
            np.random.seed()
            return np.random.randint(0, 1000, 3)
        def __len__(self):
            return 16
    loader = DataLoader(RandomDataset(), batch_size=2, num_workers=4)
    """)

    def lines(target):
        settings = FileSettings.for_rules([all_rules()["TL903"]],
                                          options=Options(target_torch=target))
        return [d.line for d in lint_source(SourceFile("t.py", source), settings).diagnostics]

    assert lines((1, 8)) == [7]
    assert lines((1, 9)) == [] and lines(None) == []


def test_tl223_scaled_loss_bound_then_backward() -> None:
    assert findings("TL223", """
    import torch
    def train(model, opt, loss):
        scaler = torch.amp.GradScaler()
        scaled = scaler.scale(loss)
        scaled.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
    """) == [(7, 5)]


def test_tl224_frozen_with_requires_grad_in_the_loop() -> None:
    assert findings("TL224", """
    import torch
    def build(model):
        for p in model.parameters():
            p.requires_grad_(False)
        return torch.optim.SGD(model.parameters(), lr=0.1)
    """) == [(6, 12)]


def test_tl310_a_script_model_used_as_a_global_and_an_unpacked_batch() -> None:
    source = """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")
    model = torch.nn.Linear(4, 2).to(device)
    train_loader = DataLoader(dataset, batch_size=4)

    def train(epoch):
        for batch in train_loader:
            inputs, labels = batch
            output = model(inputs.float())
    """
    assert findings("TL310", source) == [(11, 24)]
    moved = source.replace("inputs, labels = batch", "inputs, labels = batch\n        inputs = inputs.to(device)")
    assert findings("TL310", moved) == []
    local = source.replace("def train(epoch):", "def train(model):")
    assert findings("TL310", local) == []


def test_tl802_a_global_loader_iterated_by_a_function_called_per_epoch() -> None:
    source = """
    from torch.utils.data import DataLoader, DistributedSampler
    train_sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, sampler=train_sampler)

    def train(epoch):
        for x, y in train_loader:
            step(x, y)

    for epoch in range(10):
        train(epoch)
    """
    assert findings("TL802", source) == [(3, 17)]
    assert findings("TL802", source.replace("train(epoch)\n", "pass\n")) == []


NOISY = """import numpy as np
from torch.utils.data import Dataset


class Noisy(Dataset):
    def __init__(self, n):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.rng.normal()
"""


def test_tl903_the_projects_loaders_of_the_dataset_decide(tmp_path) -> None:
    from test_project import check, write

    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "data.py", NOISY)
    train = "from torch.utils.data import DataLoader\nfrom .data import Noisy\n"
    write(tmp_path / "pkg" / "train.py", train + "loader = DataLoader(Noisy(8), batch_size=2)\n")
    assert check(tmp_path, "--no-cache", "--select", "TL903", "pkg/data.py") == []
    write(tmp_path / "pkg" / "train.py",
          train + "loader = DataLoader(Noisy(8), batch_size=2, num_workers=4)\n")
    assert check(tmp_path, "--no-cache", "--select", "TL903", "pkg/data.py") == ["8:20 TL903"]


def test_tl109_a_cached_result_is_redone_when_a_new_file_reads_it(tmp_path) -> None:
    # a subclass in a file added to the project reads the layer: the warm run sees it
    from test_project import check, write

    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", MODEL)
    write(tmp_path / "pkg" / "heads" / "__init__.py", "")
    assert check(tmp_path, "--preview", "--select", "TL109", "pkg/model.py") == ["8:9 TL109"]
    assert check(tmp_path, "--preview", "--select", "TL109", "pkg/model.py") == [
        "8:9 TL109"]  # cached
    write(tmp_path / "pkg" / "heads" / "aux.py", """
        from pkg.model import Net

        class WithAux(Net):
            def forward(self, x):
                return self.body(x), self.aux_head(x)
        """)
    heads = tmp_path / "pkg" / "heads"
    os.utime(heads, ns=(os.stat(heads).st_mtime_ns + 10**9,) * 2)  # a coarse clock
    assert check(tmp_path, "--preview", "--select", "TL109", "pkg/model.py") == []


DATA_MODULE = """
from torch.utils.data import DataLoader


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)


def build_loaders(train, val):
    train_loader = DataLoader(train, batch_size=8)
    return train_loader, DataLoader(val, batch_size=8, collate_fn=to_device)
"""
TRAIN_MODULE = """
import torch

from .data import build_loader, build_loaders


def train(model, dataset, optimizer):
    device = torch.device("cuda")
    model.to(device)
    loader = build_loader(dataset, 32)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y.to(device))
        loss.backward()
        optimizer.step()


def train_val(model, train_set, val_set):
    model.cuda()
    train_loader, val_loader = build_loaders(train_set, val_set)
    for x, y in train_loader:
        model(x)
    for x, y in val_loader:  # its collate_fn may move the batch
        model(x)
    for x, y in build_loader(val_set, 8):
        model(x)
"""


def test_tl310_a_loader_returned_by_a_function_of_another_file(tmp_path) -> None:
    from test_project import check, write

    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    write(tmp_path / "pkg" / "__init__.py", "")
    data = write(tmp_path / "pkg" / "data.py", DATA_MODULE)
    write(tmp_path / "pkg" / "train.py", TRAIN_MODULE)
    assert check(tmp_path, "--select", "TL310", "pkg/train.py") == [
        "11:56 TL310", "20:15 TL310", "24:15 TL310"]
    assert check(tmp_path, "--select", "TL310", "pkg/train.py") == [
        "11:56 TL310", "20:15 TL310", "24:15 TL310"]  # cached
    # the loaders now move their batches: the cached result depends on data.py
    data.write_text(data.read_text().replace("shuffle=True", "collate_fn=to_device").replace(
        "batch_size=8)", "batch_size=8, pin_memory_device='cuda')"))
    assert check(tmp_path, "--select", "TL310", "pkg/train.py") == []


def test_tl310_a_loader_returned_by_a_function_of_the_file() -> None:
    source = """
    import torch
    from torch.utils.data import DataLoader

    def make_loader(dataset):
        loader = DataLoader(dataset, batch_size=4)
        return loader

    def make_other(dataset):
        if dataset is None:
            return []
        return DataLoader(dataset)

    def train(model, dataset):
        model.cuda()
        for x in make_loader(dataset):
            model(x)
        for x in make_other(dataset):
            model(x)
    """
    assert findings("TL310", source) == [(17, 15)]


def test_tl903_project_loaders_over_the_dataset_and_their_worker_init_fn(tmp_path) -> None:
    from test_project import check, write

    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    write(tmp_path / "data.py", NOISY)
    train = write(tmp_path / "train.py", """
        import numpy as np
        from torch.utils.data import DataLoader
        from data import Noisy

        def seed_all(worker_id):
            np.random.seed(worker_id)

        noisy = Noisy(64)
        loader = DataLoader(noisy, num_workers=2, worker_init_fn=seed_all)
        plain = DataLoader(list(range(8)), num_workers=0, worker_init_fn=print)
        """)
    # seed_all reseeds NumPy's global state only: the dataset's own generator is copied
    assert check(tmp_path, "--select", "TL903", "data.py") == ["8:20 TL903"]
    train.write_text(train.read_text().replace(
        "np.random.seed(worker_id)",
        "info = get_worker_info()\n    info.dataset.rng = np.random.default_rng(info.seed)"))
    assert check(tmp_path, "--select", "TL903", "data.py") == []


def test_counted_preview_rules_run_only_where_the_screen_lets_them(tmp_path, monkeypatch) -> None:
    # without --preview, TL311 runs only to count the hint, and only on files that
    # reference torch.compile: not on every file some default rule fires on
    from click.testing import CliRunner

    import torchlint.rules.devices.tl311_compile_graph_break as tl311
    from torchlint.cli import main

    asked: list[str] = []
    real = tl311.compiled_functions
    monkeypatch.setattr(tl311, "compiled_functions",
                        lambda ctx: asked.append(ctx.path) or real(ctx))
    plain = tmp_path / "plain.py"
    plain.write_text("def f(model):\n    model.eval\n")
    compiled = tmp_path / "compiled.py"
    compiled.write_text("import torch\n\n@torch.compile\ndef g(model, x):\n    model.eval\n"
                        "    print(x)\n    return x\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--jobs", "1", str(plain),
                                       str(compiled)])
    assert [line.split(": ")[1][:5] for line in result.stdout.splitlines()
            if ": TL" in line] == ["TL404", "TL404"]
    assert "1 more finding with --preview" in result.output
    assert asked and all(path.endswith("compiled.py") for path in asked)
