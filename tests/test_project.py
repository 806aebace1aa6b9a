"""Knowledge from the project's other files: module classes and aliases imported from them,
learned on demand, the same from the CLI, stdin and the cache."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.analysis.options import MODULE_BASES
from torchlint.analysis.project import Project
from torchlint.cli import main

LAYERS = """
    import torch
    from torch import nn

    cuda = torch.cuda.is_available()
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor


    class BaseBlock(nn.Module):
        def forward(self, x):
            return x


    class SharedDropout(BaseBlock):
        pass


    class Config:
        pass
"""
MODEL = """
    import torch
    from torch import nn

    from pkg.layers import Config, SharedDropout
    from . import BaseBlock
    from .layers import Tensor


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [BaseBlock() for _ in range(3)]
            self.configs = [Config() for _ in range(3)]
            self.dropouts = []
            for _ in range(2):
                self.dropouts.append(SharedDropout())


    class Head(BaseBlock):
        def __init__(self):
            super().__init__()
            self.extra = [nn.Linear(2, 2)]


    def noise(n):
        return Tensor(n, 1)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    write(tmp_path / "pkg" / "__init__.py", "from .layers import BaseBlock\n")
    write(tmp_path / "pkg" / "layers.py", LAYERS)
    write(tmp_path / "pkg" / "model.py", MODEL)
    return tmp_path


def check(cwd: Path, *args: str, stdin: str | None = None) -> list[str]:
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["check", *args], input=stdin)
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 1), result.output
    return [line.split(": ", 1)[0].split(":", 1)[1] + " " + line.split(": ")[1].split()[0]
            for line in result.stdout.splitlines() if ": TL" in line]


def test_classes_and_aliases_from_other_files_are_known(project: Path) -> None:
    found = check(project, "--no-cache", "pkg/model.py")
    assert found == [
        "12:9 TL101",  # BaseBlock through the package's __init__ re-export
        "14:9 TL101",  # SharedDropout: a subclass of a subclass, absolute import
        "22:9 TL101",  # Head derives from a module class of another file
        "26:12 TL705",  # a conditional alias of legacy tensor types in another file
    ]  # not self.configs: Config is a plain class


def test_stdin_learns_the_same(project: Path) -> None:
    text = (project / "pkg" / "model.py").read_text()
    assert check(project, "--no-cache", "--stdin-filename", "pkg/model.py", "-",
                 stdin=text) == check(project, "--no-cache", "pkg/model.py")


def test_a_cached_result_is_invalidated_when_a_file_it_learned_from_changes(
        project: Path) -> None:
    assert "12:9 TL101" in check(project, "pkg/model.py")
    assert "12:9 TL101" in check(project, "pkg/model.py")  # from the cache
    layers = project / "pkg" / "layers.py"
    layers.write_text(layers.read_text().replace("class BaseBlock(nn.Module):",
                                                 "class BaseBlock:"))
    assert "12:9 TL101" not in check(project, "pkg/model.py")


def test_a_file_alone_knows_nothing_of_its_project(tmp_path: Path) -> None:
    write(tmp_path / "model.py", MODEL.replace("from . import BaseBlock", ""))
    assert check(tmp_path, "--no-cache", "model.py") == []


def test_project_answers_directly(project: Path) -> None:
    view = Project().for_file(str(project / "pkg" / "model.py"))
    assert view.module == "pkg.model" and view.package == "pkg"
    assert view.derives_from("pkg.BaseBlock", MODULE_BASES)  # a re-export
    assert view.derives_from("pkg.layers.SharedDropout", MODULE_BASES)
    assert not view.derives_from("pkg.layers.Config", MODULE_BASES)
    assert not view.derives_from("pkg.missing.Thing", MODULE_BASES)
    assert view.alias_targets("pkg.layers.Tensor") == ("torch.FloatTensor",
                                                       "torch.cuda.FloatTensor")
    assert {Path(d).name for d in view.dependencies} == {"__init__.py", "layers.py"}


def test_import_cycles_and_deep_chains_end(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "from b import B\nclass A(B):\n    pass\n")
    write(tmp_path / "b.py", "from a import A\nclass B(A):\n    pass\n")
    view = Project().for_file(str(tmp_path / "c.py"))
    assert not view.derives_from("a.A", MODULE_BASES)


def test_plain_classes_are_told_from_library_and_module_classes(project: Path) -> None:
    view = Project().for_file(str(project / "pkg" / "model.py"))
    assert view.is_plain_class("pkg.layers.Config")
    assert not view.is_plain_class("pkg.BaseBlock")  # a module class, through a re-export
    assert not view.is_plain_class("pkg.missing.Thing")
    assert not view.is_plain_class("torch.nn.Module")


def test_plain_class_bases_follow_the_project_and_stop_at_cycles(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "from abc import ABC\nimport lib\n\nclass Base(object):\n"
          "    pass\n\nclass Child(Base, ABC):\n    pass\n\nclass Foreign(lib.Thing):\n"
          "    pass\n\nclass Loop(Loop2):\n    pass\n\nclass Loop2(Loop):\n    pass\n")
    view = Project().for_file(str(tmp_path / "c.py"))
    assert view.is_plain_class("a.Child")
    assert not view.is_plain_class("a.Foreign")
    assert not view.is_plain_class("a.Loop2")


def test_a_cached_load_finding_goes_when_the_script_that_saves_changes(tmp_path: Path) -> None:
    # evaluate.py loads what train.py, beside it, saves: its result depends on train.py
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    train = write(tmp_path / "train.py", """
        import torch
        from torch import nn

        model = nn.Linear(8, 2)
        torch.save(model, "ckpt/model.pth")
        """)
    write(tmp_path / "evaluate.py", """
        import torch

        model = torch.load("ckpt/model.pth")
        """)
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == ["3:9 TL605"]
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == ["3:9 TL605"]  # cached
    train.write_text(train.read_text().replace("torch.save(model,", "torch.save(model.state_dict(),"))
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == []
    # and back: a save that appears in a file read before (without it) counts too
    train.write_text(train.read_text().replace("torch.save(model.state_dict(),", "torch.save(model,"))
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == ["3:9 TL605"]


def test_sibling_files_are_read_once_and_all_recorded(tmp_path: Path) -> None:
    write(tmp_path / "train.py", 'torch.save(model, "model.pth")\n')
    write(tmp_path / "plot.py", "import matplotlib\n")
    write(tmp_path / "sub" / "train.py", 'torch.save(model, "model.pth")\n')
    view = Project().for_file(str(tmp_path / "evaluate.py"))
    found = view.siblings_containing("model.pth")
    assert [os.path.basename(path) for path, _, _ in found] == ["train.py"]
    assert set(view.dependencies) == {str(tmp_path), str(tmp_path / "plot.py"),
                                      str(tmp_path / "train.py")}


def test_a_script_added_beside_is_seen_by_a_long_lived_project(tmp_path: Path) -> None:
    project = Project()
    view = project.for_file(str(tmp_path / "evaluate.py"))
    assert view.siblings_containing("model.pth") == []
    write(tmp_path / "train.py", 'torch.save(model, "model.pth")\n')
    os.utime(tmp_path, ns=(os.stat(tmp_path).st_mtime_ns + 10**9,) * 2)  # a coarse clock
    view = project.for_file(str(tmp_path / "evaluate.py"))
    assert [os.path.basename(p) for p, _, _ in view.siblings_containing("model.pth")] == [
        "train.py"]


def test_a_cached_load_result_goes_when_a_script_that_saves_is_added(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    write(tmp_path / "evaluate.py", """
        import torch

        model = torch.load("ckpt/model.pth")
        """)
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == []
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == []  # cached
    write(tmp_path / "train.py", """
        import torch
        from torch import nn

        torch.save(nn.Linear(2, 2), "ckpt/model.pth")
        """)
    os.utime(tmp_path, ns=(os.stat(tmp_path).st_mtime_ns + 10**9,) * 2)  # a coarse clock
    assert check(tmp_path, "--select", "TL605", "evaluate.py") == ["3:9 TL605"]


STAR_USER = """
    from utils import *
    from pkg.helpers import *


    def detect_objects(n):
        boxes = []
        for _ in range(n):
            boxes.append(torch.zeros(4).to("cuda"))
        return boxes


    class Loss(nn.Module):
        def forward(self, x):
            return x + torch.zeros(3).cuda()
"""


def test_a_star_import_of_a_project_module_binds_what_it_exports(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    write(tmp_path / "utils.py", "import torch\nfrom torch import nn as nn\n\n\n"
                                 "def helper(x):\n    return x\n")
    # __all__ decides what a star import takes: here not torch
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "helpers.py", "import torch as torch\n__all__ = ['clip']\n\n\n"
                                           "def clip(x):\n    return x\n")
    write(tmp_path / "detect.py", STAR_USER)
    assert check(tmp_path, "detect.py") == ["8:22 TL301", "14:20 TL301"]
    # the cached result depends on the file the names came from
    write(tmp_path / "utils.py", "def helper(x):\n    return x\n")
    assert check(tmp_path, "detect.py") == []
    found = Project().for_file(str(tmp_path / "detect.py"))
    assert found.star_names("pkg.helpers") == {"clip": "pkg.helpers.clip"}
    assert Project().for_file(str(tmp_path / "x.py")).star_names("utils") == {
        "helper": "utils.helper"}


def test_a_worker_keeps_one_project_for_every_chunk_it_is_sent(tmp_path: Path) -> None:
    import pickle

    project = Project([str(tmp_path)])
    first, second = (pickle.loads(pickle.dumps(project)) for _ in range(2))
    # what one chunk's files read (summaries, the project's files) serves the next ones
    assert first is second and first.extra_roots == project.extra_roots
    assert pickle.loads(pickle.dumps(Project([str(tmp_path)]))) is not first


def test_a_relative_name_is_made_absolute_from_the_files_package(tmp_path: Path) -> None:
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    for folder in (tmp_path / "pkg", sub):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    view = Project().for_file(str(sub / "model.py"))
    assert view.absolute(".layers.Block") == "pkg.sub.layers.Block"
    assert view.absolute("..layers.Block") == "pkg.layers.Block"
    assert view.absolute("torch.nn.Linear") == "torch.nn.Linear"
    assert view.absolute("....layers.Block") is None  # above the outermost package
