"""The ast checks that screen the evaluation rules (rules/evaluation/screens.py): each holds
on the shapes its rule reports (the rule's finding is checked too) and rules out the common
clean shapes that used to send a file to libcst (where the rule is silent as well)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.notebook import Notebook
from torchlint.registry import all_rules
from torchlint.rules.evaluation.screens import (
    may_flag_tl401,
    may_flag_tl402,
    may_flag_tl403,
    may_flag_tl404,
    may_flag_tl405,
)
from torchlint.source import SourceFile

CHECKS: dict[str, Callable[[FileFacts, Options], bool]] = {
    "TL401": may_flag_tl401, "TL402": may_flag_tl402, "TL403": may_flag_tl403,
    "TL404": may_flag_tl404, "TL405": may_flag_tl405,
}


def _judge(code: str, text: str, path: str = "script.py") -> tuple[bool, bool]:
    """(the check holds, the rule reports) for ``text``."""
    text = textwrap.dedent(text)
    facts = triage(text)
    assert facts is not None
    rule = all_rules()[code]
    settings = FileSettings.for_rules([rule], frozenset({code}), options=Options(preview=True))
    reported = any(d.code == code for d in lint_source(SourceFile(path, text), settings,
                                                       prefilter=False).diagnostics)
    return CHECKS[code](facts, Options()), reported


def _holds(code: str, text: str) -> None:
    assert _judge(code, text) == (True, True)


def _ruled_out(code: str, text: str) -> None:
    assert _judge(code, text) == (False, False)


# ------------------------------------------------------------------ TL401
TL401_FIRES = {
    "evaluation function": """
        import torch

        def evaluate(model, loader):
            model.eval()
            for x, y in loader:
                model(x)
        """,
    "a function that evaluates, whatever its name": """
        import torch

        def report(net, x):
            net.eval()
            return net(x)
        """,
    "a script's global model, bound to a class instance": """
        import torch


        class RNN(torch.nn.Module):
            pass


        rnn = RNN()

        def generate(start):
            return rnn(start)
        """,
    "self.model of a class that is no module": """
        import torch

        class Predictor:
            def predict(self, x):
                return self.model(x)
        """,
    "a method of a class whose base comes from the project": """
        import torch
        from mypkg.base import Base

        class Runner(Base):
            def predict(self, x):
                return self.model(x)
        """,
    "an inference method the file defines": """
        import torch
        import torch.nn as nn

        class Decoder(nn.Module):
            def beam_search(self, x):
                return x

        def caption(decoder, x):
            return decoder.beam_search(x)
        """,
    "inside a block that leaves gradients on": """
        import torch

        def evaluate(model, x):
            with torch.autocast("cpu"):
                return model(x)
        """,
    "a script's loop after model.eval()": """
        import torch

        model = torch.nn.Linear(2, 2)
        model.eval()
        for x in batches:
            out = model(x)
        """,
    "a script's loop over a test set": """
        import torch

        for images, labels in test_loader:
            output = model(images)
        """,
}

TL401_SILENT = {
    "decorated with no_grad": """
        import torch

        @torch.no_grad()
        def evaluate(model, loader):
            model.eval()
            for x, y in loader:
                model(x)
        """,
    "calls inside a no_grad block": """
        import torch

        def evaluate(model, loader):
            model.eval()
            with torch.inference_mode():
                for x, y in loader:
                    model(x)
        """,
    "backpropagates": """
        import torch

        def validate(model, x):
            loss = model(x).sum()
            loss.backward()
        """,
    "a module's own method": """
        import torch
        from torch import nn

        class Net(nn.Module):
            def predict(self, x):
                return self.model(x)
        """,
    "a step hook": """
        import torch

        class Lit:
            def validation_step(self, batch):
                return self.model(batch)
        """,
    "runs no model": """
        import torch

        def evaluate(metrics, loader):
            for batch in loader:
                metrics.update(batch)
            return metrics.compute()
        """,
    "a local model": """
        import torch

        def test_forward():
            model = torch.nn.Linear(2, 2)
            model(torch.ones(2))
        """,
    "a script's loop that trains": """
        import torch

        for x, y in test_loader:
            loss = model(x).sum()
            loss.backward()
        """,
    "evaluates and trains again": """
        import torch

        def step(model, x):
            model.eval()
            y = model(x)
            model.train()
            return y
        """,
}


@pytest.mark.parametrize("text", TL401_FIRES.values(), ids=TL401_FIRES.keys())
def test_tl401_check_holds_where_the_rule_reports(text: str) -> None:
    _holds("TL401", text)


@pytest.mark.parametrize("text", TL401_SILENT.values(), ids=TL401_SILENT.keys())
def test_tl401_check_rules_out_clean_evaluation(text: str) -> None:
    _ruled_out("TL401", text)


def test_tl401_check_holds_on_a_notebooks_program() -> None:
    """Cells with IPython syntax: the check reads the program the notebook step builds."""
    notebook = Notebook.from_cells("nb.ipynb", [
        (1, "%matplotlib inline\nimport torch\nmodel = torch.nn.Linear(2, 2)"),
        (2, "model.eval()\nfor x, y in valid_loader:\n    !echo step\n    out = model(x)"),
    ])
    facts = triage(notebook.program)
    assert facts is not None and may_flag_tl401(facts, Options())


def test_tl401_check_follows_the_settings_model_names() -> None:
    text = textwrap.dedent("""
        import torch

        def predict(policy, x):
            return policy(x)
        """)
    facts = triage(text)
    assert facts is not None
    assert not may_flag_tl401(facts, Options())
    assert may_flag_tl401(facts, Options().extended(model_names=["policy"]))


# ------------------------------------------------------------------ TL402
TL402_FIRES = {
    "under no_grad without eval": """
        import torch

        @torch.no_grad()
        def validate(model, loader):
            for x, y in loader:
                model(x)
        """,
    "in a file that trains": """
        import torch

        def train(model, x, opt):
            model(x).sum().backward()
            opt.step()

        def evaluate(model, x):
            return model(x)
        """,
    "only called with gradients off": """
        import torch

        def evaluate(model, x):
            return model(x)

        with torch.inference_mode():
            evaluate(net, batch)
        """,
    "self.model under no_grad": """
        import torch

        class Runner:
            def validate(self, x):
                with torch.no_grad():
                    return self.model(x)
        """,
}

TL402_SILENT = {
    "switches to eval": """
        import torch

        @torch.no_grad()
        def validate(model, loader):
            model.eval()
            for x, y in loader:
                model(x)
        """,
    "gradients on, in a file that does not train": """
        import torch

        def evaluate(model, x):
            return model(x)
        """,
    "a module's own method": """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            @torch.no_grad()
            def evaluate(self, x):
                return self.model(x)
        """,
    "another method of the class switches to eval": """
        import torch

        class Runner:
            def __init__(self, model):
                self.model = model
                self.model.eval()

            def validate(self, x):
                with torch.no_grad():
                    return self.model(x)
        """,
    "a unittest method": """
        import torch
        import unittest

        class TestNet(unittest.TestCase):
            @torch.no_grad()
            def test_output(self, model=None):
                model(1)
        """,
}


@pytest.mark.parametrize("text", TL402_FIRES.values(), ids=TL402_FIRES.keys())
def test_tl402_check_holds_where_the_rule_reports(text: str) -> None:
    _holds("TL402", text)


@pytest.mark.parametrize("text", TL402_SILENT.values(), ids=TL402_SILENT.keys())
def test_tl402_check_rules_out_clean_evaluation(text: str) -> None:
    _ruled_out("TL402", text)


# ------------------------------------------------------------------ TL403
TL403_FIRES = {
    "validation in the epoch loop": """
        import torch

        def fit(model, loader, opt):
            for epoch in range(3):
                for x in loader:
                    model(x).sum().backward()
                    opt.step()
                model.eval()
        """,
    "through an accelerator's backward": """
        import torch

        class Trainer:
            def run(self, loader):
                for batch in loader:
                    loss = self.model(batch).sum()
                    self.accelerator.backward(loss)
                    self.model.eval()
        """,
    "torch.autograd.backward under another name": """
        import torch
        from torch.autograd import backward as bw

        def fit(net, loader):
            for x in loader:
                bw(net(x).sum())
                net.eval()
        """,
}

TL403_SILENT = {
    "train() again in the loop": """
        import torch

        def fit(model, loader, opt):
            for epoch in range(3):
                model.train()
                for x in loader:
                    model(x).sum().backward()
                    opt.step()
                model.eval()
        """,
    "eval after the loop": """
        import torch

        def fit(model, loader, opt):
            for x in loader:
                model(x).sum().backward()
            model.eval()
        """,
    "the loop does not backpropagate itself": """
        import torch

        def fit(model, loader):
            for epoch in range(3):
                train_one_epoch(model, loader)
                model.eval()
        """,
    "an EMA copy that no step runs": """
        import torch

        def fit(model, ema, loader):
            for x in loader:
                model(x).sum().backward()
                ema.eval()
        """,
}


@pytest.mark.parametrize("text", TL403_FIRES.values(), ids=TL403_FIRES.keys())
def test_tl403_check_holds_where_the_rule_reports(text: str) -> None:
    _holds("TL403", text)


@pytest.mark.parametrize("text", TL403_SILENT.values(), ids=TL403_SILENT.keys())
def test_tl403_check_rules_out_clean_loops(text: str) -> None:
    _ruled_out("TL403", text)


# ------------------------------------------------------------------ TL404
@pytest.mark.parametrize("text", ["model.eval\n", "(optimizer.zero_grad)\n",
                                  "if x:\n    net.module.train  # comment\n"])
def test_tl404_check_holds_on_a_method_not_called(text: str) -> None:
    _holds("TL404", "import torch\n" + text)


@pytest.mark.parametrize("text", ["model.eval()\n", "switch = model.train\n",
                                  "print(model.eval)\n"])
def test_tl404_check_rules_out_called_or_used_methods(text: str) -> None:
    _ruled_out("TL404", "import torch\n" + text)


# ------------------------------------------------------------------ TL405
TL405_FIRES = {
    "F.dropout": "import torch.nn.functional as F\n\ny = F.dropout(x, 0.5)\n",
    "imported under another name": (
        "from torch.nn.functional import dropout2d as drop\n\ny = drop(x, p=0.1)\n"),
    "a module-level alias": (
        "import torch.nn.functional as F\n\ndrop = F.alpha_dropout\ny = drop(x)\n"),
}

TL405_SILENT = {
    "training given": ("import torch.nn.functional as F\n\n"
                       "y = F.dropout(x, 0.5, training=False)\n"),
    "training given by position": ("import torch.nn.functional as F\n\n"
                                   "y = F.dropout(x, 0.5, flag)\n"),
    "starred arguments": "import torch.nn.functional as F\n\ny = F.dropout(*args)\n",
    "the layer": "import torch.nn as nn\n\nlayer = nn.Dropout(0.5)\ny = layer(x)\n",
    "a dropout of another library": (
        "import torch\nfrom mylib import dropout\n\ny = dropout(x, 0.5)\n"),
}


@pytest.mark.parametrize("text", TL405_FIRES.values(), ids=TL405_FIRES.keys())
def test_tl405_check_holds_on_a_dropout_without_training(text: str) -> None:
    _holds("TL405", text)


@pytest.mark.parametrize("text", TL405_SILENT.values(), ids=TL405_SILENT.keys())
def test_tl405_check_rules_out_dropouts_that_follow_the_mode(text: str) -> None:
    _ruled_out("TL405", text)
