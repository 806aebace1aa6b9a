"""Unit tests of the saving and loading rules beyond their fixtures."""

from __future__ import annotations

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
