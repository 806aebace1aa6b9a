"""The size checks of TL510-TL512 (``may_flag_tl510``/``tl511``/``tl512`` in
``rules/tensors/size_screens.py``) follow the size analysis where real code made them loose:
whether a ``forward`` chain on images has a step labelled by a flatten, view or reshape
(then the analysis asks the project's other files for an input size), and whether a class
used as a layer surely stops its chain (then it passes no size on). Every snippet is also
linted with the rules forced to run, alone or in a project whose other file states an
input: where a check holds its rule reports, where it does not its rule stays silent."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from torchlint.analysis.options import Options
from torchlint.analysis.project import Project
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.registry import all_rules
from torchlint.rules.tensors import size_screens
from torchlint.source import SourceFile

CHECKS = {"TL510": size_screens.may_flag_tl510, "TL511": size_screens.may_flag_tl511,
          "TL512": size_screens.may_flag_tl512}


def _holds(code: str, text: str) -> bool:
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return bool(CHECKS[code](facts, Options()))


def _findings(code: str, text: str, tmp_path: Path | None = None,
              other: str | None = None) -> list[int]:
    """The lines ``code`` reports in ``text`` (model.py), linted alone or in a project
    whose other file (use.py) is ``other``."""
    rule = all_rules()[code]
    settings = FileSettings.for_rules([rule], {code})
    path = "model.py"
    if tmp_path is not None:
        (tmp_path / "model.py").write_text(textwrap.dedent(text), encoding="utf-8")
        if other is not None:
            (tmp_path / "use.py").write_text(textwrap.dedent(other), encoding="utf-8")
        settings = replace(settings, project=Project([str(tmp_path)]))
        path = str(tmp_path / "model.py")
    result = lint_source(SourceFile(path, textwrap.dedent(text)), settings, prefilter=False)
    return [d.line for d in result.diagnostics if d.code == code]


# a 2-D input stated by another file of the project, for a model taking images
STATES_2D = """
import torch
from model import Net
y = Net()(torch.randn(2, 3))
"""

ON_IMAGES = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.qkv = nn.Conv2d(16, 48, 1)

    def forward(self, x):
        x = self.conv(x)
        STEP
        return x
"""

def _on_images(step: str) -> str:
    return ON_IMAGES.replace("STEP", step)


# steps the analysis labels by a flatten, view or reshape: it asks the project for an
# input, and the Conv2d then receives the 2-D input the other file states
ASKING = [
    "x = x.permute(0, 2, 3, 1)",      # "a reshape (.permute)": no identifier says so
    "x = x.mean((2, 3))",
    "x = x.flatten(1)",
    "x = torch.flatten(x, 2)",
    "x = x.view(x.size(0), 4, -1)",
    "x = self.qkv(x).reshape(1, 2, 3, 4)",
    "x = self.qkv(x)\n        x = self.head_view(x)",   # an unknown module, named so
    "x = torch.reshape(x, (1, -1))",    # a call the analysis names by its callee
]


@pytest.mark.parametrize("step", ASKING)
def test_a_chain_on_images_with_a_step_naming_a_reshape_holds(step: str,
                                                              tmp_path: Path) -> None:
    text = _on_images(step)
    assert _holds("TL512", text)
    assert _findings("TL512", text) == []  # alone: no input is stated
    # reported at the Conv2d the 2-D input reaches
    assert _findings("TL512", text, tmp_path, STATES_2D)[:1] == [8]


# the clean shapes of real code (timm's attention layers): the reshapes apply to values
# split off the chain, which then goes on or stops for another reason
NOT_ASKING = [
    "q, k, v = torch.split(self.qkv(x), [16, 16, 16], dim=1)\n"
    "        q = q.reshape(1, 2, 3, 4)\n        x = q.transpose(1, 2)",
    "B, C, H, W = x.shape\n        k = x.new_zeros(B).view(-1)",
    "x = self.qkv(x)\n        y = torch.split(x, 16, dim=1)\n        x = self.missing(y)",
    "x = x + 1\n        x = self.qkv(x)",
    "x = nn.functional.unfold(x, 2)",
]


@pytest.mark.parametrize("step", NOT_ASKING)
def test_a_chain_whose_steps_name_no_reshape_is_ruled_out(step: str, tmp_path: Path) -> None:
    text = _on_images(step)
    assert not _holds("TL512", text)
    # the project's 2-D input is never asked for
    assert _findings("TL512", text, tmp_path, STATES_2D) == []


def test_a_reshape_named_by_an_import_or_the_constructor_holds(tmp_path: Path) -> None:
    # an unknown module whose reason quotes what __init__ built it from
    text = _on_images("x = self.head(x)").replace(
        "self.qkv = nn.Conv2d(16, 48, 1)", "self.head = nn.Unflatten(1, (4, 4))")
    assert _holds("TL512", text)
    assert _findings("TL512", text, tmp_path, STATES_2D) == [8]
    # a function imported under another name: the analysis names the step by what it is
    aliased = _on_images("x = fold(x)").replace(
        "import torch.nn as nn", "import torch.nn as nn\nfrom ops import flatten_2d as fold")
    assert _holds("TL512", aliased)
    assert _findings("TL512", aliased, tmp_path, STATES_2D) == [9]
    other = aliased.replace("flatten_2d", "rearrange")
    assert not _holds("TL512", other)
    assert _findings("TL512", other, tmp_path, STATES_2D) == []
    # the same unknown module with nothing naming a reshape
    plain = text.replace("nn.Unflatten(1, (4, 4))", "nn.Unfold(2)")
    assert not _holds("TL512", plain)
    assert _findings("TL512", plain, tmp_path, STATES_2D) == []


BLOCKS = """
import torch.nn as nn

class ConvLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
    def forward(self, x):
        return self.conv(x)

class Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = ConvLayer(channels, channels)
        self.bn = nn.BatchNorm2d(channels)
    def forward(self, x):
        out = self.bn(self.conv(x))
        return out + x

class Picked(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.layers = nn.ModuleDict({"conv": nn.Conv2d(cin, cout, 3)})
    def forward(self, x):
        x = self.layers["conv"](x)
        return x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3)
        BLOCKS
    def forward(self, x):
        x = self.stem(x)
        x = self.block(x)
        return self.norm(x)
"""


def _blocks(blocks: str) -> str:
    return BLOCKS.replace("BLOCKS", blocks)


@pytest.mark.parametrize("blocks", [
    # a block built from a parameter (the analysis reads no sizes of it) and one that
    # calls a layer it picks from a dict: both chains stop, the blocks pass no size on
    "self.block = Residual(128)\n        self.norm = nn.BatchNorm2d(64)",
    "self.block = Picked(32, 16)\n        self.norm = nn.BatchNorm2d(8)",
])
def test_a_class_whose_chain_surely_stops_passes_no_size_on(blocks: str) -> None:
    text = _blocks(blocks)
    assert not _holds("TL510", text)
    assert _findings("TL510", text) == []


def test_a_class_followed_as_a_layer_still_holds() -> None:
    # ConvLayer's chain never stops: 16 channels reach a BatchNorm2d of 8
    text = _blocks("self.block = ConvLayer(64, 16)\n        "
                                "self.norm = nn.BatchNorm2d(8)")
    assert _holds("TL510", text)
    assert _findings("TL510", text) == [33]
    # a block given the wrong channels
    wrong = _blocks("self.block = ConvLayer(32, 16)\n        "
                                 "self.norm = nn.BatchNorm2d(16)")
    assert _holds("TL510", wrong)
    assert _findings("TL510", wrong) == [32]


MNIST = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import datasets, transforms

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc1(x)

def main():
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1,), (0.3,))])
    train = datasets.MNIST("../data", train=True, download=True, transform=transform)
    loader = torch.utils.data.DataLoader(train, batch_size=64)
    model = Net()
"""


def test_the_images_of_a_dataset_are_the_input_of_the_one_model(tmp_path: Path) -> None:
    # MNIST's 1x28x28 images flow through the chain and agree with every layer: the
    # analysis asks the project for no other input
    for code in CHECKS:
        assert not _holds(code, MNIST)
        assert _findings(code, MNIST, tmp_path, STATES_2D) == []
    # a Linear that does not take the 64x12x12 features the images give
    wrong = MNIST.replace("nn.Linear(9216, 128)", "nn.Linear(9000, 128)")
    assert _holds("TL511", wrong)
    assert _findings("TL511", wrong) == [12]
    # CIFAR10's images have 3 channels
    cifar = MNIST.replace("datasets.MNIST", "datasets.CIFAR10")
    assert _holds("TL510", cifar)
    assert _findings("TL510", cifar) == [10]
    # a crop of the images to 32x32
    cropped = MNIST.replace("transforms.ToTensor()", "transforms.CenterCrop(32), "
                            "transforms.ToTensor()")
    assert _holds("TL511", cropped)
    assert _findings("TL511", cropped) == [12]


def test_a_dataset_whose_images_are_not_proven_leaves_the_input_open(tmp_path: Path) -> None:
    # a transform the analysis does not read: no dataset input, and the chain (on images,
    # flattened) may be given one by another file of the project
    unread = MNIST.replace("transforms.ToTensor()", "transforms.Pad(2), transforms.ToTensor()")
    assert _holds("TL512", unread)
    assert _findings("TL512", unread) == []
    assert _findings("TL512", unread, tmp_path, STATES_2D) == [10, 11]
    # a crop to a size another module defines: known there only
    named = MNIST.replace("transforms.ToTensor()", "transforms.CenterCrop(SIZE), "
                          "transforms.ToTensor()").replace(
        "from torchvision", "from config import SIZE\nfrom torchvision")
    assert _holds("TL511", named)
    (tmp_path / "use.py").unlink()
    (tmp_path / "config.py").write_text("SIZE = 32\n", encoding="utf-8")
    assert _findings("TL511", named, tmp_path) == [13]


def test_a_notebooks_program_is_checked_across_its_cells() -> None:
    """The model in one cell, the dataset in another, IPython syntax set aside."""
    from torchlint.notebook import Notebook

    model, _, loading = MNIST.partition("def main():\n")
    loading = textwrap.dedent(loading)
    for linear, reported in (("nn.Linear(9216, 128)", False), ("nn.Linear(4096, 128)", True)):
        notebook = Notebook.from_cells("n.ipynb", [
            (1, "%matplotlib inline\n" + model.replace("nn.Linear(9216, 128)", linear)),
            (2, "!ls ../data\n" + loading),
        ])
        assert _holds("TL511", notebook.program) is reported
        assert bool(_findings("TL511", notebook.program)) is reported


GATED = """
import torch
import torch.nn as nn

class Gate(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1)
    def forward(self, x, flag: bool = False):
        if flag:
            BINDING
        return self.conv(x)

net = nn.Sequential(Gate(3, 16), nn.BatchNorm2d(8))
"""


def test_a_branch_stops_a_block_only_where_it_rebinds_the_value() -> None:
    # an annotated assignment in a branch does not stop the analysis's chain: Gate passes
    # its 16 channels on to a BatchNorm2d of 8
    annotated = GATED.replace("BINDING", "x: torch.Tensor = x")
    assert _holds("TL510", annotated)
    assert _findings("TL510", annotated) == [14]
    # an assignment does: Gate is an unknown element, nothing is compared
    assigned = GATED.replace("BINDING", "x = x * 2")
    assert not _holds("TL510", assigned)
    assert _findings("TL510", assigned) == []


@pytest.mark.parametrize("binding", [
    "x = [t for t in x]", "x = 0 < x", "x = {'x': x}", "x = f'{x}'",
])
def test_an_expression_the_analysis_does_not_read_stops_no_block(binding: str) -> None:
    # what a comprehension iterates, a comparison's right side, a dict's items, an
    # f-string's parts: the analysis reads none, so its chain of Gate does not stop (the
    # value is gone, and the conv gets a fresh one)
    text = GATED.replace("        if flag:\n            BINDING\n", "        " + binding + "\n")
    assert _findings("TL510", text) == [13]
    assert _holds("TL510", text)


# ------------------------------------------------------------------ inputs of other files
def _screened(text: str, tmp_path: Path, other: str | None = None) -> bool:
    """TL512's check on model.py as the screen asks it: with the project known."""
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    if other is not None:
        (tmp_path / "use.py").write_text(textwrap.dedent(other), encoding="utf-8")
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    facts = replace(facts, project=Project([str(tmp_path)]).for_file(str(path)),
                    project_known=True)
    return bool(size_screens.may_flag_tl512(facts, Options()))


# files that give Net a 2-D input, however they name it
STATING = [
    STATES_2D,
    "import torch\nimport model\ny = model.Net()(torch.randn(2, 3))\n",
    "import torch\nimport model as m\nnet = m.Net()\ny = net(torch.zeros(2, 3))\n",
    "import torch\nfrom model import (\n    Net,  # the model\n)\ny = Net()(torch.randn(2, 3))\n",
    # two statements on a line: an import not read without parsing counts
    "import torch\nfrom model import Net; import os\ny = Net()(torch.randn(2, 3))\n",
]


@pytest.mark.parametrize("other", STATING)
def test_a_project_file_stating_an_input_keeps_the_chain(other: str, tmp_path: Path) -> None:
    text = _on_images("x = x.flatten(1)")
    assert _screened(text, tmp_path, other)
    assert _findings("TL512", text, tmp_path, other)[:1] == [8]


# files that never give this Net an input: another class of the same name, a model built
# without a dummy input, a factory of no literal shape
NOT_STATING = [
    None,
    "import torch\nfrom elsewhere import Net\ny = Net()(torch.randn(2, 3))\n",
    "import torch\nfrom other.model import Net\ny = Net()(torch.randn(2, 3))\n",
    "from model import Net\nnet = Net()\n",
    "import torch\nfrom model import Net\nnet = Net()\n",
]


@pytest.mark.parametrize("other", NOT_STATING)
def test_a_project_stating_no_input_for_the_model_rules_the_chain_out(
        other: str | None, tmp_path: Path) -> None:
    text = _on_images("x = x.flatten(1)")
    assert not _screened(text, tmp_path, other)
    assert _findings("TL512", text, tmp_path, other) == []


def test_without_knowing_the_project_the_chain_is_kept() -> None:
    # the facts of a text alone (the engine's own check) cannot rule out another file
    assert _holds("TL512", _on_images("x = x.flatten(1)"))


def test_a_screened_file_is_linted_again_once_another_file_states_an_input(
        tmp_path: Path) -> None:
    from torchlint.config.settings import Settings
    from torchlint.run.outcome import Mode
    from torchlint.run.runner import run

    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent(_on_images("x = x.flatten(1)")), encoding="utf-8")
    (tmp_path / "use.py").write_text("from model import Net\nnet = Net()\n", encoding="utf-8")
    settings = Settings(root=str(tmp_path))
    cache_dir = tmp_path / "cache"
    cold = list(run([str(model)], settings, Mode(), jobs=1, cache_dir=cache_dir))
    assert cold[0].diagnostics == []
    # the screen's answer rests on use.py: it is a dependency of the cached result
    assert str(tmp_path / "use.py") in {d.path for d in cold[0].dependencies}
    (tmp_path / "use.py").write_text(textwrap.dedent(STATES_2D), encoding="utf-8")
    warm = list(run([str(model)], settings, Mode(), jobs=1, cache_dir=cache_dir))
    assert [d.code for d in warm[0].diagnostics] == ["TL512"]
