"""The screen's ``ast`` checks of the module-definition rules (rules/modules/screens.py):
true on the shapes each rule reports, false on the common clean shapes that made the
looser triggers hold."""

from __future__ import annotations

import ast
import textwrap

import pytest
from fixture_support import FIXTURES, expected

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.registry import all_rules
from torchlint.rules.modules import screens
from torchlint.source import SourceFile

CHECKS = {code: getattr(screens, f"may_flag_{code.lower()}")
          for code in ("TL101", "TL102", "TL103", "TL104", "TL106", "TL107")}


def _holds(code: str, text: str, options: Options | None = None) -> bool:
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return CHECKS[code](facts, options or Options())


def _reports(code: str, text: str) -> bool:
    rule = all_rules()[code]
    settings = FileSettings.for_rules([rule], {code})
    return bool(lint_source(SourceFile("t.py", text), settings, prefilter=False).diagnostics)


MODULE = "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"

FLAGGED = {
    "TL101": [
        # a display, a comprehension, list(...), an empty list grown, a local list
        MODULE + "    def __init__(self):\n        self.a = [nn.Linear(2, 2), nn.ReLU()]\n",
        MODULE + "    def __init__(self, n):\n        self.a = [nn.Linear(2, 2) for _ in range(n)]\n",
        MODULE + "    def __init__(self, n):\n        self.a = list(nn.Linear(2, 2) for _ in range(n))\n",
        MODULE + "    def __init__(self):\n        self.a = []\n        for _ in range(3):\n"
                 "            self.a.append(nn.Linear(2, 2))\n",
        MODULE + "    def __init__(self):\n        self.a = []\n        self.a += [nn.Linear(2, 2)]\n",
        MODULE + "    def __init__(self):\n        blocks = []\n        blocks.append(nn.Linear(2, 2))\n"
                 "        self.a = blocks\n",
        MODULE + "    def __init__(self):\n        lin = nn.Linear(2, 2)\n        self.a = [lin]\n",
        "from torch.nn import Module, Linear as linear\n\n\nclass Net(Module):\n"
        "    def __init__(self):\n        self.a = [linear(2, 2)]\n",
        # a module class of the file, an aliased torch.nn
        "import torch.nn as tnn\n\n\nclass Block(tnn.Module):\n    pass\n\n\n"
        "class Net(tnn.Module):\n    def __init__(self):\n        self.a = [Block() for _ in 'ab']\n",
        # a method defined under an if of the class body
        "from torch import nn\n\n\nclass Net(nn.Module):\n    if True:\n"
        "        def __init__(self):\n            self.a = [nn.Linear(2, 2)]\n",
        "from torch import nn\n\n\nclass Net(nn.Module):\n    if False:\n        pass\n"
        "    elif True:\n        def __init__(self):\n            self.a = [nn.Linear(2, 2)]\n",
    ],
    "TL102": [
        MODULE + "    def __init__(self):\n        self.a = {'x': nn.Linear(2, 2)}\n",
        MODULE + "    def __init__(self, ks):\n        self.a = {k: nn.Linear(2, 2) for k in ks}\n",
        MODULE + "    def __init__(self):\n        self.a = dict(x=nn.Linear(2, 2))\n",
        MODULE + "    def __init__(self):\n        self.a = {}\n        self.a['x'] = nn.Linear(2, 2)\n",
        MODULE + "    def __init__(self):\n        self.a = dict()\n"
                 "        self.a.update({'x': nn.Linear(2, 2)})\n",
        MODULE + "    def __init__(self):\n        heads = {}\n        heads['x'] = nn.Linear(2, 2)\n"
                 "        self.a = heads\n",
    ],
    "TL103": [
        "from torch import nn\nx = nn.ModuleList([[nn.Linear(2, 2)] for _ in range(2)])\n",
        "from torch import nn\nx = nn.ModuleList(modules=[(nn.Linear(2, 2), nn.ReLU())])\n",
        "from torch.nn import Sequential as S, Linear\nx = S([Linear(2, 2), Linear(2, 2)])\n",
        "from torch import nn\nrows = nn.ModuleList()\nrows.append([nn.Linear(2, 2)])\n",
        "from torch import nn\nrows = nn.ModuleList()\nrows.extend([[nn.Linear(2, 2)]])\n",
        MODULE + "    def __init__(self):\n        self.rows = nn.ModuleList()\n"
                 "        self.rows.append((nn.Linear(2, 2), nn.ReLU()))\n",
    ],
    "TL104": [
        MODULE + "    def __init__(self):\n        self.m = torch.tensor([1.0, 2.0]).view(2, 1)\n"
                 "    def forward(self, x):\n        return x - self.m\n",
        MODULE + "    def __init__(self, n):\n        mask = torch.ones(n, n).triu()\n"
                 "        self.mask = mask\n    def forward(self, x):\n        return x * self.mask\n",
        MODULE + "    def __init__(self, s=(1.0, 2.0)):\n        self.s = torch.tensor(s)\n"
                 "    def forward(self, x):\n        return x * self.s.exp()\n",
    ],
    "TL106": [
        "from torch import nn\nx = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))\n",
        "from collections import OrderedDict\nfrom torch import nn\n"
        "x = nn.Sequential(OrderedDict([('c', nn.Conv1d(3, 8, 3)), ('b', nn.BatchNorm1d(8))]))\n",
        "from torch import nn\ndef f():\n    conv = nn.Conv2d(3, 8, 3, bias=True)\n"
        "    layers = [conv]\n    layers.append(nn.BatchNorm2d(8))\n    return layers\n",
        "from torch import nn\ndef f(bn):\n    layers = [nn.Conv2d(3, 8, 3)]\n    if bn:\n"
        "        layers += [nn.BatchNorm2d(8)]\n    return layers\n",
        "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        self.conv = nn.Conv3d(3, 8, 3)\n        self.bn = nn.BatchNorm3d(8)\n"
        "    def forward(self, x):\n        return self.bn(self.conv(x))\n",
    ],
    "TL107": [
        "from torch import nn\nencoder = nn.Linear(16, 8)\n\n\ndef embed(b):\n"
        "    return encoder.forward(b)\n",
        "import torch\n\n\ndef run(model, x):\n    return model.forward(x)\n",
        # imported in another function: a global here, the rule does not see the import
        "import torch\n\n\ndef load():\n    import net\n\n\ndef run(x):\n"
        "    return net.forward(x)\n",
        MODULE + "    def forward(self, x):\n        return self.body.forward(x)\n",
        MODULE + "    def run(self, x):\n        return self.forward(x)\n",
        MODULE + "    def forward(self, x):\n        for m in self.blocks:\n"
                 "            x = m.forward(x)\n        return x\n",
        "import torch\n\n\ndef run(x):\n    m = torch.nn.Linear(2, 2).to('cpu')\n"
        "    return m.forward(x)\n",
    ],
}

# shapes the rule reports when the project's other files say what a name is (a layer class,
# a module base): the check, which never reads them, must hold
WITH_THE_PROJECT = {
    "TL101": [
        "from torch import nn\nfrom .blocks import Block\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        self.a = [Block(), Block()]\n",
        # a module class of the project spelt in lower case, torch.nn's under an alias
        "from torch import nn\nfrom unet.parts import double_conv\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        self.a = [double_conv(3, 8)]\n",
        "from torch import nn\nfrom .base import BaseModel\n\n\nclass Net(BaseModel):\n"
        "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n",
    ],
    "TL103": [
        "from torch import nn\nfrom .blocks import Block\nx = nn.Sequential([Block()])\n",
    ],
    "TL104": [
        "import torch\nfrom .base import Base\n\n\nclass Net(Base):\n    def __init__(self):\n"
        "        self.m = torch.zeros(3)\n    def forward(self, x):\n        return x + self.m\n",
    ],
    "TL107": [
        "import torch\nfrom .nets import Net\n\n\ndef run(x):\n    return Net().eval().forward(x)\n",
        "from torch import nn\nlin = nn.Linear(16, 8)\n\n\ndef embed(b):\n"
        "    return lin.forward(b)\n",
    ],
}

CLEAN = {
    "TL101": [
        # lists of numbers or names, a list outside a module class, layers not in the list
        MODULE + "    def __init__(self, dims):\n        self.dims = [64, 128]\n"
                 "        self.fc = nn.Linear(2, 2)\n        self.names = [d for d in dims]\n",
        "from torch import nn\n\n\nclass Plain:\n    def __init__(self):\n"
        "        self.a = [nn.Linear(2, 2)]\n",
        MODULE + "    def __init__(self):\n        self.a = []\n        self.fc = nn.Linear(2, 2)\n"
                 "        self.a.append(3)\n",
        MODULE + "    def __init__(self):\n        self.fc = nn.ModuleList([nn.Linear(2, 2)])\n",
        "import os\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self, d):\n        self.paths = [os.path.join(d, 'a')]\n",
    ],
    "TL102": [
        MODULE + "    def __init__(self):\n        self.cfg = {'a': 1}\n        self.fc = nn.Linear(2, 2)\n",
        MODULE + "    def __init__(self):\n        self.cache = {}\n        self.fc = nn.Linear(2, 2)\n"
                 "    def forward(self, x):\n        self.cache['x'] = x\n        return x\n",
    ],
    "TL103": [
        "from torch import nn\nx = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])\n",
        "from torch import nn\nx = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU()])\n",
        "from torch import nn\nx = nn.ModuleList()\nx.append(nn.Linear(2, 2))\n",
        # pairs for an OrderedDict, grown on a plain list
        "from torch import nn\nstages = []\nstages.append(('s', nn.Linear(2, 2)))\n",
    ],
    "TL104": [
        # a buffer, a device given, a scalar constant, never read outside __init__
        MODULE + "    def __init__(self):\n        self.register_buffer('m', torch.zeros(3))\n"
                 "    def forward(self, x):\n        return x - self.m\n",
        MODULE + "    def __init__(self, d):\n        self.m = torch.zeros(3, device=d)\n"
                 "    def forward(self, x):\n        return x - self.m\n",
        MODULE + "    def __init__(self, dim):\n        self.scale = torch.tensor(dim ** -0.5)\n"
                 "    def forward(self, x):\n        return x * self.scale\n",
        MODULE + "    def __init__(self):\n        self.m = torch.zeros(3)\n"
                 "        self.n = self.m + 1\n",
    ],
    "TL106": [
        # no bias kept, other dimensions, not next to each other
        "from torch import nn\nx = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n",
        "from torch import nn\nx = nn.Sequential(nn.Conv1d(3, 8, 3), nn.BatchNorm2d(8))\n",
        "from torch import nn\nx = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))\n",
        "from torch import nn\n\n\nclass A(nn.Module):\n    def __init__(self):\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n\n\nclass B(nn.Module):\n"
        "    def __init__(self):\n        self.bn = nn.BatchNorm2d(8)\n",
    ],
    "TL107": [
        # super(), a class's function, a hook, a warm-up, an extension, a dummy input
        MODULE + "    def forward(self, x):\n        return super().forward(x)\n",
        MODULE + "    def forward(self, x):\n        return nn.Linear.forward(self, x)\n",
        "import torch\n\n\ndef hook(module, x):\n    return module.forward(x)\n",
        MODULE + "    def __init__(self):\n        self.body = nn.Linear(2, 2)\n"
                 "        self.body.forward(torch.ones(2))\n",
        "import torch\nimport my_ext\n\n\ndef run(x):\n    return my_ext.forward(x)\n",
        "import torch\n\n\ndef run(model):\n    return model.forward(torch.zeros(1, 3))\n",
        "import torch\n\n\ndef patch(model):\n    old = model.forward\n"
        "    model.forward = lambda x: old(x)\n    return model.forward(1)\n",
        "import torch\n\n\ndef run(session, x):\n    return session.forward(x)\n",
        "import cv2\nnet = cv2.dnn.readNet('m')\nnet.forward()\n",
        "class Plain:\n    def run(self, x):\n        return self.forward(x)\n",
    ],
}


@pytest.mark.parametrize(("code", "text"), [(c, t) for c, ts in FLAGGED.items() for t in ts])
def test_check_holds_where_the_rule_reports(code: str, text: str) -> None:
    assert _reports(code, text), "the snippet must be a finding of the rule"
    assert _holds(code, text)


@pytest.mark.parametrize(("code", "text"),
                         [(c, t) for c, ts in WITH_THE_PROJECT.items() for t in ts])
def test_check_holds_where_the_project_may_make_a_finding(code: str, text: str) -> None:
    assert _holds(code, text)


@pytest.mark.parametrize(("code", "text"), [(c, t) for c, ts in CLEAN.items() for t in ts])
def test_check_rules_out_clean_shapes(code: str, text: str) -> None:
    assert not _reports(code, text), "the snippet must be clean"
    assert not _holds(code, text)


def test_a_base_from_elsewhere_or_configured_makes_a_module_class() -> None:
    text = ("from torch import nn\nfrom lib import Base\n\n\nclass Net(Base):\n"
            "    def __init__(self):\n        self.a = {'x': nn.Linear(2, 2)}\n")
    assert _holds("TL102", text)  # an imported base may be a module class
    local = text.replace("from lib import Base\n", "class Base:\n    pass\n")
    assert not _holds("TL102", local)
    # the answer follows the options, also asked again of the same file
    facts = triage(local)
    assert facts is not None
    assert not CHECKS["TL102"](facts, Options())
    assert CHECKS["TL102"](facts, Options().extended(module_bases=["Base"]))


def _fixture_pieces(code: str) -> list[tuple[int, str]]:
    """Each finding of a rule's fixture alone: the fixture's imports and module-level
    assignments, and the one top-level statement holding the finding's line."""
    path = FIXTURES / f"{code}.py"
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    shared = [s for s in tree.body if not isinstance(
        s, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    pieces = []
    for line, _ in sorted(expected(text)):
        holder = next(s for s in tree.body
                      if s.lineno <= line <= s.end_lineno)  # type: ignore[operator]
        chosen = sorted({id(s): s for s in (*shared, holder)}.values(),
                        key=lambda s: s.lineno)
        start = lambda s: min([s.lineno, *(d.lineno for d in getattr(  # noqa: E731
            s, "decorator_list", []))])
        piece = "".join("".join(lines[start(s) - 1:s.end_lineno]) for s in chosen)
        pieces.append((line, piece))
    return pieces


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_check_holds_for_each_finding_of_the_fixture_alone(code: str) -> None:
    checked = 0
    for line, piece in _fixture_pieces(code):
        if not _reports(code, piece):
            continue  # the finding needs another part of the fixture
        checked += 1
        assert _holds(code, piece), f"{code} fixture line {line}:\n{piece}"
    assert checked


# TL101 as the rule decides it: the shapes it reports, also through locals and growth
LIST_FLAGGED = [
    MODULE + "    def __init__(self, n):\n        blocks = []\n        for _ in range(n):\n"
             "            block = nn.Linear(2, 2)\n            blocks.append(block)\n"
             "        self.a = blocks\n",
    MODULE + "    def __init__(self):\n        self.a = []\n        self.a.extend([nn.ReLU(), None])\n",
    MODULE + "    def __init__(self):\n        self.a = list()\n        self.a.insert(0, nn.ReLU())\n"
             "        self.b = self.a[0]\n",
    "from abc import ABC\nfrom torch import nn\n\n\nclass Net(nn.Module, ABC):\n"
    "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n",
    MODULE + "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n"
             "    def forward(self, x):\n        return len(self.a)\n",
]

# and the clean shapes that made the check hold on real code
LIST_CLEAN = [
    # a class of no torch base (ABC), a method of a class on a project class
    "from abc import ABC\nfrom torch import nn\n\n\nclass Holder(ABC):\n"
    "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n",
    "import keras\nfrom torch import nn\n\n\nclass Head(keras.layers.Layer):\n"
    "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n",
    # a local also bound otherwise (a parameter, an unpacking)
    MODULE + "    def __init__(self, head=None):\n        if head is None:\n"
             "            head = nn.Linear(2, 2)\n        self.a = [head]\n",
    MODULE + "    def setup(self):\n        opt, sched = self.configure()\n        if sched is None:\n"
             "            sched = nn.Linear(2, 2)\n        self.a = [sched]\n",
    # layers registered by hand, then kept in a list too
    MODULE + "    def __init__(self):\n        self.a = []\n        for i in range(2):\n"
             "            fc = nn.Linear(2, 2)\n            self.add_module(f'fc{i}', fc)\n"
             "            self.a.append(fc)\n",
    MODULE + "    def __init__(self):\n        self.a = []\n        for i in range(2):\n"
             "            fc = nn.Linear(2, 2)\n            setattr(self, 'fc%i' % i, fc)\n"
             "            self.a.append(fc)\n",
    MODULE + "    def __init__(self):\n        self.a = []\n        for i in range(2):\n"
             "            self.a.append(nn.Linear(2, 2))\n"
             "            self.add_module(str(i), self.a[-1])\n",
    # a list wrapped later in the method or the class
    MODULE + "    def __init__(self):\n        self.a = []\n        self.a.append(nn.Linear(2, 2))\n"
             "        self.a = nn.Sequential(*self.a)\n",
    MODULE + "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n"
             "        self.b = nn.ModuleList(self.a)\n",
    MODULE + "    def __init__(self):\n        self.a = [nn.Linear(2, 2)]\n"
             "        self.b = make_stack(self.a)\n",
    # a local list rebound, handed to a call; a value a ModuleList refuses
    MODULE + "    def __init__(self, cfg):\n        heads = [nn.Linear(2, 2)]\n"
             "        heads = cfg.get('heads', heads)\n        self.a = heads\n",
    MODULE + "    def __init__(self):\n        heads = [nn.Linear(2, 2)]\n"
             "        check(heads)\n        self.a = heads\n",
    MODULE + "    def __init__(self):\n        self.a = []\n        self.a.append(nn.Linear(2, 2))\n"
             "        self.a.append('fc')\n",
]


CONV_MODULE = ("from torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self):\n"
               "        self.conv = nn.Conv2d(3, 8, 3)\n        self.bn = nn.BatchNorm2d(8)\n"
               "        self.act = nn.ReLU()\n")

# TL106: a conv and a batch norm stored on self are a finding only when forward chains them
CONV_FLAGGED = [
    CONV_MODULE + "    def forward(self, x):\n        return self.act(self.bn(self.conv(x)))\n",
    CONV_MODULE + "    def forward(self, x):\n        y = self.conv(x)\n        y = self.bn(y)\n"
                  "        return self.act(y)\n",
    "import torch.nn as tnn\nfrom torch.nn import BatchNorm1d as BN\n\n\nclass Block(tnn.Module):\n"
    "    def __init__(self):\n        self.conv = tnn.Conv1d(3, 8, 3, bias=True)\n"
    "        self.bn = BN(8)\n    def forward(self, x):\n        return self.bn(self.conv(x))\n",
    # a docstring that names another code base without saying the code comes from it
    '"""Blocks, see https://github.com/a/b."""\n' + CONV_MODULE
    + "    def forward(self, x):\n        return self.bn(self.conv(x))\n",
]

CONV_CLEAN = [
    # forward puts another step between them, or uses the norm elsewhere
    CONV_MODULE + "    def forward(self, x):\n        x = self.conv(x)\n        x = self.act(x)\n"
                  "        return self.bn(x)\n",
    CONV_MODULE + "    def forward(self, x):\n        return self.act(self.conv(x)) + self.bn(x)\n",
    # code adapted from another code base, said in the module's or the class's docstring
    '"""Adapted from https://github.com/a/b."""\n' + CONV_MODULE
    + "    def forward(self, x):\n        return self.bn(self.conv(x))\n",
    "from torch import nn\n\n\nclass Stem(nn.Module):\n"
    '    """Ported from https://github.com/a/b."""\n    def __init__(self):\n'
    "        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))\n",
]



# TL107: a local is followed to what it is bound to, an attribute to what the class gives it
FORWARD_FLAGGED = [
    MODULE + "    def forward(self, x):\n        enc = self.encoder\n        return enc.forward(x)\n",
    "import torch\n\n\ndef run(model, batch):\n    x = batch.cuda()\n    return model.forward(x)\n",
    MODULE + "    def forward(self, x):\n        for lin in self.lins:\n            x = lin.forward(x)\n"
             "        return x\n",
    "import cv2\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        self.net = nn.Linear(2, 2)\n    def forward(self, x):\n        return self.net.forward(x)\n",
    # an attribute of a class of no torch base, given a layer in that class
    "import torch\nfrom torch import nn\n\n\nclass Dist:\n    def __init__(self):\n"
    "        self.bijector = nn.Tanh()\n    def log_prob(self, x):\n"
    "        return self.bijector.forward(x)\n",
]

FORWARD_CLEAN = [
    # an item of self (a container class), a sliced ModuleList, a dummy input by name
    MODULE + "    def update(self, key, v):\n        metric = self[key]\n"
             "        return metric.forward(v)\n",
    MODULE + "    def forward(self, x):\n        for lin in self.lins[1:]:\n"
             "            x = lin.forward(x)\n        return x\n",
    "import torch\n\n\ndef probe(model):\n    x = torch.zeros(1, 3)\n    return model.forward(x)\n",
    "import torch\n\n\ndef probe(model, keys):\n    fake = {k: torch.rand(2, 3) for k in keys}\n"
    "    return model.forward(fake)\n",
    # self in a class of no torch base
    "from abc import ABC\nimport torch\n\n\nclass Runner(ABC):\n    def run(self, x):\n"
    "        return self.forward(x)\n",
    # an inference engine's net kept on self
    "import cv2\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        self.net = cv2.dnn.readNet('m')\n    def forward(self, x):\n"
    "        self.net.setInput(x)\n        return self.net.forward()\n",
    # an attribute of a class of no torch base that builds no layer
    "import torch\n\n\nclass Dist:\n    def __init__(self):\n        self.bijector = Tanh()\n"
    "    def log_prob(self, x):\n        return self.bijector.forward(x)\n",
]

# the checks as their rules decide: (rule, snippet) the rule reports, and clean ones
DECIDED = [("TL101", t) for t in LIST_FLAGGED] + [("TL106", t) for t in CONV_FLAGGED] + [
    ("TL107", t) for t in FORWARD_FLAGGED]
LEFT = [("TL101", t) for t in LIST_CLEAN] + [("TL106", t) for t in CONV_CLEAN] + [
    ("TL107", t) for t in FORWARD_CLEAN]


@pytest.mark.parametrize(("code", "text"), DECIDED)
def test_check_holds_where_its_rule_decides_to_report(code: str, text: str) -> None:
    assert _reports(code, text), "the snippet must be a finding of the rule"
    assert _holds(code, text)


@pytest.mark.parametrize(("code", "text"), LEFT)
def test_check_rules_out_what_its_rule_leaves(code: str, text: str) -> None:
    assert not _reports(code, text), "the snippet must be clean"
    assert not _holds(code, text)
