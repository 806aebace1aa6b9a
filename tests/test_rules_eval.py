"""Unit tests of the train/eval-mode rules beyond their fixtures."""

from __future__ import annotations

import textwrap

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _lint(code: str, source: str, path: str = "example.py"):
    rule = all_rules()[code]
    return lint_source(SourceFile(path, textwrap.dedent(source)), FileSettings.for_rules([rule], {code})).diagnostics


def _fix(code: str, source: str, path: str = "example.py") -> str:
    rule = all_rules()[code]
    return fix_source(SourceFile(path, textwrap.dedent(source)), FileSettings.for_rules([rule], {code}), unsafe=True).source.text


def test_tl401_reports_at_the_function_name() -> None:
    found = _lint("TL401", """\
        import torch

        def evaluate(model, x):
            return model(x)
        """)
    assert [(d.line, d.column) for d in found] == [(3, 5)]


def test_tl401_adds_import_when_torch_is_only_imported_as_nn() -> None:
    fixed = _fix("TL401", """\
        from torch import nn


        def evaluate(model, x):
            return model(x)
        """)
    assert "import torch\n" in fixed
    assert "@torch.no_grad()\ndef evaluate" in fixed


def test_tl401_silent_in_pytest_tests_only_in_test_files() -> None:
    source = """\
        import torch

        def test_forward(model):
            model.eval()
            assert model(torch.ones(1)).shape
        """
    assert not _lint("TL401", source, "tests/test_model.py")
    assert not _lint("TL401", source, "tests/model_test.py")
    assert _lint("TL401", source, "scripts/check.py")


def test_tl401_silent_in_functions_nested_in_tests_of_test_files() -> None:
    source = """\
        import torch

        class ExportTest:
            def test_retinanet(self):
                def inference_func(model, image):
                    return model.forward([{"image": image}])[0]
                self._check(inference_func)
        """
    assert not _lint("TL401", source, "tests/test_export.py")
    assert _lint("TL401", source.replace("test_retinanet", "export_retinanet"), "tools/export.py")


def test_tl401_silent_without_torch() -> None:
    assert not _lint("TL401", """\
        def evaluate(model, x):
            model.eval()
            return model(x)
        """)


def test_tl402_inserts_after_docstring() -> None:
    fixed = _fix("TL402", '''\
        import torch

        @torch.no_grad()
        def evaluate(model, x):
            """Score."""
            return model(x)
        ''')
    assert '"""Score."""\n    model.eval()\n    return model(x)' in fixed


def test_tl405_no_fix_outside_module_class() -> None:
    found = _lint("TL405", """\
        import torch.nn.functional as F

        def noisy(x):
            return F.dropout(x, 0.5)
        """)
    assert len(found) == 1 and found[0].fix is None


def test_tl405_non_torch_functional_is_silent() -> None:
    assert not _lint("TL405", """\
        import mylib.nn.functional as F

        y = F.dropout([1.0], 0.5)
        """)


def test_tl403_reports_once_per_loop_and_model() -> None:
    found = _lint("TL403", """\
        def fit(model, loader):
            for x in loader:
                model(x).sum().backward()
                model.eval()
                model.eval()
        """)
    assert len(found) == 1


def test_tl404_fix_is_idempotent() -> None:
    fixed = _fix("TL404", "model.eval\n")
    assert fixed == "model.eval()\n"
    assert not _lint("TL404", fixed)


def test_tl107_super_is_silent_and_multiline_keeps_layout() -> None:
    source = """\
        import torch

        class A(torch.nn.Module):
            def forward(self, x):
                return super().forward(x) + self.inner.forward(
                    x,
                )
        """
    found = _lint("TL107", source)
    assert len(found) == 1
    assert "self.inner(\n            x,\n        )" in _fix("TL107", source)


def test_tl401_on_the_last_function_of_a_file_without_a_final_newline() -> None:
    source = "import torch\n\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)"
    rule = all_rules()["TL401"]
    settings = FileSettings.for_rules([rule], {"TL401"})
    result = lint_source(SourceFile("example.py", source), settings)
    assert result.rule_failures == []
    assert [(d.line, d.column, d.fix is not None) for d in result.diagnostics] == [(4, 5, True)]
    fixed = fix_source(SourceFile("example.py", source), settings, unsafe=True).source.text
    assert fixed == ("import torch\n\n\n@torch.no_grad()\ndef evaluate(model, x):\n"
                     "    model.eval()\n    return model(x)")


def test_textbook_script_evaluation_gets_both_tl401_and_tl402() -> None:
    """train() then evaluate() from main(): evaluate() has neither no_grad nor eval()."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "fixtures" / "TL402" / "textbook.py"
    rules = [all_rules()["TL401"], all_rules()["TL402"]]
    found = lint_source(SourceFile.read(path), FileSettings.for_rules(rules)).diagnostics
    assert sorted((d.line, d.code) for d in found) == [(31, "TL401"), (31, "TL402"),
                                                       (39, "TL402")]
    assert "after training" in next(d.message for d in found if d.code == "TL402")


def test_tl402_a_plain_train_call_does_not_switch_the_mode() -> None:
    """``train(model, loader)`` is a function of the script, not ``model.train(False)``."""
    found = _lint("TL402", """\
        import torch

        @torch.no_grad()
        def evaluate(model, loader):
            return [model(x) for x in loader]

        def main(model, loader):
            train(model, loader)
            evaluate(model, loader)
        """)
    assert [d.line for d in found] == [4]
    quiet = _lint("TL402", """\
        import torch

        @torch.no_grad()
        def evaluate(model, loader):
            return [model(x) for x in loader]

        def main(model, loader):
            model.train(False)
            evaluate(model, loader)
        """)
    assert quiet == []


def test_inference_names() -> None:
    from torchlint.rules.evaluation.functions import is_inference_name

    named = ["translate", "stylize", "caption_image", "beam_search", "beam_search_decode",
             "predict", "predict_proba", "generate", "generate_samples", "sample",
             "sample_images", "infer", "inference_image", "_predict"]
    assert [n for n in named if not is_inference_name(n)] == []
    others = ["translated", "stylizer_step", "captions", "sample_step", "predict_batch",
              "train", "resample", "regenerate"]
    assert [n for n in others if is_inference_name(n)] == []


def test_tl401_module_level_loop_over_a_test_set_names_the_model() -> None:
    found = _lint("TL401", """\
        import torch

        model = torch.nn.Linear(4, 2)
        for images, labels in testloader:
            outputs = model(images)
        """)
    assert [(d.line, d.message) for d in found] == [
        (5, "'model' runs with autograd on in an evaluation loop; wrap the loop in "
            "`with torch.no_grad():`")]


def test_tl401_a_global_bound_to_a_module_instance_is_a_model() -> None:
    # no name in this file looks like a model, and nothing calls .eval(): the prefilter
    # must still let the file through
    found = _lint("TL401", """\
        import torch
        import torch.nn as nn

        class RNN(nn.Module):
            def forward(self, x, h):
                return x, h

        rnn = RNN()
        table = dict(a=1)

        def evaluate(line_tensor):
            output, hidden = rnn(line_tensor, None)
            return output

        def predict(word):
            return table.get(word)
        """)
    assert [(d.line, d.message.split("calls ")[1][:5]) for d in found] == [(11, "'rnn'")]
