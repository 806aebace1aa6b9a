"""TL801 beyond its fixtures: the default tier is training code, the rest is preview."""

from __future__ import annotations

import textwrap

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _lint(source: str, *, preview: bool = False, path: str = "train.py",
          prefilter: bool = True):
    rule = all_rules()["TL801"]
    settings = FileSettings.for_rules([rule], {"TL801"}, options=Options(preview=preview))
    return lint_source(SourceFile(path, textwrap.dedent(source)), settings,
                       prefilter=prefilter)


INFERENCE = """
import torch
import torch.nn as nn

model = nn.DataParallel(nn.Linear(4, 2)).cuda().eval()
with torch.no_grad():
    print(model(torch.ones(8, 4)))
"""

TRAINING = INFERENCE + """
for x, y in loader:
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
"""


def test_training_code_is_default_and_names_the_launch() -> None:
    result = _lint(TRAINING)
    assert [(d.line, d.message) for d in result.diagnostics] == [
        (5, "nn.DataParallel is single-process and GIL-bound; use DistributedDataParallel, "
            "launched with `torchrun --nproc_per_node=N train.py`")]


def test_inference_only_is_a_preview_shape() -> None:
    quiet = _lint(INFERENCE, prefilter=False)
    assert quiet.diagnostics == [] and quiet.preview_only == 1
    assert [d.line for d in _lint(INFERENCE, preview=True).diagnostics] == [5]
    # outside preview, a file with only preview shapes is not parsed for them (the
    # summary's hint counts them where the run parses anyway)
    skipped = _lint(INFERENCE)
    assert skipped.diagnostics == [] and skipped.preview_only == 0
    # a file parsed for another rule is linted for them too, and they are counted
    both = FileSettings.for_rules([all_rules()["TL801"], all_rules()["TL705"]],
                                  {"TL801", "TL705"})
    counted = lint_source(SourceFile("train.py", textwrap.dedent(INFERENCE) +
                                     "x = torch.FloatTensor(3)\n"), both)
    assert [d.code for d in counted.diagnostics] == ["TL705"] and counted.preview_only == 1


def test_a_noqa_comment_on_a_preview_shape_is_used() -> None:
    rules = [all_rules()["TL801"], all_rules()["TL002"]]
    settings = FileSettings.for_rules(rules, {"TL801", "TL002"})
    text = textwrap.dedent(INFERENCE).replace(".eval()", ".eval()  # noqa: TL801")
    result = lint_source(SourceFile("infer.py", text), settings)
    assert result.diagnostics == [] and result.preview_only == 1


def test_tests_are_a_preview_shape_even_when_they_train() -> None:
    quiet = _lint(TRAINING, path="tests/test_wrap.py")
    assert quiet.diagnostics == [] and quiet.preview_only == 1


def test_a_constant_that_turns_the_branch_off_is_a_preview_shape() -> None:
    source = TRAINING + """
ngpu = 1
if torch.cuda.is_available() and ngpu > 1:
    netG = nn.DataParallel(netG)
ngpus = 2
if ngpus >= 2:
    netD = nn.DataParallel(netD)
"""
    result = _lint(source)
    assert [d.line for d in result.diagnostics] == [5, 19] and result.preview_only == 1
