"""The screen's check of TL302 (``may_flag_tl302`` in rules/devices/screens.py): it follows
a name back to the binding that reaches the move in straight-line code, as the rule does,
so it holds on the shapes the rule reports (aliases, chains through locals, batches and
their items, notebooks' programs, names a project module may alias) and rules out the
clean shapes that made it hold on real code (a module bound in the same function, a
binding in another function, one an ``if`` or a loop may have replaced). Every snippet is
also linted with the rule forced to run: where the check says no, the rule is silent, and
where the rule alone can decide (no project knowledge needed), it reports the shape the
check holds on."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.registry import all_rules
from torchlint.rules.devices.screens import may_flag_tl302
from torchlint.source import SourceFile

# (whether the check holds, whether the rule reports it alone: None when only the project's
# other files could tell, source)
CASES: list[tuple[bool, bool | None, str]] = [
    # ------------------------------------------------------------ holds
    # the rule's example: a loader's batch, unpacked by the loop
    (True, True, """
        def step(model, loader, device):
            for images, labels in loader:
                images.to(device)
                labels.cuda()
                model(images)
        """),
    # an alias of torch; methods chained on the factory
    (True, True, """
        import torch as T
        def f():
            x = T.zeros(3).float()
            x.cuda()
        """),
    # a torch function imported under another name
    (True, True, """
        from torch import randn as noise
        def f():
            z = noise(4, 8)
            z.cpu()
        """),
    # a chain through the name itself: what was x before x = x.float()?
    (True, True, """
        import torch
        def f(scale):
            x = torch.ones(3)
            x = x.float()
            x = x.view(1, 3)
            x.to("cuda")
        """),
    # an element unpacked from a whole batch, in tqdm
    (True, True, """
        from tqdm import tqdm
        def f(train_loader):
            for batch in tqdm(train_loader):
                x, y = batch
                y.cpu()
        """),
    # a whole batch's item, and a name assigned one
    (True, True, """
        def f(train_loader):
            for i, batch in enumerate(train_loader):
                batch["image"].cuda()
        """),
    (True, True, """
        def f(val_loader):
            for batch in val_loader:
                image = batch[0]
                image.cuda()
        """),
    # a conditional alias of the legacy constructors (PyTorch-GAN's scripts)
    (True, True, """
        import torch
        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        valid = Tensor(16, 1).float()
        valid.cuda()
        """),
    # bound before a loop that does not rebind it; inside a with block
    (True, True, """
        import torch
        def f(n):
            mask = torch.zeros(n)
            for _ in range(n):
                mask.cuda()
        """),
    (True, True, """
        import torch
        def f(n):
            with torch.no_grad():
                mask = torch.zeros(n)
                mask.cuda()
        """),
    # a script at module level, the binding in an if block holding the move
    (True, True, """
        import torch
        if __name__ == "__main__":
            data = torch.randn(8, 3)
            data.to("cuda")
        """),
    # a project module may alias a legacy constructor (the rule reads the project)
    (True, None, """
        from .utils import FloatTensor
        def f():
            x = FloatTensor(3)
            x.cuda()
        """),
    (True, None, """
        from common import make
        def f():
            x = make(3, device="cpu")
            x.cuda()
        """),
    # ------------------------------------------------------------ rules out
    # a module of the file: built, then moved in place
    (False, False, """
        from torch import nn
        class Head(nn.Module):
            pass
        def build(device):
            head = Head()
            head.cuda()
            return head
        """),
    # the tensor binding is another function's (timm's tests)
    (False, False, """
        import torch
        class MLP(torch.nn.Module):
            pass
        def one():
            m = torch.randn(3)
            return m
        def two(device):
            m = MLP()
            m.to(device=device)
        """),
    # an if may have replaced the tensor (timm's train.py)
    (False, False, """
        import torch
        def main(args, device):
            model = torch.zeros(3)
            if args.split_bn:
                model = convert(model)
            model.to(device=device)
        """),
    # the loop body rebinds it: the value comes from the last iteration
    (False, False, """
        import torch
        def f(n):
            h = torch.zeros(n)
            for _ in range(n):
                h.cuda()
                h = step(h)
        """),
    # bound inside a with block before it (the rule does not follow it there)
    (False, False, """
        import torch
        def f(n):
            with torch.no_grad():
                mask = torch.zeros(n)
            mask.cuda()
        """),
    # a parameter, also under a chain of its own methods
    (False, False, """
        def f(x, y):
            x.cuda()
            y = y.float()
            y.cpu()
        """),
    # a project function given a keyword no legacy constructor takes
    (False, False, """
        from timm import create_model
        def test(name, device):
            model = create_model(name, pretrained=False)
            model.to(device)
        """),
    # a torch.nn class is no tensor
    (False, False, """
        import torch
        def f(device):
            model = torch.nn.Sequential(torch.nn.Linear(2, 3))
            model.to(device)
        """),
    # torch functions that return a module or an object, no tensor
    (False, False, """
        import torch
        def f(model, path, device):
            compiled = torch.compile(model)
            compiled.to(device)
            restored = torch.load(path)
            restored.cuda()
        """),
    # a batch from a loop over something that is no loader; an item of an unpacked batch
    (False, False, """
        def f(items, loader):
            for a, b in items:
                a.cuda()
            for batch, meta in loader:
                batch["x"].cuda()
        """),
    # a whole batch of a package whose batches move in place (transformers)
    (False, False, """
        import transformers
        def f(train_loader, device):
            for batch in train_loader:
                batch.to(device)
        """),
    # the batch name rebound before the item is taken
    (False, False, """
        def f(train_loader):
            for batch in train_loader:
                batch = prepare(batch)
                batch["image"].cuda()
        """),
]


def _findings(text: str, path: str = "t.py") -> list[int]:
    rule = all_rules()["TL302"]
    settings = replace(FileSettings.for_rules([rule], {"TL302"}), options=Options(preview=True))
    result = lint_source(SourceFile(path, text), settings, prefilter=False)
    return [d.line for d in result.diagnostics if d.code == "TL302"]


@pytest.mark.parametrize(("holds", "reported", "source"), CASES)
def test_the_check_holds_where_the_rule_reports(holds: bool, reported: bool | None,
                                                source: str) -> None:
    text = textwrap.dedent(source)
    facts = triage(text)
    assert facts is not None
    assert may_flag_tl302(facts, Options()) is holds
    if reported is not None:
        assert bool(_findings(text)) is reported


def test_the_rule_asks_the_check_last() -> None:
    """The check comes after the cheaper facts of the rule's trigger."""
    data = all_rules()["TL302"].requires.data()  # type: ignore[union-attr]
    assert data[-1] == ("check", "torchlint.rules.devices.screens:may_flag_tl302")


def test_a_notebooks_program_is_checked_across_its_cells() -> None:
    """A notebook is one program of its code cells (IPython syntax set aside): the tensor
    made in one cell, moved in another (not as its last statement, which Jupyter shows)."""
    from torchlint.notebook import Notebook

    notebook = Notebook.from_cells("n.ipynb", [
        (1, "!pip install torch\nimport torch\nx = torch.randn(4, 2)"),
        (2, "%time y = x * 2\nx.cuda()\nprint(x.device)"),
    ])
    facts = triage(notebook.program)
    assert facts is not None
    assert may_flag_tl302(facts, Options())
    assert _findings(notebook.program, "n.ipynb")


def test_target_names_reads_nested_and_starred_targets() -> None:
    """The names a target binds, as libcst's ``nodes.target_names``: nested tuples and
    starred elements bind, subscripts and attributes do not."""
    import ast

    from torchlint.analysis.ast_names import target_names

    assign = ast.parse("a, (b, *c), d[0], e.f = value").body[0]
    assert isinstance(assign, ast.Assign)
    assert list(target_names(assign.targets[0])) == ["a", "b", "c"]


def test_the_torch_functions_ruled_out_make_no_tensor_for_the_rule() -> None:
    """The check's torch functions that make no tensor stay out of the rule's tensor ops
    and legacy constructors (else the check would hide a finding)."""
    from torchlint.analysis.tensor_facts import LEGACY_TENSOR_TYPES, TENSOR_OPS
    from torchlint.rules.devices.screens import _NO_TENSOR

    assert _NO_TENSOR
    assert _NO_TENSOR.isdisjoint(TENSOR_OPS | LEGACY_TENSOR_TYPES)
