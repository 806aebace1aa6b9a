"""The ast triage: the facts of one walk, the triggers rules declare over them, and the
screen that answers a file no rule can fire on without importing libcst or any rule."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from torchlint.analysis.options import Options
from torchlint.analysis.project import Dependency, Project
from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.engine.lint import lint_source
from torchlint.engine.prefilter import star_import_binds, star_imported
from torchlint.engine.screen import certainly_clean, screen
from torchlint.engine.triage import (
    api,
    biased_call,
    calls_method,
    chained_call,
    check,
    from_data,
    loop_sum,
    self_store,
    self_store_call,
    sequence_call,
    training_loop_call,
    triage,
)
from torchlint.registry import all_rules
from torchlint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = Options()


def _facts(text: str):  # type: ignore[no-untyped-def]
    facts = triage(textwrap.dedent(text))
    assert facts is not None
    return facts


# ------------------------------------------------------------------ facts
def test_names_resolve_through_every_import_and_alias() -> None:
    facts = _facts("""
        import torch.nn as nn
        from torch import range as R
        import torch
        T = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
        def f():
            from torch.utils import checkpoint as cp
            return cp.checkpoint(g), nn.modules.conv.Conv2d(1, 2, 3), R(3), T(2)
    """)
    assert {"torch.nn.Conv2d", "torch.range", "torch.utils.checkpoint.checkpoint",
            "torch.cuda.FloatTensor", "torch.FloatTensor"} <= facts.calls
    # the builtin range and names of other libraries are no torch names
    plain = _facts("import numpy as np\nx = [i for i in range(3)]\nnp.range(3)\n")
    assert not api("torch.range").holds(plain, OPTIONS)
    assert api("torch.range").holds(facts, OPTIONS)


def test_every_part_of_a_dotted_name_is_noted() -> None:
    """The walk notes a dotted name whole, yet its inner attributes and its head are facts
    as much as its last attribute (``cuda`` of ``torch.cuda.is_available()``)."""
    facts = _facts("""
    import torch
    if torch.cuda.is_available():
        y = x.T.view(-1)
    w = a.b.c.d
    """)
    assert {"cuda", "is_available", "T", "view", "b", "c", "d"} <= facts.attributes
    assert {"torch", "cuda", "x", "T", "a", "b", "c"} <= facts.names
    assert {"cuda", "T", "b", "c"} <= {n.attr for n in facts.nodes(ast.Attribute)}
    assert {"torch", "x", "a"} <= {n.id for n in facts.nodes(ast.Name)}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameters are Python 3.12's")
def test_the_type_parameters_of_defs_and_classes_are_walked() -> None:
    facts = _facts("""
    from torch import nn
    def run[M: nn.Module](model: M) -> M:
        return model
    class Box[L: nn.Linear]:
        pass
    """)
    assert {"torch.nn.Module", "torch.nn.Linear"} <= facts.qualnames


def test_a_file_that_does_not_parse_has_no_facts() -> None:
    assert triage("def f(:\n") is None


@pytest.mark.parametrize(("text", "expected"), [
    ("import torch.nn as nn\nclass A(nn.Module):\n    def f(self): pass\n", {"A"}),
    ("from torch import nn\nclass A(nn.Module): pass\nclass B(A):\n    def f(self): pass\n",
     {"A", "B"}),
    # a base imported from the project may derive from a module class
    ("from .layers import Base\nclass A(Base):\n    def f(self): pass\n", {"A"}),
    ("from mypkg.layers import Base\nclass A(Base):\n    def f(self): pass\n", {"A"}),
    ("class A:\n    pass\nclass B(A, object):\n    pass\n", set()),
    ("import torch\nclass E(Exception):\n    pass\nclass L(torch.nn.Linear):\n    pass\n",
     set()),
])
def test_module_classes_over_approximate_the_context(text: str, expected: set[str]) -> None:
    assert _facts(text).module_classes(OPTIONS) == expected


def test_settings_module_bases_count() -> None:
    facts = _facts("from lib import Block\nclass A(Block):\n    pass\n")
    options = OPTIONS.extended(module_bases=("lib.Block",))
    assert "A" in facts.module_classes(options)


# ------------------------------------------------------------------ triggers
def test_containers_stored_on_self_directly_or_through_a_name() -> None:
    module = "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n"
    direct = _facts(module + "        self.layers = [nn.Linear(1, 1)]\n")
    named = _facts(module + "        layers = []\n        self.layers = layers\n")
    parameter = _facts(module.replace("(self)", "(self, layers)")
                       + "        self.layers = layers\n        self.d = {}\n")
    assert self_store("list").holds(direct, OPTIONS)
    assert self_store("list").holds(named, OPTIONS)
    assert not self_store("list").holds(parameter, OPTIONS)
    assert self_store("dict").holds(parameter, OPTIONS)
    # outside a module class nothing counts
    plain = _facts("class M:\n    def __init__(self):\n        self.layers = []\n")
    assert not self_store("list").holds(plain, OPTIONS)


def test_a_list_of_layers_needs_a_layer_among_its_items() -> None:
    module = "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n"
    trigger = self_store("list", layers=True)
    holding = [
        "        self.blocks = [nn.Linear(1, 1) for _ in range(2)]\n",
        "        self.blocks = []\n        self.blocks.append(Block())\n",
        "        blocks = []\n        b = nn.Linear(1, 1)\n        blocks.append(b)\n"
        "        self.blocks = blocks\n",
        "        self.blocks = list(nn.Linear(1, 1) for _ in range(2))\n",
        "        self.blocks = []\n        self.blocks += [nn.Linear(1, 1)]\n",
        "        self.blocks = []\n        self.blocks.extend([make.Block()])\n",
    ]
    for body in holding:
        assert trigger.holds(_facts(module + body + "class Block(nn.Module): pass\n"),
                             OPTIONS), body
    # a list of records beside a layer stored directly holds no layer
    records = ("        self.info = []\n        self.info.append(dict(n=1))\n"
               "        self.conv = nn.Conv2d(1, 2, 3)\n")
    assert not trigger.holds(_facts(module + records), OPTIONS)
    assert self_store("list").holds(_facts(module + records), OPTIONS)


def test_calls_that_may_keep_a_bias_and_chained_calls() -> None:
    text = ("import torch.nn as nn\na = nn.Conv2d(1, 2, 3, bias=False)\n"
            "b = nn.LazyConv2d(2, 3, 1, 0, 1, 1, False)\nc = nn.Conv1d(*shape)\n"
            "d = nn.Conv3d(1, 2, 3, bias=True)\n")
    facts = _facts(text)
    assert facts.biased_calls == {"torch.nn.Conv3d"}
    assert not biased_call("torch.nn.Conv2d").holds(facts, OPTIONS)
    assert biased_call("torch.nn.Conv2d").holds(_facts("from torch.nn import Conv2d as C\n"
                                                       "C(1, 2, 3)\n"), OPTIONS)
    wrapped = _facts("import torch\np = torch.nn.Parameter(torch.zeros(3)).cuda()\n")
    assert chained_call("torch.nn.Parameter").holds(wrapped, OPTIONS)
    assert not chained_call("torch.nn.Parameter").holds(
        _facts("import torch\np = torch.nn.Parameter(torch.zeros(3).cuda())\n"), OPTIONS)


def test_running_totals_in_loops_or_kept_on_objects() -> None:
    assert loop_sum().holds(_facts("for x in xs:\n    stats[k] += f(x)\n"), OPTIONS)
    assert loop_sum().holds(_facts("for x in xs:\n    pass\nelse:\n    t += f(x)\n"), OPTIONS)
    # a total kept on self grows across calls: no loop needed
    assert loop_sum().holds(_facts("def step(self, x):\n    self.total += f(x)\n"), OPTIONS)
    assert not loop_sum().holds(_facts("def f(x):\n    t += x\n"), OPTIONS)
    assert not loop_sum().holds(_facts("for x in xs:\n    n += 1\n"), OPTIONS)


def test_stored_factory_calls_see_through_chained_methods() -> None:
    text = ("import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n"
            "        self.mask = torch.ones(3).bool().cuda()\n")
    trigger = self_store_call("torch.ones", methods=("__init__",))
    assert trigger.holds(_facts(text), OPTIONS)
    assert not trigger.holds(_facts(text.replace("__init__", "setup")), OPTIONS)
    assert not self_store_call("torch.zeros").holds(_facts(text), OPTIONS)


def test_training_loops_and_sequences() -> None:
    train = _facts("""
        for x, y in loader:
            losses.append(loss_fn(model(x), y))
    """)
    build = _facts("""
        for i in range(3):
            layers.append(Block(i))
    """)
    assert training_loop_call("append").holds(train, OPTIONS)
    assert not training_loop_call("append").holds(build, OPTIONS)
    nested = _facts("import torch.nn as nn\nnn.ModuleList([[nn.Linear(1, 1)]])\n")
    flat = _facts("import torch.nn as nn\nnn.ModuleList([nn.Linear(1, 1)])\n")
    trigger = sequence_call("torch.nn.ModuleList", nested=True)
    assert trigger.holds(nested, OPTIONS) and not trigger.holds(flat, OPTIONS)


def test_triggers_round_trip_through_their_data() -> None:
    """The catalogue keeps triggers as data: each rule's comes back the same."""
    for rule in all_rules().values():
        if rule.requires is not None:
            assert from_data(rule.requires.data()) == rule.requires, rule.code
    combined = calls_method("view") & (api("torch.x") | sequence_call("f"))
    assert from_data(combined.data()) == combined


def _two_loops(facts, options) -> bool:  # type: ignore[no-untyped-def]
    import ast

    return sum(1 for _ in facts.nodes(ast.For, ast.While)) >= 2


def test_a_check_reads_the_tree_through_the_facts() -> None:
    """A rule's own check gets the facts: the tree, its nodes by class and the names the
    file's imports resolve to; it is data like every trigger."""
    two = check("test_triage:_two_loops")
    assert from_data(two.data()) == two
    facts = _facts("""
        import torch.nn as tnn
        from torch.nn import functional as F
        for a in b:
            while c:
                tnn.Linear(F.relu)
        """)
    assert two.holds(facts, OPTIONS)
    assert not two.holds(_facts("for a in b:\n    pass\n"), OPTIONS)
    import ast

    call = next(iter(facts.nodes(ast.Call)))
    assert facts.qualnames_of(call.func) == {"torch.nn.Linear"}
    assert facts.qualnames_of(call.args[0]) == {"torch.nn.functional.relu"}
    assert facts.qualnames_of(ast.parse("b").body[0].value) == set()  # type: ignore[attr-defined]


def _check_targets(data: object) -> set[str]:
    if isinstance(data, tuple) and data and data[0] == "check":
        return {str(data[1])}
    if isinstance(data, tuple):
        return {t for part in data for t in _check_targets(part)}
    return set()


def test_the_rules_checks_import_neither_libcst_nor_a_rule() -> None:
    """The screen runs the checks before libcst or any rule is imported."""
    from torchlint.catalog import SCREEN

    modules = sorted({t.split(":")[0] for _, _, requires in SCREEN.values()
                      for t in _check_targets(requires)})
    # an installed torchlint has its rules under torchlint.rules only
    assert modules and all(m.startswith("torchlint.rules.") for m in modules), modules
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "bad = [m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')\n"
            "       or m.rsplit('.', 1)[-1][:2] == 'tl'\n"
            "       and m.startswith(('rules.', 'torchlint.rules.'))]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ------------------------------------------------------------------ over-approximation
def _fixture_texts() -> dict[str, str]:
    from fixture_support import FIXTURES

    texts = {str(p): p.read_text(encoding="utf-8") for p in FIXTURES.rglob("*.py")
             if not p.name.endswith(".fixed.py")}
    for rule in all_rules().values():
        texts[f"{rule.code}-example.py"] = rule.doc_example("## Example")
    return texts


def test_every_rule_trigger_holds_where_the_rule_reports() -> None:
    """Each rule alone: wherever it reports (every fixture, demo and doc example, with
    preview on), its trigger holds on the file's facts."""
    rules = [r for code, r in all_rules().items() if code not in ("TL001", "TL002")]
    codes = {r.code for r in rules}
    options = Options(preview=True)
    checked = 0
    for path, text in _fixture_texts().items():
        facts = triage(text)
        if facts is None:
            continue
        settings = FileSettings.for_rules(rules, codes, options=options)
        found = {d.code for d in lint_source(SourceFile(path, text), settings,
                                             prefilter=False).diagnostics}
        for rule in rules:
            if rule.code in found and rule.requires is not None:
                checked += 1
                assert rule.requires.holds(facts, options), (rule.code, path)
    assert checked > 30


# ------------------------------------------------------------------ the screen
def test_screen_answers_from_the_catalogue_as_from_the_rules() -> None:
    settings = Settings(select=("ALL",), preview=True)
    for path, text in _fixture_texts().items():
        source = SourceFile(path, text)
        file_settings = settings.for_file(path)
        by_rules = FileSettings.for_rules(file_settings.rules, file_settings.codes,
                                          options=file_settings.options)
        assert certainly_clean(source, file_settings) == certainly_clean(source, by_rules), path
        if certainly_clean(source, file_settings):
            assert lint_source(source, file_settings, prefilter=False).diagnostics == [], path


def test_screen_needs_the_file_to_parse() -> None:
    settings = Settings().for_file("x.py")
    assert certainly_clean(SourceFile("x.py", "import os\nprint(os.sep)\n"), settings)
    assert not certainly_clean(SourceFile("x.py", "import os\nprint(os.sep\n"), settings)
    # TL002 needs the noqa comments read
    unused = Settings(select=("TL002",)).for_file("x.py")
    assert not certainly_clean(SourceFile("x.py", "x = 1  # noqa: TL101\n"), unused)


def test_one_file_check_of_a_clean_file_never_imports_libcst(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\n\n\ndef f(x):\n    return torch.relu(x)\n")
    flagged = tmp_path / "flagged.py"
    flagged.write_text("import torch\nx = torch.autograd.Variable(torch.ones(3))\n")
    probe = ("import sys, runpy\nsys.argv = ['torchlint', 'check', '--no-cache', sys.argv[1]]\n"
             "try:\n    runpy.run_module('torchlint', run_name='__main__')\n"
             "except SystemExit as exit:\n    code = exit.code\n"
             "print('libcst' in sys.modules, code)\n")
    for path, expected in ((clean, "False 0"), (flagged, "True 1")):
        result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                                text=True, cwd=ROOT, timeout=300)
        assert result.stdout.strip().splitlines()[-1] == expected, result.stderr
    version = subprocess.run([sys.executable, "-c", "import sys, runpy\n"
                              "sys.argv = ['torchlint', '--version']\ntry:\n"
                              "    runpy.run_module('torchlint', run_name='__main__')\n"
                              "except SystemExit:\n    pass\nprint('libcst' in sys.modules)\n"],
                             capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert version.stdout.strip().splitlines()[-1] == "False", version.stderr


def test_one_file_check_imports_only_the_rules_that_can_fire(tmp_path: Path) -> None:
    # the preview rules counted for the summary's hint are narrowed like the default ones
    flagged = tmp_path / "flagged.py"
    flagged.write_text("import torch\nx = torch.autograd.Variable(torch.ones(3))\n")
    probe = ("import sys, runpy\nsys.argv = ['torchlint', 'check', '--no-cache', sys.argv[1]]\n"
             "try:\n    runpy.run_module('torchlint', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m.rsplit('.', 1)[-1][:5] for m in sys.modules\n"
             "             if m.startswith('torchlint.rules.') and '.tl' in m))\n")
    result = subprocess.run([sys.executable, "-c", probe, str(flagged)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    # TL704 fires; the rules that pass the text's cheap patterns run too (the file is
    # parsed anyway); none of the other eighty-odd rule modules is imported
    loaded = result.stdout.strip().splitlines()[-1]
    assert "'tl704'" in loaded and loaded.count("'tl") <= 4, (loaded, result.stderr)


def test_a_file_only_a_counted_preview_rule_could_flag_is_not_parsed() -> None:
    # TL206 is a preview rule: with preview off it only counts for the summary's hint
    source = SourceFile("x.py", "import torch\nx = torch.sqrt(torch.tensor(2.0))\n")
    assert certainly_clean(source, Settings().for_file("x.py"))
    assert not certainly_clean(source, Settings(preview=True).for_file("x.py"))


def test_a_check_that_rules_out_preview_shapes_says_so_in_its_data() -> None:
    from torchlint.engine.triage import check, from_data, rules_out_preview_shapes

    marked = check("torchlint.rules.parallel.screens:may_flag_tl801", preview_shapes=True)
    assert from_data(marked.data()) == marked and rules_out_preview_shapes(marked)
    assert rules_out_preview_shapes(all_rules()["TL801"].requires)  # type: ignore[arg-type]
    # the others are not asked again once a file is parsed
    assert [code for code, rule in all_rules().items() if rule.requires is not None
            and rules_out_preview_shapes(rule.requires)] == ["TL801"]


def test_a_file_with_only_preview_shapes_of_a_default_rule_is_not_parsed() -> None:
    # TL801 reports a DataParallel the file never trains as a preview shape
    text = "import torch.nn as nn\nmodel = nn.DataParallel(model).eval()\nprint(model(x))\n"
    source = SourceFile("infer.py", text)
    assert screen(source, Settings().for_file("infer.py")) == frozenset()
    assert screen(source, Settings(preview=True).for_file("infer.py")) == {"TL801"}
    # parsed for another rule, the file is linted for them too: the hint counts them
    parsed = SourceFile("infer.py", text + "import torch\nx = torch.FloatTensor(3)\n")
    assert {"TL705", "TL801"} <= screen(parsed, Settings().for_file("infer.py"))  # type: ignore[operator]


def test_a_star_import_of_the_project_binds_its_names_for_the_screen(tmp_path: Path) -> None:
    # the names come from a module of the project, spelled nowhere in the file
    (tmp_path / "model.py").write_text("import torch\nfrom torch.autograd import Variable\n")
    train = tmp_path / "train.py"
    train.write_text("from model import *\n\nx = Variable(torch.ones(3))\n")
    assert star_imported(train.read_text())
    learned: list[Dependency] = []
    codes = screen(SourceFile.read(train), Settings(root=str(tmp_path)).for_file(str(train)),
                   learned)
    assert codes is not None and "TL704" in codes
    assert [d.path for d in learned] == [str(tmp_path / "model.py")]  # redone once it changes
    # without project knowledge the rules bind nothing from it, nor does the screen
    alone = replace(Settings(root=str(tmp_path)).for_file(str(train)), project=None)
    assert screen(SourceFile.read(train), alone) == frozenset()
    assert lint_source(SourceFile.read(train), alone, prefilter=False).diagnostics == []
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache",
                             str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert "train.py:3:5: TL704" in result.stdout, result.stdout + result.stderr


def test_a_star_import_binds_names_for_the_rules_only_with_project_knowledge() -> None:
    text = "from .layers import *\n__all__ = ['Net']\n"
    assert star_import_binds(text, object()) and not star_import_binds(text, None)
    assert not star_import_binds("import torch\nx = a * b\n", object())


@pytest.mark.parametrize("files", [
    # a function of the project: no rule's name
    {"utils.py": "def helper(n):\n    return n\n",
     "train.py": "from utils import *\nimport torch\nx = helper(torch.ones(3))\n"},
    # another library's module: the rules bind nothing from it (FileContext follows only
    # the project's own modules), so FloatTensor here is no torch constructor to them
    {"train.py": "from torch import *\nx = FloatTensor(3)\n"},
    # a project module's private name is not exported
    {"utils.py": "import torch\n_make = torch.FloatTensor\n",
     "train.py": "from utils import *\nx = _make(3)\n"},
])
def test_a_star_import_that_binds_no_rule_name_leaves_the_file_clean(
        tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    train = tmp_path / "train.py"
    assert star_imported(train.read_text())
    settings = Settings(root=str(tmp_path), select=("ALL",), preview=True)
    source = SourceFile.read(train)
    assert screen(source, settings.for_file(str(train))) == frozenset()
    assert lint_source(source, settings.for_file(str(train)), prefilter=False
                       ).diagnostics == []


def test_a_star_import_stands_in_for_the_packages_of_names_the_file_never_spells(
        tmp_path: Path) -> None:
    """The rules ask whether the file imports from torch, which a star import of a module
    importing torch makes true, whatever names the file spells."""
    (tmp_path / "utils.py").write_text("import torch\n\ndef build():\n"
                                       "    return torch.nn.Linear(2, 2)\n")
    main = tmp_path / "main.py"
    for body in ("model = build()\nmodel.weight.require_grad = False\n",
                 "def freeze(m):\n    m.weight.require_grad = False\n"):
        main.write_text("from utils import *\n" + body)
        settings = Settings(root=str(tmp_path), select=("TL212",)).for_file(str(main))
        source = SourceFile.read(main)
        assert [d.code for d in lint_source(source, settings, prefilter=False).diagnostics
                ] == ["TL212"], body
        assert screen(source, settings) == {"TL212"}, body


def test_a_package_init_re_exporting_its_modules_parses_none_of_them(tmp_path: Path) -> None:
    """Which packages a star import may bind names from is read from the modules' text."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "layers.py").write_text("import torch\nfrom .more import *\n")
    (package / "more.py").write_text("import numpy as np, torchvision.models\n")
    init = package / "__init__.py"
    init.write_text("from .layers import *\n")
    view = Project([str(tmp_path)]).for_file(str(init))
    assert view.star_module("layers", 1) == "pkg.layers"
    assert view.star_packages("pkg.layers") == {"pkg", "torch", "numpy", "torchvision"}
    assert view.star_module("numpy", 0) is None  # another library's: binds nothing
    assert not view.project._derived  # no module summarised


def test_stand_in_imports_let_a_check_rule_nothing_out(tmp_path: Path) -> None:
    """A screening check may read import statements otherwise than the rules read a star
    import: with stand-ins, every check holds (TL107's would rule this test file out)."""
    (tmp_path / "layers.py").write_text("import torch.nn as nn\n")
    path = tmp_path / "test_net.py"
    path.write_text("from layers import *\n\nclass Net(nn.Module):\n"
                    "    def forward(self, x):\n        return x\n\n"
                    "def run(model, x):\n    return model.forward(x)\n")
    settings = Settings(select=("TL107",), root=str(tmp_path)).for_file(str(path))
    assert screen(SourceFile.read(path), settings) == {"TL107"}


def test_a_star_import_that_binds_nothing_the_file_reads_is_screened(tmp_path: Path) -> None:
    (tmp_path / "layers.py").write_text("import torch\nrange = torch.range\n")
    init = tmp_path / "__init__.py"
    init.write_text("from .layers import *\n__all__ = ['range']\n")
    assert screen(SourceFile.read(init), Settings(root=str(tmp_path)).for_file(str(init))
                  ) == frozenset()


def test_the_screen_tells_checks_whether_the_file_is_test_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TL107 is silent in test code: its check rules a test file out by its path (folders
    count from the run's directory)."""
    monkeypatch.chdir(tmp_path)
    text = textwrap.dedent("""
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x

        def run(model, x):
            return model.forward(x)
        """)
    settings = Settings(select=("TL107",), root=str(tmp_path))
    for name, flagged in (("net.py", True), ("test_net.py", False),
                          ("tests/helpers.py", False)):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        source = SourceFile(str(path), text)
        codes = screen(source, settings.for_file(str(path)))
        assert (codes == {"TL107"}) is flagged, (name, codes)
        found = lint_source(source, settings.for_file(str(path)), prefilter=False).diagnostics
        assert bool(found) is flagged, name


def test_the_screening_checks_of_triggers_can_be_loaded_before_workers_fork(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from torchlint.engine import triage as triage_module

    target = "torchlint.rules.tensors.size_screens"
    monkeypatch.delitem(sys.modules, target, raising=False)
    triage_module._check_function.cache_clear()
    trigger = triage_module.all_of(triage_module.imports("torch"),
                                   triage_module.check(f"{target}:may_flag_tl510"))
    triage_module.load_checks([trigger])
    assert target in sys.modules
