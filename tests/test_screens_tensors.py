"""The ``ast`` checks of the tensor rules (``rules/tensors/screens.py``): each holds where
its rule can report (also through aliases, project names and sizes other files may
give) and rules out the common clean shapes that made the old triggers hold."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.analysis.options import Options
from torchlint.engine.triage import triage
from torchlint.rules.tensors import screens, size_screens

OPTIONS = Options()


def _holds(check, text: str) -> bool:  # type: ignore[no-untyped-def]
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return bool(check(facts, OPTIONS))


# ------------------------------------------------------------------ TL502
@pytest.mark.parametrize("text", [
    "import torch.nn.functional as F\ndef f(x):\n    return F.softmax(x)\n",
    "import torch.nn as nn\nhead = nn.Sequential(nn.Linear(2, 2), nn.Softmax())\n",
    "import torch.nn.functional as F\ny = F.log_softmax(x, dim=None)\n",
    "import torch.nn.functional as F\ny = F.softmin(x, None)\n",
    "from torch.nn.functional import softmax as sm\ny = sm(x)\n",
    "import torch.nn.functional as F\nact = F.softmax\ny = act(x)\n",
])
def test_tl502_holds_where_dim_is_missing(text: str) -> None:
    assert _holds(screens.may_flag_tl502, text)


@pytest.mark.parametrize("text", [
    "import torch.nn.functional as F\ny = F.softmax(x, dim=1) + F.log_softmax(x, -1)\n",
    "import torch.nn as nn\nhead = nn.Sequential(nn.Softmax(dim=1), nn.LogSoftmax(1))\n",
    "import torch.nn.functional as F\ny = F.softmax(*args)\nz = F.softmax(x, **kw)\n",
    "import torch\ny = torch.softmax(x, 1)\nz = x.softmax()\n",
    "import numpy as np\nfrom scipy.special import softmax\ny = softmax(x)\n",
    "import torch.nn.functional as F\ndef f(F):\n    return F.softmax(x, 1)\n",
])
def test_tl502_rules_out_calls_with_dim(text: str) -> None:
    assert not _holds(screens.may_flag_tl502, text)


# ------------------------------------------------------------------ TL501
@pytest.mark.parametrize("text", [
    "import torch\ny = x.permute(0, 2, 1).view(8, -1)\n",
    "import torch\ndef f(x):\n    y = x.transpose(1, 2)\n    return y.view(-1)\n",
    "import torch\ny = x.T.view(-1)\n",
    "import torch\ny = torch.transpose(x, 0, 1).view(-1)\n",
    "import torch\ny = (z := x.mT).view(-1)\n",
    "import torch\nif flip:\n    x = x.transpose(0, 1)\ny = x.view(-1, x.size(-1))\n",
    "import torch\ndef f(x):\n    if flip:\n        x = x.transpose(0, 1)\n"
    "    return x.view(-1, x.size(-1))\n",
])
def test_tl501_holds_on_a_view_of_a_producer(text: str) -> None:
    assert _holds(screens.may_flag_tl501, text)


@pytest.mark.parametrize("text", [
    "import torch\ny = x.view(8, -1)\nz = x.permute(0, 2, 1)\n",
    "import torch\ny = x.permute(0, 2, 1).reshape(8, -1)\n",
    "import torch\ny = x.transpose(1, 2).contiguous().view(8, -1)\n",
    "import torch\ny = x.transpose(1, 2).view(torch.float16)\nz = x.t().view(shape)\n",
    "import torch\ny = self.transpose(x).view(8, -1)\nz = a.transpose().view(2, 2)\n",
    # the name is assigned a producer in another function, or after the view
    "import torch\ndef f(x):\n    x = x.transpose(1, 2)\n    return x\n"
    "def g(x):\n    return x.view(-1)\n",
    "import torch\ndef f(x):\n    y = x.view(-1)\n    x = x.transpose(1, 2)\n    return x\n",
])
def test_tl501_rules_out_other_views(text: str) -> None:
    assert not _holds(screens.may_flag_tl501, text)


# ------------------------------------------------------------------ TL510-TL512
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


@pytest.mark.parametrize("text", [
    # literal sizes that disagree, in a Sequential, a list, an OrderedDict, add_module
    HEAD + "head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(256, 10))\n",
    HEAD + "H = 64\nlayers = [nn.Linear(H, H * 2), nn.Tanh(), nn.Linear(H, 1)]\n"
           "net = nn.Sequential(*layers)\n",
    HEAD + "from collections import OrderedDict\nnet = nn.Sequential(OrderedDict([\n"
           "    ('fc', nn.Linear(4, 8)), ('norm', nn.LayerNorm(6))]))\n",
    HEAD + """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential()
        self.body.add_module("fc", nn.Linear(8, 32))
        self.body.add_module("norm", nn.BatchNorm1d(16))
""",
    # forward chains, through activations and a helper method's list
    HEAD + """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 128)
        self.fc2 = nn.Linear(256, 10)
    def forward(self, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x.contiguous())
""",
    HEAD + """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(*self._block(12, 24))
    def _block(self, width, out):
        layers = [nn.Linear(width, out), nn.GELU()]
        layers.append(nn.LayerNorm(width))
        return layers
""",
    # sizes from the constructor's parameters: another file may build it with any
    HEAD + """
class M(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.fc1 = nn.Linear(a, b)
        self.fc2 = nn.Linear(a, 10)
    def forward(self, x):
        return self.fc2(self.fc1(x))
""",
    # a constant imported from the project, a class of the project used as a layer
    HEAD + "from .config import HIDDEN\nhead = nn.Sequential(nn.Linear(8, HIDDEN), "
           "nn.Linear(16, 2))\n",
    HEAD + "from .blocks import Block\nhead = nn.Sequential(nn.Linear(8, 16), Block(32, 4))\n",
    # an imported alias of a layer
    HEAD + "from torch.nn import Linear as Dense\nhead = nn.Sequential(Dense(4, 8), "
           "Dense(6, 2))\n",
    # inside a test function
    HEAD + "def test_it():\n    net = nn.Sequential(nn.Linear(10, 10), nn.Linear(5, 2))\n",
])
def test_tl510_holds_where_a_chain_may_disagree(text: str) -> None:
    assert _holds(size_screens.may_flag_tl510, text)


@pytest.mark.parametrize("text", [
    # consistent chains
    HEAD + "head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))\n",
    HEAD + """
class Block(nn.Module):
    expansion = 4
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout * 4, 3)
        self.bn = nn.BatchNorm2d(4 * cout)
        self.conv2 = nn.Conv2d(cout * 4, cout, 1)
    def forward(self, x):
        return self.conv2(F.relu(self.bn(self.conv(x))))
""",
    # sizes no analysis can prove: computed with ``or``, a call, in a branch
    HEAD + """
class Mlp(nn.Module):
    def __init__(self, in_features, hidden=None, out=None):
        super().__init__()
        hidden = hidden or in_features
        if out is None:
            out = in_features
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(make_divisible(hidden), out)
    def forward(self, x):
        return self.fc2(self.fc1(x))
""",
    # layers that never meet in one chain
    HEAD + "def a():\n    return nn.Linear(10, 20)\n\ndef b():\n    return nn.Linear(30, 5)\n",
    HEAD + """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 20)
        self.b = nn.Linear(30, 5)
    def forward(self, x, y):
        return self.a(x), self.b(y)
""",
    # a local Sequential list built in a loop: unknown
    HEAD + "def make(n):\n    layers = []\n    for i in range(n):\n"
           "        layers.append(nn.Linear(i, i + 1))\n    return nn.Sequential(*layers)\n",
])
def test_tl510_rules_out_chains_that_cannot_disagree(text: str) -> None:
    assert not _holds(size_screens.may_flag_tl510, text)


FLATTENED = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 5)
        self.fc = nn.Linear(16 * 5 * 5, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc(x)
"""


def test_tl511_holds_where_an_input_size_may_be_stated() -> None:
    # the dummy input may be in another file of the project (a chain on images that
    # flattens them), or in this one
    assert _holds(size_screens.may_flag_tl511, FLATTENED)
    stated = FLATTENED + "out = Net()(torch.randn(1, 3, 32, 32))\n"
    assert _holds(size_screens.may_flag_tl511, stated)
    # a constant of the file, or one another module defines
    for size in ("SIZE = 32\n", "from .config import SIZE\n"):
        named = FLATTENED + size + "model = Net()\nx = torch.randn(1, 3, SIZE, SIZE)\ny = model(x)\n"
        assert _holds(size_screens.may_flag_tl511, named)
    # a view to literal features, compared with the Linear that follows
    view = FLATTENED.replace("torch.flatten(x, 1)", "x.view(-1, 16 * 14 * 14)")
    assert _holds(size_screens.may_flag_tl511, view)


def test_tl511_rules_out_flattens_that_agree_or_cannot_be_known() -> None:
    pooled = HEAD + ("net = nn.Sequential(nn.Conv2d(3, 16, 5), nn.AdaptiveAvgPool2d(5), "
                     "nn.Flatten(), nn.Linear(16 * 5 * 5, 10))\n")
    assert not _holds(size_screens.may_flag_tl511, pooled)
    assert _holds(size_screens.may_flag_tl511, pooled.replace("AdaptiveAvgPool2d(5)",
                                                         "AdaptiveAvgPool2d(4)"))
    view = FLATTENED.replace("torch.flatten(x, 1)", "x.view(-1, 16 * 5 * 5)")
    assert not _holds(size_screens.may_flag_tl511, view)
    # a Linear after a flatten that starts on something else than images
    plain = HEAD + """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.embed = nn.Embedding(100, d)
        self.fc = nn.Linear(d, 2)
    def forward(self, x):
        return self.fc(self.embed(x).mean(1))
"""
    assert not _holds(size_screens.may_flag_tl511, plain)


@pytest.mark.parametrize(("text", "expected"), [
    (HEAD + "f = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16), nn.ReLU())\n", True),
    (HEAD + "f = nn.Sequential(nn.Linear(8, 16), nn.Dropout2d(0.1))\n", True),
    (HEAD + "f = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())\n", False),
    (HEAD + "f = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16))\n", False),
    (HEAD + "f = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Flatten(), nn.Linear(9, 2))\n", False),
])
def test_tl512_follows_ranks(text: str, expected: bool) -> None:
    assert _holds(size_screens.may_flag_tl512, text) is expected


def test_a_stated_input_of_the_right_size_is_no_mismatch() -> None:
    model = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 2)
    def forward(self, x):
        return self.fc(x)
"""
    assert not _holds(size_screens.may_flag_tl510, model + "y = Net()(torch.randn(4, 32))\n")
    assert _holds(size_screens.may_flag_tl510, model + "y = Net()(torch.randn(4, 16))\n")
    # two inputs of different sizes: the analysis states none
    assert not _holds(size_screens.may_flag_tl510, model + "y = Net()(torch.randn(4, 32))\n"
                      "z = Net()(torch.randn(4, 8))\n")
    # names are followed in their own function, assigned once
    scoped = model + """
def a():
    m = Net()
    x = torch.randn(4, 8)
def b():
    m = Net()
    x = torch.randn(4, 32)
    return m(x)
"""
    assert not _holds(size_screens.may_flag_tl510, scoped)
    assert _holds(size_screens.may_flag_tl510, scoped.replace("(4, 32)", "(4, 16)"))


BLOCKS = HEAD + """
class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3)
        self.bn = nn.BatchNorm2d(cout)
    def forward(self, x):
        return self.bn(self.conv(x))

class Parameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, 4))
"""


def test_an_input_stated_for_a_sequential() -> None:
    net = HEAD + "net = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(8, 2))\n"
    assert not _holds(size_screens.may_flag_tl510, net + "X = torch.rand(2, 20)\ny = net(X)\n")
    assert _holds(size_screens.may_flag_tl510, net + "X = torch.rand(2, 16)\ny = net(X)\n")
    assert _holds(size_screens.may_flag_tl512, net.replace("nn.Linear(20, 8)", "nn.Conv2d(3, 8, 3)")
                  + "y = net(torch.rand(2, 3))\n")


def test_a_class_of_the_file_used_as_a_layer_is_followed() -> None:
    agree = BLOCKS + "net = nn.Sequential(ConvBlock(3, 64), ConvBlock(64, 128))\n"
    assert not _holds(size_screens.may_flag_tl510, agree)
    assert _holds(size_screens.may_flag_tl510, agree.replace("ConvBlock(64, 128)",
                                                        "ConvBlock(32, 128)"))
    # no forward: the analysis proves nothing of it
    assert not _holds(size_screens.may_flag_tl510, BLOCKS + "net = nn.Sequential(Parameters(), "
                      "Parameters(), nn.Linear(4, 4))\n")
    # a class of another file may take and give anything
    assert _holds(size_screens.may_flag_tl510, HEAD + "from .blocks import ConvBlock\n"
                  "net = nn.Sequential(ConvBlock(3, 64), nn.Conv2d(64, 8, 1))\n")


def test_a_file_without_torch_is_never_held() -> None:
    text = "import mylib.nn as nn\nhead = nn.Sequential(nn.Linear(64, 1), nn.Linear(2, 1))\n"
    assert not _holds(size_screens.may_flag_tl510, text)


def test_a_file_the_mirror_cannot_read_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(self):  # type: ignore[no-untyped-def]
        raise ValueError("an unexpected shape")

    monkeypatch.setattr(size_screens._Mirror, "run", fail)
    text = HEAD + "head = nn.Sequential(nn.Linear(64, 128), nn.Linear(128, 10))\n"
    assert _holds(size_screens.may_flag_tl510, text) and _holds(size_screens.may_flag_tl512, text)
