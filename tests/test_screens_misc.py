"""The screen's ``ast`` checks of the serialization, migration, parallel and data rules: each
holds on the shapes its rule reports (aliases, project names, names bound elsewhere) and
rules out the common clean shapes that made the rule's words appear."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import replace

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.registry import all_rules
from torchlint.rules.data.screens import may_flag_tl903
from torchlint.rules.migration.screens import (
    may_flag_tl701,
    may_flag_tl703,
    may_flag_tl705,
    may_flag_tl719,
)
from torchlint.rules.parallel.screens import may_flag_tl801, may_flag_tl802
from torchlint.rules.serialization.screens import may_flag_tl604, may_flag_tl605
from torchlint.source import SourceFile

Check = Callable[[FileFacts, Options], bool]


def _holds(check: Check, text: str, options: Options | None = None) -> bool:
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return check(facts, options or Options())


def _reports(code: str, text: str, options: Options | None = None) -> bool:
    """The rule alone, forced to run (no prefilter), reports on ``text``."""
    settings = FileSettings.for_rules([all_rules()[code]], {code})
    if options is not None:
        settings = replace(settings, options=options)
    source = SourceFile("example.py", textwrap.dedent(text))
    return bool(lint_source(source, settings, prefilter=False).diagnostics)


def _case(code: str, check: Check, text: str, fires: bool) -> None:
    """A snippet the rule reports on must pass the check; one it does not report on (a
    shape the check should rule out) must not."""
    assert _reports(code, text) is fires
    assert _holds(check, text) is fires


# ------------------------------------------------------------------ TL604
TL604_FIRES = [
    """
    import torch
    from torch import nn
    model = nn.DataParallel(nn.Linear(2, 2)).cuda()
    torch.save(model.state_dict(), "m.pt")
    """,
    """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    def train(net):
        net = DDP(net)
        torch.save({"model": net.state_dict(), "epoch": 3}, "m.pt")
    """,
]
TL604_CLEAN = [
    """
    import torch
    from torch import nn
    model = nn.DataParallel(nn.Linear(2, 2))
    torch.save(model.module.state_dict(), "m.pt")
    """,
    """
    import torch
    def save(model):
        torch.save(model.state_dict(), "m.pt")
    """,
]




# ------------------------------------------------------------------ TL605
TL605_FIRES = [
    # a whole module saved and loaded again, through a name and a with-opened file
    """
    import torch
    from torch import nn
    model = nn.Linear(8, 2)
    path = "model.pt"
    with open(path, "wb") as f:
        torch.save(model, f)
    model = torch.load(path)
    """,
    # an argparse Namespace in the checkpoint, the same path expression on both sides
    """
    import argparse
    import torch
    args = argparse.ArgumentParser().parse_args()
    def save(state):
        torch.save({"state": state, "args": args}, args.out + "/ckpt.pt")
    def resume():
        return torch.load(args.out + "/ckpt.pt", weights_only=True)
    """,
    # an instance of a class of the file, copied, in a checkpoint a function names
    """
    import copy
    import torch
    class Settings:
        pass
    best = copy.deepcopy(Settings())
    torch.save(best, checkpoint_path(3))
    def checkpoint_path(epoch):
        return f"ckpt/{epoch}.pt"
    net = torch.load(checkpoint_path(4))
    """,
]
TL605_CLEAN = [
    # state dicts only
    """
    import torch
    def save(model, opt, path):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    def load(path):
        return torch.load(path, map_location="cpu")
    """,
    # weights_only=False already, or an allow-list around the load
    """
    import torch
    from torch import nn
    torch.save(nn.Linear(2, 2), "m.pt")
    a = torch.load("m.pt", weights_only=False)
    with torch.serialization.safe_globals([nn.Linear]):
        b = torch.load("m.pt")
    """,
    # a path only this function's parameter names: no other script can name it
    """
    import torch
    def load_checkpoint(model, checkpoint_path):
        state = torch.load(checkpoint_path, map_location="cpu")
        model.load_state_dict(state["state_dict"])
    def other():
        checkpoint_path = "elsewhere.pt"
    """,
]




@pytest.mark.parametrize("path", ['"ckpt/model.pth"', 'os.path.join("ckpt", "model.pth")',
                                  'f"ckpt/epoch_{n}.pth"', '"ckpt/epoch_%d.pth" % n',
                                  "CKPT", "config.CKPT", "open(P, 'rb')"])
def test_tl605_holds_on_a_path_another_script_may_save_to(path: str) -> None:
    """Another script of the folder may save there (the rule reads the project): the load
    alone holds, for every spelling of a path another file can name."""
    assert _holds(may_flag_tl605, f"""
        import os
        import torch
        import config
        from config import CKPT
        P = os.path.join("ckpt", "model.pth")
        def main(n):
            return torch.load({path})
        """)


# ------------------------------------------------------------------ TL703
TL703_FIRES = [
    "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
    # the new API in another function, or outside the switch's function
    """
    import torch
    def new():
        return torch.amp.GradScaler("cuda")
    def old():
        if True:
            return torch.cuda.amp.GradScaler()
    """,
    """
    import torch
    if hasattr(torch, "amp"):
        def make():
            return torch.cuda.amp.GradScaler()
    """,
    # a fallback branch's decorator belongs to its function
    """
    import torch
    if torch.amp.autocast is None:
        pass
    else:
        @torch.cuda.amp.autocast()
        def step(x):
            return x
    """,
]
TL703_CLEAN = [
    """
    import torch
    scaler = torch.amp.GradScaler("cuda") if NEW else torch.cuda.amp.GradScaler()
    """,
    """
    import torch
    from torch import autocast
    def context(new):
        if new:
            return autocast("cuda")
        else:
            return torch.cuda.amp.autocast()
    """,
    """
    import torch
    try:
        scaler = torch.amp.GradScaler("cuda")
    except AttributeError:
        scaler = torch.cuda.amp.GradScaler()
    """,
    "import torch\nx = torch.amp.GradScaler('cuda')\n",
]


@pytest.mark.parametrize("text", [
    # the new API's first name is also a parameter, or reached through an alias: the check
    # does not follow the rule's reading of those, so it cannot rule the call out
    """
    import torch
    def make(torch, new):
        return torch.amp.GradScaler("cuda") if new else torch.cuda.amp.GradScaler()
    """,
    """
    import torch
    amp = torch.amp
    scaler = amp.GradScaler("cuda") if NEW else torch.cuda.amp.GradScaler()
    """,
    # imported in another function only: not bound where the switch reads it
    """
    import torch
    def _probe():
        from torch import amp
        return amp
    def make_scaler(new):
        return amp.GradScaler("cuda") if new else torch.cuda.amp.GradScaler()
    """,
])
def test_tl703_holds_where_the_new_api_is_not_surely_named(text: str) -> None:
    assert _holds(may_flag_tl703, text)


# ------------------------------------------------------------------ TL705
TL705_FIRES = [
    "import torch\nx = torch.FloatTensor([1.0])\n",
    "import torch\nfrom torch import cuda as c\nx = c.LongTensor(3)\n",
    "from torch import FloatTensor as FT\nimport torch\nx = FT(2)\n",
    """
    import torch
    Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    x = Tensor([1.0])
    """,
]
TL705_CLEAN = [
    """
    import torch
    from torchvision import transforms
    t = transforms.Compose([transforms.ToTensor()])
    isinstance(x, torch.FloatTensor)
    y = torch.Tensor.add(x, 1)
    """,
]




def test_tl705_holds_on_a_project_name_ending_in_tensor() -> None:
    """``from utils import Tensor`` may be the project's alias of a legacy type."""
    assert _holds(may_flag_tl705, "import torch\nfrom .utils import Tensor\nx = Tensor(3)\n")
    assert _holds(may_flag_tl705, "import torch\nimport utils\nx = utils.LongTensor(3)\n")


# ------------------------------------------------------------------ TL719
TL719_FIRES = [
    "import torchvision\nm = torchvision.models.resnet50(pretrained=True)\n",
    "from torchvision.models import detection as d\nm = d.fasterrcnn_resnet50_fpn("
    "pretrained_backbone=False)\n",
]
TL719_CLEAN = [
    # timm's and the project's pretrained=, a torchvision builder with weights=
    """
    import timm
    import torchvision
    m = timm.create_model("resnet50", pretrained=True)
    n = build(pretrained=True)
    o = torchvision.models.resnet50(weights=None)
    """,
]




# ------------------------------------------------------------------ TL801
TL801_FIRES = [
    "import torch.nn as nn\nmodel = nn.DataParallel(model)\n",
    """
    from torch import nn
    DP = nn.DataParallel
    class Wrapped(DP):
        pass
    model = Wrapped(model)
    """,
]
TL801_CLEAN = [
    """
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    model = DistributedDataParallel(model)
    if isinstance(model, (nn.DataParallel, DistributedDataParallel)):
        model = model.module
    """,
]


@pytest.mark.parametrize("text", TL801_FIRES)
def test_tl801_holds_on_data_parallel_calls(text: str) -> None:
    # the rule reports a DataParallel that is not trained as a preview shape
    assert _reports("TL801", text, Options(preview=True))
    assert _holds(may_flag_tl801, text, Options(preview=True))


TRAINED = ["for x, y in data:\n    loss(model(x), y).backward()\n    opt.step()\n",
           "train(model, loader)\n", "trainer.fit(model)\n",
           "torch.autograd.backward(model(x).sum())\n"]
UNTRAINED = ["with torch.no_grad():\n    print(model(x))\n",
             "for x, y in data:\n    loss(model(x), y).backward()\n    opt.step()\n"
             "model = DDP(model)\n"]


@pytest.mark.parametrize(("tail", "trained"), [*((t, True) for t in TRAINED),
                                               *((t, False) for t in UNTRAINED)])
def test_tl801_outside_preview_holds_where_a_call_may_be_in_the_default_tier(
        tail: str, trained: bool) -> None:
    """Outside preview, a file whose DataParallel is surely never trained (it neither
    back-propagates, steps nor calls a training function; or it offers
    DistributedDataParallel) has only preview shapes: it is not parsed for them."""
    text = "import torch\nimport torch.nn as nn\nmodel = nn.DataParallel(model)\n" + tail
    assert _reports("TL801", text) is trained
    assert _holds(may_flag_tl801, text) is trained
    assert _reports("TL801", text, Options(preview=True))
    assert _holds(may_flag_tl801, text, Options(preview=True))


@pytest.mark.parametrize("text", TL801_CLEAN)
def test_tl801_rules_out_the_wrapper_named_only(text: str) -> None:
    assert not _reports("TL801", text, Options(preview=True))
    assert not _holds(may_flag_tl801, text, Options(preview=True))


# ------------------------------------------------------------------ TL802
TL802_LOOP = """
from torch.utils.data import DataLoader, DistributedSampler

def train(dataset, model, step, epochs):
    {sampler} = DistributedSampler(dataset{options})
    {loader} = DataLoader(dataset, batch_size=32, sampler={sampler})
    for epoch in range(epochs):
        {epoch}
        for batch in {loader}:
            step(model, batch)
"""


def _tl802(sampler: str = "sampler", loader: str = "loader", options: str = "",
           epoch: str = "pass", imports: str = "") -> str:
    return imports + TL802_LOOP.format(sampler=sampler, loader=loader, options=options,
                                       epoch=epoch)


@pytest.mark.parametrize("text", [
    _tl802(),
    _tl802(imports="def evaluate(s):\n    s.set_epoch(0)\n"),
    _tl802(sampler="self.sampler", loader="loader"),
])
def test_tl802_holds_on_a_sampler_without_set_epoch(text: str) -> None:
    _case("TL802", may_flag_tl802, text, True)


@pytest.mark.parametrize("text", [
    _tl802(epoch="sampler.set_epoch(epoch)"),
    _tl802(epoch="loader.sampler.set_epoch(epoch)"),
    _tl802(options=", shuffle=False"),
    _tl802(sampler="val_sampler"),
    _tl802(loader="test_loader"),
    _tl802(imports="import lightning as L\n"),
])
def test_tl802_rules_out_samplers_given_the_epoch(text: str) -> None:
    _case("TL802", may_flag_tl802, text, False)


# ------------------------------------------------------------------ TL903
TL903_FIRES = [
    """
    import numpy as np
    from torch.utils.data import DataLoader, Dataset
    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)
        def __getitem__(self, i):
            return self.rng.normal()
    loader = DataLoader(Noisy(), num_workers=4)
    """,
]
TL903_CLEAN = [
    # a generator made per sample, and one never drawn from
    """
    import numpy as np
    from torch.utils.data import DataLoader, Dataset
    class Noisy(Dataset):
        def __init__(self):
            self.seed = np.random.default_rng(0)
        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            return rng.normal() + np.random.rand()
    loader = DataLoader(Noisy(), num_workers=4)
    """,
]



@pytest.mark.parametrize("text", TL903_CLEAN)
def test_tl903_rules_out_generators_made_per_sample(text: str) -> None:
    # the generator made in __getitem__ is a local of a method: the rule reports only one
    # made in __init__ as self.X (or at module level), and the check rules it out too
    assert not _reports("TL903", text)
    assert not _holds(may_flag_tl903, text)
    assert not _holds(may_flag_tl903, text.replace("rng.normal() + ", ""))


def test_tl903_holds_on_global_draws_for_an_old_target() -> None:
    text = "import numpy as np\nclass D:\n    def __getitem__(self, i):\n" \
           "        return np.random.rand()\n"
    assert _holds(may_flag_tl903, text, Options(target_torch=(1, 8)))
    assert not _holds(may_flag_tl903, text)


_CASES = [(code, check, text, fires)
          for code, check, shapes in (
              ("TL604", may_flag_tl604, (TL604_FIRES, TL604_CLEAN)),
              ("TL605", may_flag_tl605, (TL605_FIRES, TL605_CLEAN)),
              ("TL703", may_flag_tl703, (TL703_FIRES, TL703_CLEAN)),
              ("TL705", may_flag_tl705, (TL705_FIRES, TL705_CLEAN)),
              ("TL719", may_flag_tl719, (TL719_FIRES, TL719_CLEAN)),
              ("TL903", may_flag_tl903, (TL903_FIRES, ())))
          for fires, texts in zip((True, False), shapes) for text in texts]


@pytest.mark.parametrize(("code", "check", "text", "fires"), _CASES)
def test_each_check_holds_where_its_rule_reports_and_rules_out_clean_shapes(
        code: str, check: Check, text: str, fires: bool) -> None:
    _case(code, check, text, fires)


def test_tl605_holds_on_a_module_base_of_the_settings() -> None:
    """A class the settings name as a module base (whatever its spelling) is a module."""
    text = """
        import torch
        from mylib import base_block
        path = output_dir()
        torch.save(base_block(), path)
        block = torch.load(path)
        """
    options = Options(module_bases=Options().module_bases | {"mylib.base_block"})
    assert _reports("TL605", text, options) and _holds(may_flag_tl605, text, options)
    assert not _reports("TL605", text) and not _holds(may_flag_tl605, text)


# ------------------------------------------------------------------ TL701
@pytest.mark.parametrize(("text", "flagged"), [
    ("import torch.nn as nn\nc = nn.MSELoss(size_average=False)\n", True),
    ("import torch.nn.functional as F\nF.mse_loss(a, b, reduce=False)\n", True),
    ("from torch.nn import L1Loss as L\nL(reduce=False)\n", True),
    ("import torch.nn as nn\nCrit = nn.MSELoss\nCrit(size_average=False)\n", True),
    ("import torch\nx.scatter_(0, i, s, reduce='add')\n", False),
    ("import torch\nself.log('a', 1, reduce=True)\n", False),
    ("from torch.distributed import all_reduce\nall_reduce(x, reduce=True)\n", False),
])
def test_tl701_check_needs_a_loss_given_the_legacy_arguments(text: str, flagged: bool) -> None:
    assert _reports("TL701", text) is flagged
    assert _holds(may_flag_tl701, text) is flagged


def test_tl701_check_holds_on_a_name_the_project_may_alias_to_a_loss() -> None:
    assert _holds(may_flag_tl701, "from mypkg.losses import crit\ncrit(reduce=False)\n")
