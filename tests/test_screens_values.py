"""The screen's checks of the training rules about values (rules/training/value_screens.py):
each holds on the shapes its rule reports (aliases, project names, scripts and notebooks'
module-level loops included) and rules out the common clean shapes that made the rule's
older trigger hold. Every snippet is also linted with the rule forced to run: where the
check says no, the rule must be silent (the check never hides a finding), and where the
rule alone can decide it (no project knowledge needed), it reports the shape the check
holds on."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

import torchlint.rules.training.value_screens as screens
from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.registry import all_rules
from torchlint.source import SourceFile

# (code, whether the check holds, whether the rule reports it alone: None when only the
# project's other files could tell, source)
CASES: list[tuple[str, bool, bool | None, str]] = [
    # ------------------------------------------------------------ TL202
    ("TL202", True, True, """
        def train(model, loader, optimizer, criterion):
            running_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                running_loss += loss
        import torch
        """),
    ("TL202", True, True, """
        import torch.nn.functional as F
        def train(model, loader, optimizer):
            epoch_loss = 0.0
            for x, y in loader:
                loss = F.nll_loss(model(x), y)
                loss.backward()
                optimizer.step()
                epoch_loss = epoch_loss + loss
        """),
    ("TL202", True, True, """
        from torch.nn.functional import mse_loss as mse
        acc = 0
        for step in range(10):
            acc += mse(model(x), x) * 4
        """),
    ("TL202", True, True, """
        import torch
        def run(model, loader, objective, optimizer):
            running = torch.zeros(1).squeeze_()
            for x, y in loader:
                score = objective(model(x), y)
                score.backward()
                optimizer.step()
                running += score
        """),
    ("TL202", True, True, """
        import torch
        from torch import nn
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.criterion = nn.CrossEntropyLoss()
                self.running_loss = 0.0
                self.meters = {"loss": 0.0}
            def training_step(self, x, y):
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.meters["loss"] += loss
        """),
    ("TL202", True, True, """
        import torch
        def epoch(model, loader, criterion, names):
            stats = {name: 0.0 for name in names}
            for x, y in loader:
                out = model(x)
                stats["loss"] += criterion(out, y)
        """),
    ("TL202", True, True, """
        import torch
        def hf(model, train_dataloader):
            total_loss = 0
            for batch in train_dataloader:
                outputs = model(**batch)
                outputs.loss.backward()
                total_loss += outputs.loss
        """),
    # a project's class: its instance may be a model (the project's files tell)
    ("TL202", True, None, """
        import torch
        from mypkg.heads import Head
        head = Head()
        def score(loader):
            total = 0.0
            for x in loader:
                total += head(x)
        """),
    ("TL202", False, False, """
        import torch
        def train(model, loader, optimizer, criterion):
            a, b, c = 0.0, 0.0, 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                a += loss.item()
                b += float(loss)
                c += len(x)
        """),
    ("TL202", False, False, """
        import torch
        def validate(model, loader, criterion):
            total = 0.0
            with torch.no_grad():
                for x, y in loader:
                    total += criterion(model(x), y)
            return total
        """),
    ("TL202", False, False, """
        import torch
        @torch.inference_mode()
        def test(model, loader, criterion):
            total = 0.0
            for x, y in loader:
                total += criterion(model(x), y)
            return total
        """),
    ("TL202", False, False, """
        import torch
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = nn.Linear(2, 2)
            def forward(self, x):
                x = x + self.mlp(x)
                return x
        def once(model, x, y, criterion):
            total = 0
            total += criterion(model(x), y)
            return total
        """),
    ("TL202", False, False, """
        import torch
        def evaluate(model, loader):
            correct = 0
            for x, y in loader:
                pred = model(x).argmax(1)
                correct += (pred == y).sum()
            names = ""
            for x in loader:
                names += x.name
        """),
    # ------------------------------------------------------------ TL201
    ("TL201", True, True, """
        import torch
        def train(model, loader, optimizer, criterion):
            losses = []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss)
        """),
    ("TL201", True, True, """
        import torch
        from torch import nn
        model = nn.Linear(4, 1)
        crit = nn.MSELoss()
        curve = []
        for epoch in range(3):
            batch_loss = crit(model(torch.randn(8, 4)), torch.zeros(8, 1))
            batch_loss.backward()
            curve.append(batch_loss)
        """),
    # a list kept on self grows across calls, with no loop around the append
    ("TL201", True, True, """
        import torch
        from torch import nn
        class Tracker:
            def __init__(self, model):
                self.model = model
                self.criterion = nn.CrossEntropyLoss()
                self.history = []
            def step(self, x, y):
                loss = self.criterion(self.model(x), y)
                loss.backward()
                self.history.append(loss)
        """),
    ("TL201", True, True, """
        import torch
        def collect(model, val_loader):
            preds = []
            for x in val_loader:
                preds.append(model(x))
        """),
    ("TL201", False, False, """
        import torch
        def train(model, loader, criterion):
            a, b = [], []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                a.append(loss.item())
                b.append(loss.detach())
        """),
    ("TL201", False, False, """
        import torch
        @torch.no_grad()
        def evaluate(model, loader, criterion):
            scores = []
            for x, y in loader:
                scores.append(criterion(model(x), y))
            return scores
        """),
    ("TL201", False, False, """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.blocks = []
                for _ in range(depth):
                    self.blocks.append(nn.Linear(2, 2))
            def forward(self, feats):
                outs = []
                for f in feats:
                    outs.append(self.head(f))
                return outs
        """),
    # ------------------------------------------------------------ TL207
    ("TL207", True, True, """
        import torch
        row = torch.zeros(1, 4)
        grid = row.expand(3, 4)
        grid[0, 0] = 1.0
        """),
    ("TL207", True, True, """
        import torch
        def f(x, y):
            x.expand(2, 4).add_(1)
            z = x.expand_as(y)
            z += 1
        """),
    ("TL207", False, False, """
        import re
        import torch
        def f(x, m):
            y = x.expand(3, 4).clone()
            y[0] = 1
            z = x.expand(3, 4)
            w = z * 2
            text = m.expand("\\\\1")
            x.add_(1)
            return w, text
        """),
    # ------------------------------------------------------------ TL212
    ("TL212", True, True, """
        import torch
        def freeze(model):
            for p in model.parameters():
                p.require_grad = False
        """),
    ("TL212", False, False, """
        import torch
        class Flag:
            def __init__(self):
                self.require_grad = False
            def on(self, p):
                p.require_grad = True
                return p.require_grad
        """),
    ("TL212", False, False, """
        def freeze(model):
            for p in model.parameters():
                p.require_grad = False
        """),
    # ------------------------------------------------------------ TL214-TL217
    ("TL214", True, True, """
        import torch.nn.functional as F
        def loss_of(logits, y):
            return F.cross_entropy(F.softmax(logits, dim=1), y)
        """),
    ("TL214", True, True, """
        from torch import nn
        from torch.nn.functional import cross_entropy as ce
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.sm = nn.Softmax(dim=1)
            def loss(self, x, y):
                probs = self.sm(x)
                return ce(probs, y)
        """),
    ("TL214", False, False, """
        import torch.nn.functional as F
        def step(logits, y):
            probs = F.softmax(logits, dim=1)
            loss = F.cross_entropy(logits, y)
            return loss, probs
        """),
    ("TL215", True, True, """
        import torch
        from torch import nn
        criterion = nn.NLLLoss().cuda()
        def step(x, y):
            return criterion(input=x.softmax(dim=1), target=y)
        """),
    ("TL215", False, False, """
        import torch.nn.functional as F
        def step(x, y):
            return F.nll_loss(F.log_softmax(x, dim=1), y)
        """),
    ("TL216", True, True, """
        import torch
        from torch import nn
        class Model:
            def __init__(self):
                self.crit = nn.BCEWithLogitsLoss()
            def loss(self, logits, y):
                p = torch.sigmoid(logits)
                return self.crit(p, y)
        """),
    ("TL216", False, False, """
        import torch
        import torch.nn.functional as F
        def loss(logits, y):
            p = torch.sigmoid(logits)
            return F.binary_cross_entropy_with_logits(logits, y), p
        """),
    ("TL217", True, True, """
        import torch.nn.functional as F
        def loss(logits, y):
            return F.binary_cross_entropy(logits.sigmoid(), y)
        """),
    ("TL217", False, False, """
        import torch
        from torch import nn
        def loss(logits, y):
            crit = nn.BCELoss()
            return crit(logits.sigmoid(0), y)
        """),
]


def _findings(code: str, text: str) -> list[int]:
    rule = all_rules()[code]
    settings = replace(FileSettings.for_rules([rule], {code}), options=Options(preview=True))
    result = lint_source(SourceFile("t.py", text), settings, prefilter=False)
    return [d.line for d in result.diagnostics if d.code == code]


@pytest.mark.parametrize(("code", "holds", "reported", "source"), CASES)
def test_a_check_holds_where_its_rule_reports(code: str, holds: bool, reported: bool | None,
                                              source: str) -> None:
    text = textwrap.dedent(source)
    facts = triage(text)
    assert facts is not None
    check = getattr(screens, f"may_flag_{code.lower()}")
    assert check(facts, Options()) is holds
    if reported is not None:
        assert bool(_findings(code, text)) is reported


@pytest.mark.parametrize("code", sorted({case[0] for case in CASES}))
def test_each_rule_asks_its_check_last(code: str) -> None:
    """The check comes after the cheaper facts of the rule's trigger."""
    data = all_rules()[code].requires.data()  # type: ignore[union-attr]
    assert data[0] == "all"
    target = f"torchlint.rules.training.value_screens:may_flag_{code.lower()}"
    assert data[-1] == ("check", target)


def test_a_model_name_of_the_settings_counts() -> None:
    """``extend-model-names`` makes more callees models: the check reads the options."""
    text = textwrap.dedent("""
        import torch
        def run(policy, loader):
            total = 0.0
            for x in loader:
                total += policy(x)
        """)
    facts = triage(text)
    assert facts is not None
    assert not screens.may_flag_tl202(facts, Options())
    assert screens.may_flag_tl202(facts, Options().extended(model_names=["policy"]))


def test_a_notebooks_program_is_checked_across_its_cells() -> None:
    """A notebook is one program of its code cells (IPython syntax set aside): the loss
    class built in one cell, the list and the loop in others."""
    from torchlint.notebook import Notebook

    notebook = Notebook.from_cells("n.ipynb", [
        (1, "!pip install torch\nimport torch\nfrom torch import nn\ncrit = nn.MSELoss()"),
        (2, "losses, total = [], 0.0\n%time x = torch.randn(4, 2)"),
        (3, "for epoch in range(3):\n    loss = crit(model(x), x)\n    loss.backward()\n"
            "    opt.step()\n    losses.append(loss)\n    total += loss"),
    ])
    facts = triage(notebook.program)
    assert facts is not None
    for code in ("TL201", "TL202"):
        assert getattr(screens, f"may_flag_{code.lower()}")(facts, Options())
        assert _findings(code, notebook.program)
