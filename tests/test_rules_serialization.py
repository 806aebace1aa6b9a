"""Unit tests of the saving and loading rules beyond their fixtures."""

from __future__ import annotations

import os
import textwrap

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _lint(code: str, source: str, path: str = "example.py"):
    rule = all_rules()[code]
    return lint_source(SourceFile(path, textwrap.dedent(source)),
                       FileSettings.for_rules([rule], {code})).diagnostics


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_loading_what_the_file_saved_itself_is_silent(code: str) -> None:
    assert not _lint(code, """\
        import torch

        for epoch in range(3):
            torch.save(model.state_dict(), "best_model.pt")
        model.load_state_dict(torch.load('best_model.pt'))
        """)


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_own_save_through_an_open_file_and_a_joined_path(code: str) -> None:
    assert not _lint(code, """\
        import os
        import torch

        class Cached:
            def load(self):
                self.data = torch.load(os.path.join(self.root, self.processed,
                                                    self.file))

            def download(self):
                with open(os.path.join(self.root, self.processed, self.file), "wb") as f:
                    torch.save(self.data, f)
        """)


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_a_path_saved_elsewhere_is_still_reported(code: str) -> None:
    found = _lint(code, """\
        import torch

        def save(model, path):
            torch.save(model.state_dict(), path)

        def load(model, path):
            model.load_state_dict(torch.load(path))

        def resume(opt):
            return torch.load("saved/disc_%d.pth" % opt.epoch)

        def checkpoint(model, epoch):
            torch.save(model.state_dict(), "saved/gen_%d.pth" % epoch)
        """)
    assert [d.line for d in found] == [7, 10]


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_a_file_family_the_program_writes_is_its_own(code: str) -> None:
    assert not _lint(code, """\
        import torch

        if opt.epoch != 0:
            G.load_state_dict(torch.load("saved/%s/G_%d.pth" % (opt.dataset, opt.epoch)))
            D.load_state_dict(torch.load("saved/D_{}.pth".format(opt.epoch)))
            E.load_state_dict(torch.load(f"saved/E_{opt.epoch:03d}.pth"))
        for epoch in range(opt.epoch, opt.n_epochs):
            torch.save(G.state_dict(), "saved/%s/G_%d.pth" % (opt.dataset, epoch))
            torch.save(D.state_dict(), "saved/D_{}.pth".format(epoch))
            torch.save(E.state_dict(), f"saved/E_{epoch}.pth")
        """)


def test_tl602_leaves_tests_alone() -> None:
    source = """\
        import torch

        def test_reload(tmp_path, ckpt):
            assert torch.load(ckpt)["epoch"] == 1
        """
    assert not _lint("TL602", source, "tests/test_checkpoint.py")
    assert _lint("TL602", source, "tools/check.py")


def test_tl602_leaves_alone_data_read_straight_into_numpy() -> None:
    assert not _lint("TL602", """\
        import torch

        def load_mask(filename):
            return torch.load(filename).numpy()
        """)


def test_tl601_leaves_alone_a_load_under_an_allow_list() -> None:
    assert not _lint("TL601", """\
        import torch

        with torch.serialization.safe_globals([torch.nn.Conv2d]):
            model = torch.load(f)
        """)
    assert len(_lint("TL601", """\
        import torch

        with open(path, "rb") as f:
            model = torch.load(f)
        """)) == 1


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_a_path_named_once_then_saved_is_the_files_own(code: str) -> None:
    assert not _lint(code, """\
        import os
        import torch

        if resume:
            ckpt_path = os.path.join(out_dir, "ckpt.pt")
            checkpoint = torch.load(ckpt_path)
        for step in range(10):
            torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
        """)


@pytest.mark.parametrize("code", ["TL601", "TL602"])
def test_numpy_data_is_left_alone(code: str) -> None:
    assert not _lint(code, """\
        import torch

        def load_bounds(path, n_units):
            bounds = torch.load(path)
            return torch.from_numpy(bounds[n_units])

        series = torch.load("traindata.pt")
        inputs = torch.from_numpy(series[3:, :-1])
        """)
    assert len(_lint(code, """\
        import torch

        def load_bounds(path, n_units):
            bounds = torch.load(path)
            return bounds[n_units]
        """)) == 1


# ------------------------------------------------- TL605: saves in the project's other files
TRAIN = """\
import argparse
import os

import torch
from torch import nn

from config import CKPT


class Settings:
    pass


parser = argparse.ArgumentParser()
args = parser.parse_args()
model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.save(model, "ckpt/model.pth")
torch.save({"args": args, "model": model.state_dict()}, os.path.join("ckpt", "last.pth"))
torch.save(model.state_dict(), "ckpt/weights.pth")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt/resume.pth")
torch.save(optimizer, "ckpt/optimizer.pth")
torch.save(Settings(), "ckpt/settings.pth")
torch.save(model, CKPT)


def save_epoch(epoch):
    net = nn.Linear(8, 2)
    path = f"ckpt/epoch_{epoch}.pth"
    with open(path, "wb") as handle:
        torch.save(net.cuda(), handle)
"""

EVALUATE = """\
import os

import torch
from torch.serialization import safe_globals

from config import CKPT

model = torch.load("ckpt/model.pth")  # error: TL605
model = torch.load("./ckpt/model.pth", weights_only=True)  # error: TL605
state = torch.load("ckpt/last.pth")  # error: TL605
optimizer = torch.load("ckpt/optimizer.pth")  # error: TL605
settings = torch.load("ckpt/settings.pth")  # error: TL605
best = torch.load(CKPT)  # error: TL605
weights = torch.load("ckpt/weights.pth")  # a state_dict
resume = torch.load("ckpt/resume.pth")  # state_dicts only
other = torch.load("ckpt/other.pth")  # saved nowhere
trusted = torch.load("ckpt/model.pth", weights_only=False)
with safe_globals([torch.nn.Linear]):
    allowed = torch.load("ckpt/model.pth")


def load_epoch(epoch):
    path = os.path.join("ckpt", "epoch_%d.pth" % epoch)
    return torch.load(path)  # error: TL605


def load_any(path):
    return torch.load(path)  # a parameter: any file
"""


def _project(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return tmp_path


def _lint_in_project(code: str, path) -> list:
    from dataclasses import replace

    from torchlint.analysis.project import Project

    rule = all_rules()[code]
    settings = replace(FileSettings.for_rules([rule], {code}), project=Project())
    return lint_source(SourceFile.read(path), settings)


def test_tl605_finds_the_saves_of_the_scripts_beside_the_load(tmp_path) -> None:
    from fixture_support import expected

    root = _project(tmp_path, {"train.py": TRAIN, "evaluate.py": EVALUATE,
                               "config.py": 'CKPT = "ckpt/best.pth"\n'})
    result = _lint_in_project("TL605", root / "evaluate.py")
    assert {(d.line, d.code) for d in result.diagnostics} == expected(EVALUATE)
    messages = {d.line: d.message for d in result.diagnostics}
    assert "the project's train.py saves with a whole module" in messages[8]
    assert "an argparse.Namespace" in messages[10]
    assert "an optimizer object" in messages[11]
    assert "the project's class Settings" in messages[12]
    # what the answer learned from: the scripts beside it, config.py included
    assert {os.path.basename(d.path) for d in result.dependencies} >= {"train.py", "config.py"}


def test_tl605_cross_file_fix_passes_weights_only_false(tmp_path) -> None:
    root = _project(tmp_path, {"train.py": TRAIN, "evaluate.py": EVALUATE})
    result = _lint_in_project("TL605", root / "evaluate.py")
    first = next(d for d in result.diagnostics if d.line == 8)
    assert first.fix is not None and first.fix.applicability == "unsafe"


@pytest.mark.parametrize("layout", ["subfolder", "alone"])
def test_tl605_only_links_scripts_of_one_folder(tmp_path, layout: str) -> None:
    # a relative path names the same file only for programs run from the same place:
    # a script in another folder (another tutorial, another example) is not linked
    files = {"evaluate.py": EVALUATE}
    if layout == "subfolder":
        files["other/train.py"] = TRAIN
    root = _project(tmp_path, files)
    assert _lint_in_project("TL605", root / "evaluate.py").diagnostics == []


def test_tl605_without_a_project_knows_only_its_own_file(tmp_path) -> None:
    root = _project(tmp_path, {"train.py": TRAIN, "evaluate.py": EVALUATE})
    assert not _lint("TL605", (root / "evaluate.py").read_text(), str(root / "evaluate.py"))


def test_tl605_under_add_safe_globals_is_silent_for_project_saves(tmp_path) -> None:
    allowed = EVALUATE.replace("from config import CKPT\n", "from config import CKPT\n"
                               "torch.serialization.add_safe_globals([torch.nn.Linear])\n")
    root = _project(tmp_path, {"train.py": TRAIN, "evaluate.py": allowed})
    assert _lint_in_project("TL605", root / "evaluate.py").diagnostics == []


def test_tl601_is_silent_where_the_project_saves_the_file(tmp_path) -> None:
    root = _project(tmp_path, {"train.py": TRAIN, "evaluate.py": EVALUATE,
                               "config.py": 'CKPT = "ckpt/best.pth"\n'})
    tl601 = {d.line for d in _lint_in_project("TL601", root / "evaluate.py").diagnostics}
    tl605 = {d.line for d in _lint_in_project("TL605", root / "evaluate.py").diagnostics}
    assert tl605 and not tl601 & tl605
    # the project's saves of a state_dict are its own files too; "ckpt/other.pth" and a
    # parameter are not
    assert tl601 == {16, 28}


def test_shared_keys_name_one_path_however_it_is_spelled(tmp_path) -> None:
    import libcst as cst

    from torchlint.analysis.context import FileContext
    from torchlint.rules.serialization.files import shared_key

    module = cst.parse_module(textwrap.dedent("""\
        import os
        a = "ckpt/model.pth"
        b = os.path.join("ckpt", "model.pth")
        c = "./ckpt//model.pth"
        d = f"ckpt/epoch_{n}.pth"
        e = "ckpt/epoch_%03d.pth" % n
        f = os.path.join("ckpt", "epoch_{}.pth".format(n))
        g = os.path.join(root, "model.pth")
        h = "ckpt/{not a template}.pth"
        i = open("ckpt/model.pth", "wb")
        """))
    ctx = FileContext("x.py", module)
    keys = [shared_key(ctx, stmt.body[0].value) for stmt in module.body[1:]]
    assert keys == ["s:ckpt/model.pth"] * 3 + ["t:ckpt/epoch_{}.pth"] * 3 + [None, None,
                                                                      "s:ckpt/model.pth"]


@pytest.mark.torch
def test_tl605_the_script_beside_fails_until_fixed(tmp_path, monkeypatch) -> None:
    # train.py saves a whole module; evaluate.py, beside it, cannot read it back on a
    # current torch until the fix passes weights_only=False
    pytest.importorskip("torch")
    import subprocess
    import sys

    from click.testing import CliRunner

    from torchlint.cli import main

    _project(tmp_path, {
        "train.py": 'import torch\nfrom torch import nn\n\n'
                    'torch.save(nn.Linear(2, 2), "model.pth")\n',
        "evaluate.py": 'import torch\n\nmodel = torch.load("model.pth")\nprint(model)\n',
    })

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)

    assert run("train.py").returncode == 0
    failed = run("evaluate.py")
    assert failed.returncode != 0 and "UnpicklingError" in failed.stderr
    monkeypatch.chdir(tmp_path)
    fixed = CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL605", "--fix",
                                      "--unsafe-fixes", "evaluate.py"])
    assert fixed.exit_code == 0, fixed.output
    assert 'torch.load("model.pth", weights_only=False)' in (tmp_path / "evaluate.py").read_text()
    done = run("evaluate.py")
    assert done.returncode == 0 and "Linear" in done.stdout


def test_tl605_finds_the_save_in_a_notebook_beside_the_script(tmp_path) -> None:
    import json

    cells = ["import torch\nfrom torch import nn\n", "%matplotlib inline\n",
             'model = nn.Linear(2, 2)\ntorch.save(model, "model.pth")\n']
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                           "execution_count": None, "source": text} for text in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = _project(tmp_path, {
        "train.ipynb": json.dumps(notebook),
        "evaluate.py": 'import torch\n\nmodel = torch.load("model.pth")\n'})
    found = _lint_in_project("TL605", root / "evaluate.py").diagnostics
    assert [(d.line, "train.ipynb" in d.message) for d in found] == [(3, True)]


def test_tl605_a_setting_of_a_config_object_is_no_constant(tmp_path) -> None:
    # cfg.CKPT is an attribute of an object another script may change; config.CKPT is a
    # module's own name
    config = 'class Config:\n    CKPT = "a.pth"\n\n\ncfg = Config()\nCKPT = "b.pth"\n'
    train = ('import torch\nfrom torch import nn\nimport config\nfrom config import cfg\n\n'
             'torch.save(nn.Linear(2, 2), cfg.CKPT)\ntorch.save(nn.Linear(2, 2), config.CKPT)\n')
    evaluate = ('import torch\nfrom config import CKPT, cfg\n\n'
                'a = torch.load(cfg.CKPT)\nb = torch.load(CKPT)\n')
    root = _project(tmp_path, {"config.py": config, "train.py": train, "evaluate.py": evaluate})
    assert [d.line for d in _lint_in_project("TL605", root / "evaluate.py").diagnostics] == [5]


def test_tl605_a_numpy_array_saved_beside_is_refused(tmp_path) -> None:
    # the shape of examples/time_sequence_prediction: a generator script saves the data
    root = _project(tmp_path, {
        "generate_sine_wave.py": "import numpy as np\nimport torch\n\n"
                                 "x = np.empty((10, 100), 'int64')\n"
                                 "data = np.sin(x / 1.0 / 20).astype('float64')\n"
                                 "torch.save(data, open('traindata.pt', 'wb'))\n",
        "train.py": "import torch\n\ndata = torch.load('traindata.pt')\n"
                    "x = torch.from_numpy(data)\n",
        "other.py": "import numpy as np\nimport torch\n\n"
                    "torch.save(torch.from_numpy(np.zeros(3)), 'tensor.pt')\n"
                    "t = torch.load('tensor.pt')\n"})
    found = _lint_in_project("TL605", root / "train.py").diagnostics
    assert [(d.line, "a NumPy array" in d.message) for d in found] == [(3, True)]
    assert _lint_in_project("TL605", root / "other.py").diagnostics == []  # a tensor


@pytest.mark.torch
def test_tl605_numpy_arrays_fail_the_weights_only_load(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    import pickle

    import numpy as np

    path = tmp_path / "a.pt"
    torch.save(np.sin(np.zeros((2, 3))).astype("float64"), path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
    torch.save(torch.from_numpy(np.zeros(3)), path)
    torch.load(path)
