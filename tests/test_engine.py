"""Engine behaviour that no single rule owns."""

from __future__ import annotations

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def test_files_no_rule_can_fire_on_are_still_checked_for_syntax() -> None:
    rules = list(all_rules().values())
    broken = SourceFile("x.py", "def f(:\n    pass\n")
    result = lint_source(broken, FileSettings.for_rules(rules))
    assert [d.code for d in result.diagnostics] == ["TL001"]
    plain = SourceFile("y.py", "def f(a):\n    return a + 1\n")
    assert lint_source(plain, FileSettings.for_rules(rules)).diagnostics == []


def test_every_rule_declares_what_it_needs_to_see() -> None:
    """A rule without triggers runs on every file; each should say what it looks for."""
    missing = [code for code, rule in all_rules().items()
               if not rule.triggers and code not in ("TL001", "TL002")]
    assert not missing, f"rules without triggers: {missing}"


def _findings(result) -> list[tuple[int, int, str]]:
    return [(d.line, d.column, d.code) for d in result.diagnostics]


def test_prefilters_hide_no_finding_in_any_fixture() -> None:
    """Every rule's triggers and patterns pass every fixture, demo and doc example it flags."""
    from fixture_support import FIXTURES

    rules = [r for code, r in all_rules().items() if code not in ("TL001", "TL002")]
    codes = {r.code for r in rules}
    texts = {str(p): p.read_text(encoding="utf-8") for p in FIXTURES.rglob("*.py")
             if not p.name.endswith(".fixed.py")}
    for rule in rules:
        texts[f"{rule.code}-example.py"] = rule.doc_example("## Example")
    for path, text in texts.items():
        source = SourceFile(path, text)
        everything = lint_source(source, FileSettings.for_rules(rules, codes), prefilter=False)
        if not everything.parsed:
            continue
        filtered = lint_source(source, FileSettings.for_rules(rules, codes))
        assert _findings(filtered) == _findings(everything), path


def test_patterns_narrow_triggers() -> None:
    """A pattern is searched only after a trigger matched, and all patterns must match."""
    from torchlint.engine.prefilter import could_fire
    from torchlint.rule import Rule

    class Both(Rule):
        code, name, message = "TL999", "both", "m"
        triggers = ("load",)
        patterns = (r"\bload\b", r"^import torch")

    assert could_fire(Both, "import torch\ntorch.load(f)\n")
    assert not could_fire(Both, "import torch\nloader = 1\n")  # trigger only
    assert not could_fire(Both, "torch.load(f)\n")  # one pattern only
    assert not could_fire(Both, "import torch\n")  # no trigger


def test_the_quick_syntax_check_agrees_with_the_parser(capfd) -> None:
    """Files no rule can fire on get CPython's check only: code that parses but does not
    compile (a module-level return) is still fine, and compiler warnings stay silent."""
    rules = list(all_rules().values())
    for text in ("return 1\n", "x = 1\nprint(x is 1)\n", "def f():\n    nonlocal y\n",
                 "s = '\\d'\n"):
        assert lint_source(SourceFile("q.py", text), FileSettings.for_rules(rules)).diagnostics == [], text
    assert capfd.readouterr().err == ""
    broken = lint_source(SourceFile("b.py", "x = (1,\n"), FileSettings.for_rules(rules)).diagnostics
    assert [d.code for d in broken] == ["TL001"]


def test_positions_from_single_statements_equal_those_from_the_whole_module(monkeypatch) -> None:
    """Locating nodes by generating only their top-level statements gives exactly the
    offsets (findings and fix edits) that generating the whole module gives."""
    from fixture_support import FIXTURES

    from torchlint.engine import lint as engine

    rules = [r for code, r in all_rules().items() if code not in ("TL001", "TL002")]
    codes = {r.code for r in rules}
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    texts.append("import torch\nx = torch.zeros(3).cuda()\nx = torch.zeros(3).cuda()\n")

    def run() -> list[tuple[object, ...]]:
        found = []
        for text in texts:
            for d in lint_source(SourceFile("f.py", text), FileSettings.for_rules(rules, codes)).diagnostics:
                edits = d.fix.edits if d.fix is not None else ()
                found.append((d.line, d.column, d.end_line, d.end_column, d.code, edits))
        return found

    by_statement = run()
    monkeypatch.setattr(engine, "_statement_hints", lambda reports, module: None)
    assert by_statement == run()
    assert len(by_statement) > 300


def test_a_preview_shape_of_a_default_rule_is_reported_only_in_preview() -> None:
    """``report(..., preview=True)``: dropped and counted when preview is off, kept when on."""
    import libcst as cst

    from torchlint.analysis.options import Options
    from torchlint.rule import Rule

    class OneOff(Rule):
        """## What it does
        Flags every call of `setup_once`, as a preview shape."""
        code = "TL999"
        name = "one-off"
        message = "one-off call"
        triggers = ("setup_once",)

        def visit_Call(self, node: cst.Call) -> None:
            self.report(node, preview=True)

    source = SourceFile("x.py", "setup_once()\nsetup_once()\n")
    quiet = lint_source(source, FileSettings.for_rules([OneOff]))
    assert quiet.diagnostics == [] and quiet.preview_only == 2
    loud_settings = FileSettings.for_rules([OneOff], options=Options(preview=True))
    loud = lint_source(source, loud_settings)
    assert [d.line for d in loud.diagnostics] == [1, 2] and loud.preview_only == 0


def test_a_noqa_for_a_preview_only_finding_is_not_reported_unused() -> None:
    """With preview off, a `# noqa: TL301` on a one-off CPU-then-GPU tensor (a preview shape of
    a default rule) still suppresses something: TL002 must not call it unused."""
    from torchlint.codes import UNUSED_NOQA

    rule = all_rules()["TL301"]
    text = "import torch\n\nx = torch.ones(3).cuda()  # noqa: TL301\n"
    settings = FileSettings.for_rules([rule], {"TL301", UNUSED_NOQA})
    result = lint_source(SourceFile("setup.py", text), settings)
    assert result.preview_only == 1
    assert [d.code for d in result.diagnostics] == []
    # a noqa on a line with no finding at all is still unused
    stale = text + "y = 1  # noqa: TL301\n"
    result = lint_source(SourceFile("setup.py", stale), settings)
    assert [d.code for d in result.diagnostics] == [UNUSED_NOQA]


def test_a_walked_tree_is_freed_as_soon_as_it_is_dropped() -> None:
    """The walk leaves no reference cycle holding the tree: a linted file's nodes are freed
    by reference counting, not by the next full garbage collection."""
    import gc

    import libcst as cst

    from torchlint.engine.walk import run_rules

    rules = [all_rules()[code] for code in ("TL101", "TL201", "TL402")]
    module = cst.parse_module("import torch\n\ndef f(x):\n    return torch.relu(x)\n")
    gc.collect()
    gc.disable()
    try:
        result = run_rules("x.py", module, rules)
        del result, module
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, cst.CSTNode)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []
