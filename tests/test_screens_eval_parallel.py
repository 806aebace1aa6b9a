"""The screen's checks of TL401 (tests left alone), TL801 (its preview shapes too, which a
run without preview counts) and TL903 (the generator the rule reports, made in ``__init__``
or at module level): each holds where its rule reports and rules out the clean shapes real
code showed. Every case asserts both the check and the rule, forced to run."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import replace

import pytest

from torchlint.analysis.options import Options
from torchlint.analysis.test_paths import is_test_file
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.registry import all_rules
from torchlint.rules.evaluation.screens import may_flag_tl401
from torchlint.source import SourceFile

CHECKS: dict[str, Callable[[FileFacts, Options], bool]] = {"TL401": may_flag_tl401}


def _judge(code: str, text: str, path: str = "script.py", *, preview: bool = False,
           known_path: bool = True) -> tuple[bool, bool]:
    """(the check holds, the rule reports) for ``text`` at ``path``: the facts know
    whether the path is a test's, as the screen's do (``known_path=False``: the facts of a
    text alone)."""
    text = textwrap.dedent(text)
    facts = triage(text)
    assert facts is not None
    if known_path:
        facts = replace(facts, test_file=is_test_file(path, None))
    options = Options(preview=preview)
    settings = replace(FileSettings.for_rules([all_rules()[code]], frozenset({code})),
                       options=options)
    reported = any(d.code == code for d in lint_source(
        SourceFile(path, text), settings, prefilter=False).diagnostics)
    return CHECKS[code](facts, options), reported


# ------------------------------------------------------------------ TL401
TL401_TEST = """
    import torch

    def test_forward(model, x):
        model.eval()
        return model(x)
    """
TL401_NESTED = """
    import torch

    def test_callback(model, batch):
        class Check:
            def on_validation_start(self, trainer, model):
                model.eval()
                model(batch)

        return Check()
    """
TL401_TEST_CLASS = """
    import torch

    class TestPooling:
        def run_inference(self, model, x):
            model.eval()
            return model(x)
    """
TL401_HELPER = """
    import torch

    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            model(x)
    """


@pytest.mark.parametrize("text", [TL401_TEST, TL401_NESTED, TL401_TEST_CLASS])
def test_tl401_rules_out_tests_in_test_files(text: str) -> None:
    assert _judge("TL401", text, "tests/test_models.py") == (False, False)
    # the same code outside tests is evaluation code
    assert _judge("TL401", text, "evaluation.py") == (True, True)


@pytest.mark.parametrize("text", [TL401_TEST, TL401_NESTED])
def test_tl401_holds_where_the_path_is_unknown(text: str) -> None:
    assert _judge("TL401", text, "tests/test_models.py", known_path=False)[0]


def test_tl401_holds_on_an_evaluation_helper_of_a_test_file() -> None:
    assert _judge("TL401", TL401_HELPER, "tests/test_models.py") == (True, True)
    helper_after_test = TL401_TEST + textwrap.indent(textwrap.dedent(TL401_HELPER), "    ")
    assert _judge("TL401", helper_after_test, "tests/test_models.py") == (True, True)
