#!/usr/bin/env python3
"""How much of the real bugs torchlint catches: score the rules against instances hunted
in real code without torchlint, per rule and per tier, and list every true finding a
change makes vanish.

    python benchmarks/recall.py --corpus DIR                        # the per-rule table
    python benchmarks/recall.py --corpus DIR --write-results        # also refresh the files
    python benchmarks/recall.py --corpus HELD_OUT --instances FILE  # score other code

The instances (``benchmarks/recall/instances.tsv``) were found by the ``ast`` scans of
``benchmarks/recall/hunters.py``, which over-approximate each rule's bug, and every
candidate was read and judged: ``true`` (an instance of the rule's bug), ``debatable``
(the bug's shape where it does little harm, e.g. a one-off setup line) or ``false``, with
a one-line reason. Only ``true`` instances are scored; the rest are kept so the next hunt
need not judge them again.

Each repository of DIR named by an instance is linted twice, as a user would run
torchlint: the **default** run (``torchlint check``, plus ``--extend-select`` of the
opt-in rules being scored, which a user must name) and the **preview** run (the same with
``--preview``, also naming the preview rules that are not on by default). An instance
spans lines ``line``..``end_line`` of its file (a notebook cell is ``path#cellN``): the
statement it is in, or the whole function or loop for a bug of a function (a missing
``no_grad``/``eval()``/``zero_grad()``). It is **caught** by a run when that run reports
the instance's rule on a line of that span, in that file.

Per rule the table gives the true instances, how many the default run caught, how many
only the preview run caught, and how many neither did. Recall is caught over instances.

The **vanished** list: every true instance, and every finding judged ``true`` in the
precision verdicts (``benchmarks/precision/verdicts.tsv``; its exact line), is recorded in
``benchmarks/recall/caught.tsv`` with the runs that caught it at the last
``--write-results``. A later run lists each one a run caught then and misses now, so a
change that silences real bugs says so. ``--write-results`` rewrites the snapshot and
``benchmarks/recall/results.tsv`` (the README's recall column: ``python -m torchlint.docs
README.md``); rows of repositories not linted this time are kept. With ``--instances
FILE`` (held-out code) the results and the snapshot go beside FILE instead
(``FILE.results.tsv``, ``FILE.caught.tsv``), and no precision verdicts are tracked.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from corpus_lint import Finding, lint

HERE = Path(__file__).resolve().parent / "recall"
INSTANCES = HERE / "instances.tsv"
RESULTS = HERE / "results.tsv"
CAUGHT = HERE / "caught.tsv"
PRECISION_VERDICTS = HERE.parent / "precision" / "verdicts.tsv"
INSTANCE_FIELDS = ("repo", "path", "line", "end_line", "code", "verdict", "reason", "source")
RUNS = ("default", "preview")


@dataclass(frozen=True)
class Item:
    """Something real a run should report: a hunted instance or a true precision verdict."""

    kind: str  # "hunted" or "sampled"
    repo: str
    path: str
    line: int
    end_line: int
    code: str

    @property
    def key(self) -> tuple[str, str, str, int, str]:
        return (self.kind, self.repo, self.path, self.line, self.code)


def read_instances(path: Path) -> list[dict[str, str]]:
    """The judged candidates: rows of INSTANCE_FIELDS (lines starting with # are notes)."""
    with path.open(encoding="utf-8", newline="") as handle:
        lines = [line for line in handle if line.strip() and not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))
    for row in rows:
        if row["verdict"] not in ("true", "false", "debatable"):
            raise SystemExit(f"{path}: bad verdict {row['verdict']!r} for {row}")
    return rows


def hunted_codes(path: Path) -> set[str]:
    """The rules that were hunted: those with a judged candidate, and those a note line
    (``# TLxxx: ...``) names, such as a rule whose hunter found no candidate."""
    text = path.read_text(encoding="utf-8")
    noted = re.findall(r"^# (TL\d{3}):", text, re.M)
    return set(noted) | {row["code"] for row in read_instances(path)}


def hunted_items(rows: Iterable[dict[str, str]]) -> list[Item]:
    return [Item("hunted", r["repo"], r["path"], int(r["line"]),
                 max(int(r["line"]), int(r["end_line"] or r["line"])), r["code"])
            for r in rows if r["verdict"] == "true"]


def sampled_items(path: Path) -> list[Item]:
    """The findings judged true in the precision verdicts, each on its own line."""
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return [Item("sampled", r["repo"], r["path"], int(r["line"]), int(r["line"]),
                     r["code"]) for r in csv.DictReader(handle, delimiter="\t")
                if r["verdict"].strip() == "true"]


class Index:
    """The lines each (repo, path, code) is reported on by one run."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        lines: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for finding in findings:
            lines[(finding.repo, finding.path, finding.code)].append(finding.line)
        self.lines = {key: sorted(found) for key, found in lines.items()}

    def catches(self, item: Item) -> bool:
        """A finding of the item's rule on a line of the item's span, in its file."""
        found = self.lines.get((item.repo, item.path, item.code), [])
        at = bisect_left(found, item.line)
        return at < len(found) and found[at] <= item.end_line


def run_options(items: Iterable[Item], opt_in: set[str], preview_only: set[str]
                ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The options of the default run and of the preview run: the default selection plus
    the ``opt_in`` rules that have items, and with ``--preview`` also the ``preview_only``
    rules (preview rules not on by default) that have items: a user names those too."""
    codes = {item.code for item in items}
    named_opt_in = sorted(codes & opt_in)
    named = sorted(codes & (opt_in | preview_only))
    default = ("--extend-select", ",".join(named_opt_in)) if named_opt_in else ()
    return default, (("--extend-select", ",".join(named)) if named else ()) + ("--preview",)


def caught_by(items: Iterable[Item], runs: dict[str, Index]) -> dict[Item, dict[str, bool]]:
    return {item: {run: index.catches(item) for run, index in runs.items()} for item in items}


@dataclass
class RuleRecall:
    code: str
    tier: str
    instances: int = 0
    default: int = 0
    preview_only: int = 0

    @property
    def missed(self) -> int:
        return self.instances - self.default - self.preview_only


def score(caught: dict[Item, dict[str, bool]], tiers: dict[str, str],
          hunted: Iterable[str] = ()) -> list[RuleRecall]:
    """Per rule: its true instances and the runs that caught them; a hunted rule without
    a true instance gets a row of zeros."""
    rules = {code: RuleRecall(code, tiers.get(code, "absent")) for code in hunted}
    for item, runs in caught.items():
        if item.kind != "hunted":
            continue
        rule = rules.setdefault(item.code, RuleRecall(item.code, tiers.get(item.code, "absent")))
        rule.instances += 1
        if runs["default"]:
            rule.default += 1
        elif runs["preview"]:
            rule.preview_only += 1
    return [rules[code] for code in sorted(rules)]


def read_snapshot(path: Path) -> dict[tuple, dict[str, bool]]:
    """caught.tsv: per item key, which runs caught it."""
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        return {(r["kind"], r["repo"], r["path"], int(r["line"]), r["code"]):
                {run: r[run] == "1" for run in RUNS}
                for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)}


def vanished(before: dict[tuple, dict[str, bool]], now: dict[Item, dict[str, bool]],
             repos: set[str]) -> list[tuple[tuple, str]]:
    """(item key, run) for each item of a linted repository that the run caught before and
    does not catch now (an item judged no longer true is not listed)."""
    current = {item.key: runs for item, runs in now.items()}
    lost = []
    for key, runs in sorted(before.items()):
        if key[1] not in repos or key not in current:
            continue
        lost += [(key, run) for run in RUNS if runs[run] and not current[key][run]]
    return lost


def write_snapshot(path: Path, now: dict[Item, dict[str, bool]], repos: set[str]) -> None:
    rows = {key: runs for key, runs in read_snapshot(path).items() if key[1] not in repos}
    rows.update({item.key: runs for item, runs in now.items()})
    lines = ["kind\trepo\tpath\tline\tcode\tdefault\tpreview"]
    lines += ["\t".join([*map(str, key), *("1" if runs[r] else "0" for r in RUNS)])
              for key, runs in sorted(rows.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_results(path: Path, rules: list[RuleRecall], repositories: int) -> None:
    """The per-rule table as TSV: code, tier, instances, default, preview_only, missed."""
    lines = [f"# measured on {repositories} repositories: true instances of "
             "benchmarks/recall/instances.tsv caught by the default run and only by --preview",
             "code\ttier\tinstances\tdefault\tpreview_only\tmissed"]
    lines += [f"{r.code}\t{r.tier}\t{r.instances}\t{r.default}\t{r.preview_only}\t{r.missed}"
              for r in rules]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="folder holding one folder per repository the instances name")
    parser.add_argument("--instances", type=Path, default=INSTANCES)
    parser.add_argument("--verdicts", type=Path, default=None,
                        help="precision verdicts whose true findings must not vanish "
                             "(default: benchmarks/precision/verdicts.tsv with the "
                             "default instances, none with --instances)")
    parser.add_argument("--repos", default="", help="comma-separated names (default: all)")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--caught", type=Path, default=None,
                        help="the snapshot to diff against and to write (default: "
                             "benchmarks/recall/caught.tsv, or FILE.caught.tsv beside "
                             "--instances FILE)")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite benchmarks/recall/results.tsv and the snapshot")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--findings", type=Path,
                        help="save both runs' findings here (JSON); with --reuse, read them "
                             "from there instead of linting (to re-score after judging)")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()

    from torchlint.docs import tier
    from torchlint.registry import all_rules

    rules = all_rules()
    held_out = args.instances.resolve() != INSTANCES
    caught_file = args.caught or (args.instances.with_suffix(".caught.tsv") if held_out
                                  else CAUGHT)
    tiers = {code: tier(rule) for code, rule in rules.items()}
    verdicts = args.verdicts or (None if held_out else PRECISION_VERDICTS)
    items = hunted_items(read_instances(args.instances))
    if verdicts is not None:
        items += sampled_items(verdicts)
    wanted = {r for r in args.repos.split(",") if r}
    repos = sorted({i.repo for i in items if (not wanted or i.repo in wanted)
                    and (args.corpus / i.repo).is_dir()})
    if not repos:
        raise SystemExit(f"no repository named in {args.instances} found under {args.corpus}")
    items = [i for i in items if i.repo in repos]
    default_options, preview_options = run_options(
        items, {c for c, r in rules.items() if not r.default and not r.preview},
        {c for c, r in rules.items() if r.preview and not r.default})
    found: dict[str, list[Finding]] = {run: [] for run in RUNS}
    errors: list[str] = []
    if args.reuse and args.findings:
        saved = json.loads(args.findings.read_text(encoding="utf-8"))
        found = {run: [Finding(**f) for f in saved[run] if f["repo"] in repos] for run in RUNS}
        repos = [r for r in repos if r in saved["repositories"]]
    for repo in [] if args.reuse and args.findings else repos:
        for run, options in (("default", default_options), ("preview", preview_options)):
            findings, failed = lint(args.corpus / repo, repo, args.jobs, options)
            found[run] += findings
            errors += [f"{repo} ({run}): {line}" for line in failed]
        print(f"{repo}: {len(found['default'])} / {len(found['preview'])} findings so far",
              file=sys.stderr)
    if args.findings and not args.reuse:
        args.findings.write_text(json.dumps(
            {"repositories": repos, **{run: [f.__dict__ for f in found[run]] for run in RUNS}}),
            encoding="utf-8")
    items = [i for i in items if i.repo in repos]
    now = caught_by(items, {run: Index(found[run]) for run in RUNS})
    table = score(now, tiers, hunted_codes(args.instances))
    lost = vanished(read_snapshot(caught_file), now, set(repos))
    total = sum(r.instances for r in table)
    default = sum(r.default for r in table)
    preview = default + sum(r.preview_only for r in table)
    on = [r for r in table if r.code in rules and rules[r.code].default]
    summary = {"repositories": repos, "errors": errors, "instances": total,
               "default_recall": default / total if total else None,
               "preview_recall": preview / total if total else None,
               "rules": [{**r.__dict__, "missed": r.missed} for r in table],
               "vanished": [{"item": list(key), "run": run} for key, run in lost]}
    if args.write_results:
        write_results(args.instances.with_suffix(".results.tsv") if held_out else RESULTS,
                      table, len(repos))
        write_snapshot(caught_file, now, set(repos))
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{len(repos)} repositories, {total} true instances, {len(errors)} error line(s)")
    for line in errors[:20]:
        print(f"  error: {line}")
    print(f"{'code':6} {'tier':28} {'inst.':>5} {'default':>7} {'preview':>7} {'missed':>6} "
          f"{'recall':>6} {'+preview':>8}")
    for r in table:
        print(f"{r.code:6} {r.tier:28} {r.instances:5} {r.default:7} {r.preview_only:7} "
              f"{r.missed:6} {percent(r.default, r.instances):>6} "
              f"{percent(r.default + r.preview_only, r.instances):>8}")
    print(f"default run: {percent(default, total)} of true instances caught ({default}/{total});"
          f" with --preview: {percent(preview, total)} ({preview}/{total})")
    if on:
        caught_on = sum(r.default for r in on)
        print(f"rules on by default (once stable, for preview ones): "
              f"{percent(caught_on, sum(r.instances for r in on))} caught by the default run")
    print(f"{len(lost)} true finding(s) vanished since the snapshot ({caught_file})")
    for (kind, repo, path, line, code), run in lost:
        print(f"  vanished from the {run} run: {code} {repo}/{path}:{line} ({kind})")
    return 1 if lost and not args.write_results else 0


if __name__ == "__main__":
    sys.exit(main())
