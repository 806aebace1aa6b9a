"""Unit checks for the loss rules (TL214-TL217) and the numerics rules (TL502-TL506)
beyond their fixtures: what "flows into" and "bound in the file" cover, where findings
are reported, and which fixes are offered."""

from __future__ import annotations

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def _lint(code: str, text: str) -> list[tuple[int, int]]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}))
    return [(d.line, d.column) for d in result.diagnostics]


def _fixes(code: str, text: str) -> list[bool]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}))
    return [d.fix is not None for d in result.diagnostics]


def _fix(code: str, text: str) -> str:
    rule = all_rules()[code]
    return fix_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}),
                      unsafe=True).source.text


# ----------------------------------------------------------------- flows into
def test_a_module_level_script_counts_as_one_scope() -> None:
    text = HEAD + "probs = F.softmax(out, 1)\nloss = F.cross_entropy(probs, y)\n"
    assert _lint("TL214", text) == [(5, 24)]


def test_an_augmented_rebinding_in_between_hides_the_softmax() -> None:
    text = HEAD + ("def f(out, y):\n    probs = F.softmax(out, 1)\n    probs += 1e-6\n"
                   "    return F.cross_entropy(probs, y)\n")
    assert _lint("TL214", text) == []


def test_a_rebinding_in_a_loop_before_the_use_hides_the_softmax() -> None:
    text = HEAD + ("def f(outs, y):\n    probs = F.softmax(outs[0], 1)\n    for o in outs:\n"
                   "        loss = F.cross_entropy(probs, y)\n        probs = o\n")
    assert _lint("TL214", text) == []


def test_a_softmax_bound_before_the_loop_and_kept_flows_in() -> None:
    text = HEAD + ("def f(out, ys):\n    probs = F.softmax(out, 1)\n    for y in ys:\n"
                   "        loss = F.cross_entropy(probs, y)\n")
    assert _lint("TL214", text) == [(7, 32)]


def test_a_name_bound_from_a_name_is_not_followed_further() -> None:
    text = HEAD + ("def f(out, y):\n    probs = F.softmax(out, 1)\n    p = probs\n"
                   "    return F.cross_entropy(p, y)\n")
    assert _lint("TL214", text) == []


# ---------------------------------------------------- instances bound in the file
def test_self_attributes_assigned_in_init_are_instances() -> None:
    text = HEAD + (
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.loss = nn.NLLLoss().to('cuda')\n"
        "        self.act = nn.Softmax(dim=1)\n"
        "    def step(self, x, y):\n"
        "        return self.loss(self.act(x), y)\n")
    assert _lint("TL215", text) == [(10, 26)]
    assert _fixes("TL215", text) == [False]  # an instance bound to a name is not renamed


def test_a_self_attribute_assigned_two_classes_is_unknown() -> None:
    text = HEAD + (
        "class M(nn.Module):\n"
        "    def __init__(self, logits):\n"
        "        super().__init__()\n"
        "        self.loss = nn.CrossEntropyLoss()\n"
        "        if logits:\n"
        "            self.loss = nn.MSELoss()\n"
        "    def step(self, x, y):\n"
        "        return self.loss(F.softmax(x, 1), y)\n")
    assert _lint("TL214", text) == []


def test_a_self_softmax_method_of_unknown_kind_is_not_a_softmax() -> None:
    text = HEAD + (
        "class M(nn.Module):\n"
        "    def softmax(self, x):\n"
        "        return x\n"
        "    def step(self, x, y):\n"
        "        return F.cross_entropy(self.softmax(x), y)\n")
    assert _lint("TL214", text) == []


def test_a_loss_bound_at_module_level_is_seen_from_functions() -> None:
    text = HEAD + ("criterion = nn.BCEWithLogitsLoss()\n"
                   "def f(x, y):\n    return criterion(torch.sigmoid(x), y)\n")
    assert _lint("TL216", text) == [(6, 22)]


def test_a_loss_passed_in_as_a_parameter_is_unknown() -> None:
    text = HEAD + "def f(criterion, x, y):\n    return criterion(torch.sigmoid(x), y)\n"
    assert _lint("TL216", text) == []


def test_the_method_form_on_an_imported_module_is_not_a_tensor_method() -> None:
    text = HEAD + "from . import utils\nloss = F.cross_entropy(utils.softmax(x), y)\n"
    assert _lint("TL214", text) == []


def test_sigmoid_method_with_arguments_is_not_the_tensor_method() -> None:
    text = HEAD + "loss = F.binary_cross_entropy_with_logits(act.sigmoid(x), y)\n"
    assert _lint("TL216", text) == []


# ----------------------------------------------------------------- positions
def test_reported_at_the_loss_input_argument() -> None:
    text = HEAD + "loss = F.nll_loss(\n    y=0,\n    input=x.softmax(1),\n    target=y)\n"
    assert _lint("TL215", text) == [(6, 5)]


def test_the_target_is_never_looked_at() -> None:
    text = HEAD + "loss = F.cross_entropy(x, target=F.softmax(t, 1))\n"
    assert _lint("TL214", text) == []


# --------------------------------------------------------------------- fixes
def test_softmax_import_stays_while_another_use_needs_it() -> None:
    text = HEAD + ("from torch.nn.functional import softmax\n"
                   "p = softmax(x, 1)\nloss = F.cross_entropy(softmax(x, 1), y)\n")
    assert _fix("TL214", text) == HEAD + (
        "from torch.nn.functional import softmax\n"
        "p = softmax(x, 1)\nloss = F.cross_entropy(x, y)\n")


def test_two_fixed_uses_remove_the_import_together() -> None:
    text = HEAD + ("from torch.nn.functional import softmax\n"
                   "a = F.cross_entropy(softmax(x, 1), y)\nb = F.cross_entropy(softmax(z, 1), y)\n")
    assert _fix("TL214", text) == HEAD + "a = F.cross_entropy(x, y)\nb = F.cross_entropy(z, y)\n"


def test_nll_fix_reuses_an_existing_log_softmax_import() -> None:
    text = HEAD + ("from torch.nn.functional import softmax, log_softmax\n"
                   "loss = F.nll_loss(softmax(x, 1), y) + F.nll_loss(log_softmax(x, 1), y)\n")
    assert _fix("TL215", text) == HEAD + (
        "from torch.nn.functional import log_softmax\n"
        "loss = F.nll_loss(log_softmax(x, 1), y) + F.nll_loss(log_softmax(x, 1), y)\n")


def test_bce_fix_only_for_the_functional_form() -> None:
    text = HEAD + ("loss = nn.BCELoss()(torch.sigmoid(x), y)\n"
                   "loss = F.binary_cross_entropy(torch.sigmoid(x), y, None, None, None, 'sum')\n")
    assert _fixes("TL217", text) == [False, True]
    assert _fix("TL217", text).endswith(
        "loss = F.binary_cross_entropy_with_logits(x, y, None, None, None, 'sum')\n")


def test_bce_import_stays_for_a_call_the_fix_does_not_rewrite() -> None:
    text = HEAD + ("from torch.nn.functional import binary_cross_entropy\n"
                   "a = binary_cross_entropy(torch.sigmoid(x), y)\nb = binary_cross_entropy(p, y)\n")
    fixed = _fix("TL217", text)
    assert "from torch.nn.functional import binary_cross_entropy\n" in fixed
    assert "a = binary_cross_entropy_with_logits(x, y)\n" in fixed


def test_a_multiline_receiver_keeps_its_layout() -> None:
    text = HEAD + ("def f(a, b, y):\n    return F.cross_entropy((a +\n"
                   "                            b).softmax(1), y)\n")
    assert _fix("TL214", text) == HEAD + (
        "def f(a, b, y):\n    return F.cross_entropy((a +\n"
        "                            b), y)\n")


# ------------------------------------------------------------------- TL5
def test_implicit_dim_message_names_the_function() -> None:
    rule = all_rules()["TL502"]
    text = "import torch.nn.functional as F\nimport torch.nn as nn\nF.log_softmax(x)\nnn.Softmin()\n"
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {"TL502"}))
    assert [d.message.split()[0] for d in result.diagnostics] == ["F.log_softmax", "nn.Softmin"]


@pytest.mark.parametrize("expression", ["torch.log(1e0 + x)", "torch.log(1 + 1.0)",
                                        "torch.log(x + True)", "torch.log(-1 + x)",
                                        "torch.log(x - 1)"])
def test_log_one_plus_needs_the_literal_one_and_a_non_literal(expression: str) -> None:
    assert _lint("TL503", f"import torch\ny = {expression}\n") == []


def test_exp_minus_one_is_reported_at_the_subtraction() -> None:
    # the subtraction with its own parentheses, not the exp call inside it
    assert _lint("TL504", "import torch\ny = 2 * (torch.exp(x) - 1)\n") == [(2, 9)]


def test_log_sum_exp_without_a_fix_for_dtype_or_out() -> None:
    text = ("import torch\n"
            "a = torch.log(torch.sum(torch.exp(x), 1, dtype=torch.float64))\n"
            "b = torch.log(torch.exp(x).sum(1), out=o)\n"
            "c = torch.log(torch.exp(x).sum(1))\n")
    assert _fixes("TL505", text) == [False, True]


def test_cat_read_in_the_while_test_is_silent() -> None:
    text = ("import torch\n"
            "while acc.shape[0] < n:\n    acc = torch.cat([acc, step()])\n")
    assert _lint("TL506", text) == []


def test_cat_in_an_inner_loop_of_a_list_appended_in_the_outer_loop_is_silent() -> None:
    text = ("import torch\n"
            "for epoch in range(3):\n    outs.append(f(epoch))\n"
            "    for x in xs:\n        total = torch.cat(outs)\n")
    assert _lint("TL506", text) == []


def test_cat_of_an_appended_attribute_list_is_reported() -> None:
    text = ("import torch\n"
            "def f(self, xs):\n    for x in xs:\n        self.outs.append(x)\n"
            "        self.all = torch.stack(self.outs)\n")
    assert _lint("TL506", text) == [(5, 20)]


def test_stack_of_a_pair_is_not_accumulation() -> None:
    text = "import torch\nfor x in xs:\n    acc = torch.stack([acc, x])\n"
    assert _lint("TL506", text) == []


# ------------------------------------------------------------------ prefilter
@pytest.mark.parametrize(("code", "text", "line"), [
    ("TL214", "from torch.nn import CrossEntropyLoss as CE, Softmax as S\n"
              "ce = CE()\nact = S(dim=1)\nloss = ce(act(x), y)\n", 4),
    ("TL215", "import torch.nn.functional as fn\nloss = fn.nll_loss(\n"
              "    fn.softmax(x, 1),  # probabilities\n    y)\n", 3),
    ("TL216", "from torch.nn import BCEWithLogitsLoss\nfrom torch import sigmoid as sg\n"
              "loss = BCEWithLogitsLoss()(sg(z), t)\n", 3),
    ("TL503", "from torch import log as ln\ny = ln(x + 1)\n", 2),
    ("TL504", "import torch\ny = torch.exp(x) - \\\n    1\n", 2),
    ("TL504", "import torch as th\ny = th.exp(x) -1.0\n", 2),
    ("TL505", "import torch as th\ny = th.log(th.exp(x).sum(1))\n", 2),
    ("TL506", "from torch import concat\nwhile go():\n    acc = concat((acc, part()))\n", 3),
])
def test_the_prefilter_passes_unusual_spellings(code: str, text: str, line: int) -> None:
    """Aliases, line continuations and comments do not hide a finding from the text
    prefilter (lint_source applies it as a run does)."""
    assert [found[0] for found in _lint(code, text)] == [line]
