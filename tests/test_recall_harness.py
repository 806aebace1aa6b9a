"""The recall harness (benchmarks/recall.py) on tiny synthetic data: how a finding
matches a hunted instance, how the per-rule table is counted, how a vanished true finding
is found, and what the hunters (benchmarks/recall/hunters.py) list."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS / "recall"))

import hunters  # noqa: E402
import recall  # noqa: E402
from corpus_lint import Finding  # noqa: E402
from recall import Index, Item  # noqa: E402


def finding(path: str, line: int, code: str, repo: str = "r") -> Finding:
    return Finding(repo, path, line, 1, code, "message")


def test_an_instance_is_caught_on_any_line_of_its_span_in_its_file_for_its_rule() -> None:
    item = Item("hunted", "r", "a.py", 10, 12, "TL501")
    assert Index([finding("a.py", 10, "TL501")]).catches(item)
    assert Index([finding("a.py", 12, "TL501")]).catches(item)
    assert Index([finding("a.py", 3, "TL501"), finding("a.py", 11, "TL501")]).catches(item)
    assert not Index([finding("a.py", 9, "TL501"), finding("a.py", 13, "TL501")]).catches(item)
    assert not Index([finding("a.py", 11, "TL502")]).catches(item)
    assert not Index([finding("b.py", 11, "TL501")]).catches(item)
    assert not Index([finding("a.py", 11, "TL501", repo="s")]).catches(item)


def test_a_notebook_instance_matches_only_its_cell() -> None:
    item = Item("hunted", "r", "n.ipynb#cell3", 2, 2, "TL405")
    assert Index([finding("n.ipynb#cell3", 2, "TL405")]).catches(item)
    assert not Index([finding("n.ipynb#cell4", 2, "TL405")]).catches(item)


def test_score_counts_default_catches_preview_only_catches_and_misses() -> None:
    items = [Item("hunted", "r", "a.py", n, n, "TL301") for n in (1, 2, 3, 4)]
    items.append(Item("sampled", "r", "a.py", 9, 9, "TL301"))  # not an instance: not scored
    runs = {"default": Index([finding("a.py", 1, "TL301")]),
            "preview": Index([finding("a.py", n, "TL301") for n in (1, 2, 3, 9)])}
    [rule] = recall.score(recall.caught_by(items, runs), {"TL301": "preview (default)"})
    assert (rule.code, rule.tier, rule.instances) == ("TL301", "preview (default)", 4)
    assert (rule.default, rule.preview_only, rule.missed) == (1, 2, 1)


def test_a_rule_the_registry_lacks_is_scored_as_absent_and_all_missed() -> None:
    items = [Item("hunted", "r", "a.py", 5, 6, "TL999")]
    runs = {"default": Index([]), "preview": Index([])}
    [rule] = recall.score(recall.caught_by(items, runs), {})
    assert (rule.tier, rule.instances, rule.missed) == ("absent", 1, 1)


def test_vanished_lists_what_a_run_caught_before_and_misses_now(tmp_path: Path) -> None:
    kept = Item("hunted", "r", "a.py", 1, 1, "TL101")
    lost = Item("sampled", "r", "a.py", 7, 7, "TL104")
    other_repo = Item("hunted", "s", "b.py", 3, 3, "TL101")
    snapshot = tmp_path / "caught.tsv"
    before = {kept: {"default": True, "preview": True},
              lost: {"default": True, "preview": True},
              other_repo: {"default": True, "preview": True}}
    recall.write_snapshot(snapshot, before, {"r", "s"})
    now = {kept: {"default": True, "preview": True},
           lost: {"default": False, "preview": True}}
    assert recall.vanished(recall.read_snapshot(snapshot), now, {"r"}) == [
        (lost.key, "default")]
    # a repository not linted this time keeps its rows when the snapshot is rewritten
    recall.write_snapshot(snapshot, now, {"r"})
    rows = recall.read_snapshot(snapshot)
    assert rows[other_repo.key] == {"default": True, "preview": True}
    assert rows[lost.key] == {"default": False, "preview": True}


def test_instances_and_results_files_round_trip(tmp_path: Path) -> None:
    instances = tmp_path / "instances.tsv"
    instances.write_text(
        "# TL501: 3 candidates, all judged\n"
        "repo\tpath\tline\tend_line\tcode\tverdict\treason\tsource\n"
        "r\ta.py\t4\t5\tTL501\ttrue\tmerges permuted dims\tx.permute(0, 2, 1).view(b, -1)\n"
        "r\ta.py\t9\t9\tTL501\tfalse\tview keeps the last dim\ty.t().view(\"a\")\n"
        "r\tn.ipynb#cell2\t1\t1\tTL501\tdebatable\tnever run\tz.view(-1)\n", encoding="utf-8")
    rows = recall.read_instances(instances)
    assert [r["verdict"] for r in rows] == ["true", "false", "debatable"]
    assert recall.hunted_items(rows) == [Item("hunted", "r", "a.py", 4, 5, "TL501")]
    results = tmp_path / "results.tsv"
    recall.write_results(results, [recall.RuleRecall("TL501", "default", 4, 2, 1)], 3)
    from torchlint.docs import read_recall

    assert read_recall(results) == {"TL501": (4, 2, 1)}
    assert results.read_text().splitlines()[2] == "TL501\tdefault\t4\t2\t1\t1"


def test_a_bad_verdict_is_refused(tmp_path: Path) -> None:
    instances = tmp_path / "instances.tsv"
    instances.write_text("repo\tpath\tline\tend_line\tcode\tverdict\treason\tsource\n"
                         "r\ta.py\t4\t5\tTL501\tyes\t-\t-\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        recall.read_instances(instances)


def test_sampled_items_are_the_true_precision_verdicts(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts.tsv"
    verdicts.write_text("repo\tpath\tline\tcode\tverdict\treason\n"
                        "r\ta.py\t3\tTL301\ttrue\tin a loop\n"
                        "r\ta.py\t8\tTL301\tdebatable\tonce\n", encoding="utf-8")
    assert recall.sampled_items(verdicts) == [Item("sampled", "r", "a.py", 3, 3, "TL301")]


def hunt(code: str, source: str) -> list[int]:
    tree = ast.parse(source)
    parents = hunters.parents_of(tree)
    aliases = hunters.import_aliases([tree])
    return [hunters.span(node, parents)[0]
            for node in hunters.HUNTERS[code](tree, parents, aliases)]


def test_hunters_resolve_names_through_imports() -> None:
    source = ("import torch.nn.functional as Fn\nimport mylib as F\n"
              "a = Fn.dropout(x, 0.5)\nb = F.dropout(x, 0.5)\nc = Fn.dropout(x, training=t)\n")
    assert hunt("TL405", source) == [3]


def test_the_view_hunter_follows_a_name_bound_to_a_permute() -> None:
    source = ("def f(x):\n    b, c, h, w = x.shape\n    y = x.permute(0, 2, 3, 1)\n"
              "    z = y.view(b, h * w, c)\n    y = y.contiguous()\n    return y.view(b, -1)\n")
    assert hunt("TL501", source) == [4]


def test_a_function_hunter_spans_the_whole_function() -> None:
    source = ("def evaluate(model, loader):\n    for x in loader:\n        model(x)\n"
              "\n\n@torch.no_grad()\ndef validate(model, loader):\n    model(loader)\n")
    tree = ast.parse(source)
    parents = hunters.parents_of(tree)
    spans = [hunters.span(n, parents) for n in hunters.HUNTERS["TL401"](
        tree, parents, hunters.import_aliases([tree]))]
    assert spans == [(1, 3)]


def test_notebook_cells_are_read_with_magics_blanked(tmp_path: Path) -> None:
    notebook = {"cells": [
        {"cell_type": "markdown", "source": ["# title"]},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "import torch\n",
                                         "!pip install x\n", "y = torch.zeros(3).cuda()"]},
        {"cell_type": "code", "source": ["%%bash\n", "ls"]}]}
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "n.ipynb").write_text(json.dumps(notebook))
    assert list(hunters.iter_sources(tmp_path, "repo")) == [
        ("n.ipynb#cell2", "pass\nimport torch\npass\ny = torch.zeros(3).cuda()\n")]
    [candidate] = hunters.hunt(tmp_path, ["repo"], {"TL301"})
    assert (candidate.path, candidate.line, candidate.source) == (
        "n.ipynb#cell2", 4, "y = torch.zeros(3).cuda()")


def test_the_sample_is_fixed_and_stable() -> None:
    made = [hunters.Candidate("TL301", "r", "a.py", n, n, "") for n in range(100)]
    first = hunters.sample(made, 10, "seed")
    assert len(first) == 10 and first == hunters.sample(list(reversed(made)), 10, "seed")
    assert set(hunters.sample(made, 5, "seed")) <= set(first)
    assert hunters.sample(made[:3], 10, "seed") == made[:3]


def test_each_run_names_the_rules_a_user_must_name() -> None:
    items = [Item("hunted", "r", "a.py", 1, 1, code)
             for code in ("TL101", "TL306", "TL307", "TL301", "TL999")]
    opt_in, preview_only = {"TL306", "TL504"}, {"TL307", "TL210"}
    default, preview = recall.run_options(items, opt_in, preview_only)
    assert default == ("--extend-select", "TL306")
    assert preview == ("--extend-select", "TL306,TL307", "--preview")
    assert recall.run_options(items[:1], opt_in, preview_only) == ((), ("--preview",))


def test_a_hunted_rule_without_a_true_instance_gets_a_row_of_zeros(tmp_path: Path) -> None:
    instances = tmp_path / "instances.tsv"
    instances.write_text("# TL222: 0 candidates, 0 judged\n"
                         "repo\tpath\tline\tend_line\tcode\tverdict\treason\tsource\n"
                         "r\ta.py\t4\t4\tTL108\tfalse\treturns the Parameter itself\tp\n",
                         encoding="utf-8")
    assert recall.hunted_codes(instances) == {"TL108", "TL222"}
    table = recall.score({}, {"TL108": "default"}, recall.hunted_codes(instances))
    assert [(r.code, r.tier, r.instances, r.missed) for r in table] == [
        ("TL108", "default", 0, 0), ("TL222", "absent", 0, 0)]
