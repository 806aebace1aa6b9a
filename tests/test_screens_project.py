"""Screening checks that ask the project as the rules do: whether a base class of another
module is a module class (``FileContext.is_module_class_name``: a class of the project
deriving from a module base; a class of another library is none), and whether a name
imported from another module may stand for a tensor maker (``possible_qualified_names``
through the project's aliases). With the project known, the checks rule out what the
project rules out; the facts of a text alone still keep it. Each snippet is also linted
with the rule forced to run in the same project."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

from test_screens_tensors import FLATTENED

from torchlint.analysis.options import Options
from torchlint.analysis.project import Project
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.registry import all_rules
from torchlint.rules.devices.screens import may_flag_tl302
from torchlint.rules.modules.screens import may_flag_tl101
from torchlint.source import SourceFile


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _facts(root: Path, name: str, *, known: bool = True) -> FileFacts:
    path = root / name
    facts = triage(path.read_text(encoding="utf-8"))
    assert facts is not None
    if not known:
        return facts
    return replace(facts, project=Project([str(root)]).for_file(str(path)),
                   project_known=True)


def _findings(root: Path, name: str, code: str) -> list[int]:
    path = root / name
    settings = replace(FileSettings.for_rules([all_rules()[code]], {code}),
                       project=Project([str(root)]))
    result = lint_source(SourceFile(str(path), path.read_text(encoding="utf-8")), settings,
                         prefilter=False)
    return [d.line for d in result.diagnostics if d.code == code]


BASES = {
    "pkg/__init__.py": "",
    "pkg/base.py": """
        import torch.nn as nn

        class Plain:
            pass

        class Layer(nn.Module):
            pass
        """,
}

GROWN = """
    import torch.nn as nn
    {imports}

    class Model({base}):
        def __init__(self):
            super().__init__()
            self.blocks = []
            for _ in range(3):
                self.blocks.append(nn.Linear(4, 4))
    """


def _grown(root: Path, imports: str, base: str) -> None:
    _write(root, {**BASES, "pkg/model.py": GROWN.format(imports=imports, base=base)})


def test_a_plain_base_of_the_project_makes_no_module_class(tmp_path: Path) -> None:
    _grown(tmp_path, "from .base import Plain", "Plain")
    assert "Model" not in _facts(tmp_path, "pkg/model.py").module_classes(Options())
    assert not may_flag_tl101(_facts(tmp_path, "pkg/model.py"), Options())
    assert _findings(tmp_path, "pkg/model.py", "TL101") == []
    # the facts of the text alone cannot tell
    assert may_flag_tl101(_facts(tmp_path, "pkg/model.py", known=False), Options())


def test_a_module_base_of_the_project_still_makes_a_module_class(tmp_path: Path) -> None:
    for imports, base in (("from .base import Layer", "Layer"),
                          ("from pkg.base import Layer", "Layer"),
                          ("import pkg.base as blocks", "blocks.Layer"),
                          ("from . import base", "base.Layer")):
        _grown(tmp_path, imports, base)
        facts = _facts(tmp_path, "pkg/model.py")
        assert "Model" in facts.module_classes(Options()), imports
        assert may_flag_tl101(facts, Options()), imports
        assert _findings(tmp_path, "pkg/model.py", "TL101"), imports


def test_a_base_of_another_library_makes_no_module_class(tmp_path: Path) -> None:
    _grown(tmp_path, "from otherlib.blocks import Block", "Block")
    assert "Model" not in _facts(tmp_path, "pkg/model.py").module_classes(Options())
    assert _findings(tmp_path, "pkg/model.py", "TL101") == []


# ------------------------------------------------------------------ TL302
MOVED = """
    import torch
    from {module} import {name}

    def step(device):
        x = {name}(3)
        x.cuda()
        return x
    """


def test_a_project_alias_of_a_legacy_constructor_may_make_a_tensor(tmp_path: Path) -> None:
    _write(tmp_path, {"utils.py": "import torch\nmake = torch.FloatTensor\n",
                      "train.py": MOVED.format(module="utils", name="make")})
    assert may_flag_tl302(_facts(tmp_path, "train.py"), Options())
    assert len(_findings(tmp_path, "train.py", "TL302")) == 1


def test_a_class_of_the_project_or_of_another_library_makes_no_tensor(tmp_path: Path) -> None:
    for module, name in (("utils", "Wrapper"), ("otherlib", "Thing")):
        _write(tmp_path, {"utils.py": "class Wrapper:\n    def cuda(self):\n        pass\n",
                          "train.py": MOVED.format(module=module, name=name)})
        assert not may_flag_tl302(_facts(tmp_path, "train.py"), Options()), name
        assert _findings(tmp_path, "train.py", "TL302") == [], name
        # the facts of the text alone cannot tell
        assert may_flag_tl302(_facts(tmp_path, "train.py", known=False), Options()), name


# TL510-TL512: a chain on images that flattens them may meet an input another file of the
# project states; the project is asked only when some input could make the chain disagree
IMAGES_MODEL = {
    "pkg/__init__.py": "",
    "pkg/net.py": FLATTENED,  # a chain on images, flattened before a Linear
    "pkg/train.py": """
        import torch
        from pkg.net import Net

        y = Net()(torch.randn(1, 3, 32, 32))
        """,
}


def test_size_checks_ask_the_project_for_an_input_only_where_one_could_matter(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from torchlint.rules.tensors import size_screens

    asked: list[str] = []
    real = size_screens.project_inputs

    def spy(project, files, name):  # type: ignore[no-untyped-def]
        asked.append(name)
        return real(project, files, name)

    monkeypatch.setattr(size_screens, "project_inputs", spy)
    _write(tmp_path, IMAGES_MODEL)
    # 32x32 images give 16x28x28 features, not 16x5x5: the input stated in train.py matters
    assert size_screens.may_flag_tl511(_facts(tmp_path, "pkg/net.py"), Options())
    assert asked == ["Net"]
    assert _findings(tmp_path, "pkg/net.py", "TL511")
    # what any input could make the chain find is found already (by a class before it):
    # the project is not asked, and the answers are those it would give
    asked.clear()
    net = tmp_path / "pkg" / "net.py"
    net.write_text(net.read_text().replace("return self.fc(x)", "return x").replace(
        "class Net(", BAD_FIRST + "class Net("))
    facts = _facts(tmp_path, "pkg/net.py")
    assert size_screens.may_flag_tl510(facts, Options())
    assert size_screens.may_flag_tl512(facts, Options())
    assert not size_screens.may_flag_tl511(facts, Options())
    assert asked == []
    assert not _findings(tmp_path, "pkg/net.py", "TL511")


# a class whose layers surely disagree, in size and in rank
BAD_FIRST = """class Bad(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(8, 16), nn.Linear(32, 2))
        self.b = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16))

"""
