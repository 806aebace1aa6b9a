"""Unit tests for the module-definition rules (TL101-TL106) beyond the fixtures."""

from __future__ import annotations

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _lint(code: str, text: str) -> list:
    rule = all_rules()[code]
    return lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code})).diagnostics


def _fix(code: str, text: str) -> str:
    rule = all_rules()[code]
    return fix_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}), unsafe=True).source.text


def test_module_list_fix_adds_nn_import_when_missing() -> None:
    text = (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = [torch.nn.Linear(2, 2)]\n"
    )
    fixed = _fix("TL101", text)
    assert "self.fc = torch.nn.ModuleList([torch.nn.Linear(2, 2)])" in fixed


def test_module_list_import_added_in_from_style() -> None:
    text = (
        "from torch.nn import Module, Linear\n\n\nclass M(Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = []\n"
        "        self.fc.append(Linear(2, 2))\n"
    )
    fixed = _fix("TL101", text)
    assert "self.fc = nn.ModuleList()" in fixed
    assert "from torch import nn" in fixed or "import torch.nn as nn" in fixed


def test_module_list_reported_at_target() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = [nn.Linear(2, 2)]\n"
    )
    [d] = _lint("TL101", text)
    assert (d.line, d.column) == (7, 9)


def test_module_list_wrapped_in_other_method_is_silent() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = [nn.Linear(2, 2)]\n        self.build()\n\n"
        "    def build(self):\n        self.fc = nn.ModuleList(self.fc)\n"
    )
    assert _lint("TL101", text) == []


def test_module_dict_int_keys_have_no_fix() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.d = {1: nn.Linear(2, 2)}\n"
    )
    [d] = _lint("TL102", text)
    assert d.fix is None


def test_conv_bn_forward_with_bias_read_is_silent() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(3, 3, 3)\n"
        "        self.bn = nn.BatchNorm2d(3)\n        print(self.conv.bias)\n\n"
        "    def forward(self, x):\n        return self.bn(self.conv(x))\n"
    )
    assert _lint("TL106", text) == []


def test_conv_bn_forward_pair_reported_at_conv_construction() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv1d(3, 3, 3)\n"
        "        self.bn = nn.BatchNorm1d(3)\n\n"
        "    def forward(self, x):\n        h = self.conv(x)\n        h = self.bn(h)\n"
        "        return h\n"
    )
    [d] = _lint("TL106", text)
    assert (d.line, d.column) == (7, 21)
    assert "nn.Conv1d(3, 3, 3, bias=False)" in _fix("TL106", text)


def test_tensor_attribute_fix_is_register_buffer() -> None:
    text = (
        "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.m = torch.ones(3)\n\n"
        "    def forward(self, x):\n        return x * self.m\n"
    )
    assert 'self.register_buffer("m", torch.ones(3))' in _fix("TL104", text)


def test_layer_in_nested_helper_of_forward_is_silent() -> None:
    text = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        def make():\n            return nn.Linear(2, 2)\n        return x\n"
    )
    assert _lint("TL105", text) == []


def test_create_then_move_multiline_call_gets_keyword_line() -> None:
    text = (
        "import torch\n\n\ndef training_step(device):\n    return torch.zeros(\n        3,\n"
        "        4,  # rows\n    ).to(device)\n"
    )
    fixed = _fix("TL301", text)
    assert fixed.endswith(
        "    return torch.zeros(\n        3,\n        4,  # rows\n        device=device,\n    )\n")
    assert not _lint("TL301", fixed)


def test_tensor_attribute_annotated_assignment_fix() -> None:
    text = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale: torch.Tensor = torch.tensor([0.5, 2.0])\n\n"
        "    def forward(self, x):\n        return x * self.scale\n"
    )
    fixed = _fix("TL104", text)
    assert '        self.register_buffer("scale", torch.tensor([0.5, 2.0]))\n' in fixed


def test_tensor_attribute_read_only_outside_the_computation_is_silent() -> None:
    """Read only by a method forward never calls (a collate function sampling on the CPU):
    as a buffer it would follow the model to the GPU and break that path."""
    text = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.offset = torch.tensor([0, 3, 7])\n\n"
        "    def forward(self, x):\n        return self.embed(x)\n\n"
        "    def embed(self, x):\n        return x\n\n"
        "    def sample(self, walks):\n        return walks + self.offset\n"
    )
    assert _lint("TL104", text) == []
    called = text.replace("return self.embed(x)", "return self.embed(x) + self.sample(x)")
    assert [d.line for d in _lint("TL104", called)] == [8]


def _lint_in_project(code: str, tmp_path, files: dict[str, str], target: str) -> list:
    """Lint ``target`` of a project made of ``files``, learning from its other files."""
    import dataclasses
    import textwrap

    from torchlint.analysis.project import Project

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    rule = all_rules()[code]
    settings = dataclasses.replace(FileSettings.for_rules([rule], {code}),
                                   project=Project([str(tmp_path)]))
    path = tmp_path / target
    return lint_source(SourceFile(str(path), path.read_text(encoding="utf-8")),
                       settings).diagnostics


_BASE = """
    from torch import nn


    class BaseBlock(nn.Module):
        pass
"""


def test_conv_bn_pair_in_a_class_deriving_from_a_module_class_of_another_file(tmp_path) -> None:
    model = """
        from torch import nn

        from .layers import BaseBlock


        class Stem(BaseBlock):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.bn = nn.BatchNorm2d(8)

            def forward(self, x):
                return self.bn(self.conv(x))
    """
    files = {"pkg/__init__.py": "", "pkg/layers.py": _BASE, "pkg/model.py": model}
    found = _lint_in_project("TL106", tmp_path, files, "pkg/model.py")
    assert [(d.line, d.code) for d in found] == [(9, "TL106")]
    # the same file alone cannot know that Stem is a module
    alone = _lint_in_project("TL106", tmp_path / "alone", {"model.py": model}, "model.py")
    assert alone == []


def test_plain_list_in_a_file_that_never_names_module(tmp_path) -> None:
    # the base class comes from another file, so "Module" appears nowhere in this one:
    # the prefilter must still let TL101 see it
    model = """
        from torch import nn

        from .layers import BaseBlock


        class Encoder(BaseBlock):
            def __init__(self, n):
                super().__init__()
                self.drops = []
                for _ in range(n):
                    self.drops.append(nn.Dropout(0.1))

            def forward(self, x):
                return self.drops[0](x)
    """
    files = {"pkg/__init__.py": "", "pkg/layers.py": _BASE, "pkg/model.py": model}
    found = _lint_in_project("TL101", tmp_path, files, "pkg/model.py")
    assert [(d.line, d.code) for d in found] == [(9, "TL101")]


def test_forward_on_self_in_a_class_deriving_from_a_module_class_of_another_file(
        tmp_path) -> None:
    model = """
        from .layers import BaseBlock


        class Head(BaseBlock):
            def forward(self, x):
                return x

            def predict(self, x):
                return self.forward(x).argmax(-1)
    """
    files = {"pkg/__init__.py": "", "pkg/layers.py": _BASE, "pkg/model.py": model}
    found = _lint_in_project("TL107", tmp_path, files, "pkg/model.py")
    assert [(d.line, d.code) for d in found] == [(9, "TL107")]


def test_conditional_batch_norm_fix_keeps_the_bias_where_the_norm_is_absent() -> None:
    text = (
        "import torch.nn as nn\n\n\ndef block(cin, cout, use_bn):\n"
        "    layers = [nn.Conv2d(cin, cout, 3)]\n    if use_bn:\n"
        "        layers.append(nn.BatchNorm2d(cout))\n    return nn.Sequential(*layers)\n"
    )
    [d] = _lint("TL106", text)
    assert "when `use_bn`" in d.message and "bias=not use_bn" in d.message
    assert d.fix is not None and d.fix.applicability.value == "unsafe"
    assert "nn.Conv2d(cin, cout, 3, bias=not use_bn)" in _fix("TL106", text)


def test_forward_in_a_package_kept_in_a_tests_folder_is_silent(tmp_path, monkeypatch) -> None:
    helpers = """
        import torch
        from torch import nn


        class Boring(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.Linear(2, 2)

            def forward(self, x):
                return self.layer(x)

            def training_step(self, batch):
                return self.forward(batch).sum()
    """
    files = {"tests/suite/__init__.py": "", "tests/suite/helpers.py": helpers,
             "src/pkg/__init__.py": "", "src/pkg/helpers.py": helpers}
    monkeypatch.chdir(tmp_path)
    assert _lint_in_project("TL107", tmp_path, files, "tests/suite/helpers.py") == []
    found = _lint_in_project("TL107", tmp_path, files, "src/pkg/helpers.py")
    assert [(d.line, d.code) for d in found] == [(14, "TL107")]


def test_forward_of_a_plain_class_of_another_file_is_silent(tmp_path) -> None:
    plain = """
        from abc import ABC


        class Base(object):
            pass


        class Predictor(Base, ABC):
            def forward(self, x):
                return x * 2
    """
    use = """
        import torch
        from .plain import Predictor
        from .layers import BaseBlock


        class Runner:
            def __init__(self):
                self.model = Predictor()
                self.block = BaseBlock()

            def run(self, x):
                return self.model.forward(x) + self.block.forward(x)


        def go(x):
            model = Predictor()
            return model.forward(x)
    """
    files = {"pkg/__init__.py": "", "pkg/plain.py": plain, "pkg/layers.py": _BASE,
             "pkg/use.py": use}
    found = _lint_in_project("TL107", tmp_path, files, "pkg/use.py")
    assert [(d.line, d.code) for d in found] == [(12, "TL107")]


def test_tensor_attribute_of_a_subclass_of_another_files_module_class(tmp_path) -> None:
    model = """
        import torch
        from .layers import BaseBlock


        class Head(BaseBlock):
            def __init__(self, n):
                super().__init__()
                self.mask = torch.ones(n, n).triu()

            def forward(self, x):
                return x @ self.mask
    """
    files = {"pkg/__init__.py": "", "pkg/layers.py": _BASE, "pkg/model.py": model}
    found = _lint_in_project("TL104", tmp_path, files, "pkg/model.py")
    assert [(d.line, d.code) for d in found] == [(8, "TL104")]
    alone = _lint_in_project("TL104", tmp_path / "alone", {"model.py": model}, "model.py")
    assert alone == []
