#!/usr/bin/env python3
"""How often torchlint is right on real code: lint real repositories, sample each rule's
findings, and score them against reviewed verdicts.

    python benchmarks/precision.py --corpus DIR               # the per-rule table
    python benchmarks/precision.py --corpus DIR --todo FILE   # sampled findings not yet judged

DIR holds one folder per repository of ``benchmarks/precision/corpus.tsv`` (a snapshot of
the listed commit, named like the first column); repositories missing from DIR are
skipped. Nothing of them is committed: the repository keeps only the verdicts.

Each repository is linted with ``torchlint check --select ALL --preview``. For every rule,
all findings are judged when there are at most ``--all-up-to`` (30) of them, otherwise a
fixed sample of ``--sample`` (25): the findings whose hash of (seed, repository, path,
line, code) is smallest, so the sample stays the same as long as the findings do, and a
new finding enters it only if it would have been drawn anyway.

Each repository is also linted with the default rules alone and no ``--preview``: what a
plain run shows. A default rule with preview shapes (a finding it makes only in preview
mode) is scored on both; the default-rule figure weights each default rule's precision, as
the default run shows it, by its number of findings there.

Verdicts live in ``benchmarks/precision/verdicts.tsv``: repository, path, line, code,
verdict (``true``, ``false`` or ``debatable``) and a one-line reason. Precision is
``true / judged``: a debatable finding counts against the rule. ``--todo`` writes each sampled
finding that has no verdict yet with the source around it, ready to be read and judged.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from corpus_lint import CORPUS, Finding, lint, read_corpus

HERE = Path(__file__).resolve().parent / "precision"
VERDICTS = HERE / "verdicts.tsv"
VERDICT_FIELDS = ("repo", "path", "line", "code", "verdict", "reason")


@dataclass
class RuleScore:
    code: str
    findings: int = 0
    sampled: list[Finding] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def judged(self) -> int:
        return sum(self.verdicts.values())

    @property
    def precision(self) -> float | None:
        return self.verdicts["true"] / self.judged if self.judged else None


def read_verdicts(path: Path = VERDICTS) -> dict[tuple[str, str, int, str], tuple[str, str]]:
    found: dict[tuple[str, str, int, str], tuple[str, str]] = {}
    if not path.exists():
        return found
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            verdict = row["verdict"].strip()
            if verdict not in ("true", "false", "debatable"):
                raise SystemExit(f"{path}: bad verdict {verdict!r} for {row}")
            found[(row["repo"], row["path"], int(row["line"]), row["code"])] = (
                verdict, row["reason"])
    return found


def sample(findings: list[Finding], size: int, all_up_to: int, seed: str) -> list[Finding]:
    if len(findings) <= all_up_to:
        return sorted(findings, key=lambda f: f.key)

    def rank(finding: Finding) -> str:
        return hashlib.sha256(f"{seed}\0{finding.key}".encode()).hexdigest()

    return sorted(sorted(findings, key=rank)[:size], key=lambda f: f.key)


def context(corpus: Path, finding: Finding, lines: int) -> str:
    name, _, cell = finding.path.partition("#cell")
    path = corpus / finding.repo / name
    try:
        if cell:
            from torchlint.notebook import Notebook

            text = Notebook.read(str(path)).cell_source(int(cell)) or ""
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
    except Exception:  # noqa: BLE001 - a listing aid only
        return "    (source not readable)"
    source = text.splitlines()
    start, end = max(0, finding.line - 1 - lines), min(len(source), finding.line + lines)
    return "\n".join(f"{'>' if n + 1 == finding.line else ' '}{n + 1:5}| {source[n]}"
                     for n in range(start, end))


def write_results(path: Path, rows: list[dict], repositories: int) -> None:
    """The per-rule table as TSV: code, findings, judged, true, false, debatable (of the
    ``--select ALL --preview`` run) and, for a default rule, findings, judged, true of the
    default run."""
    lines = [f"# measured on {repositories} repositories of benchmarks/precision/corpus.tsv;",
             "# the default_* columns: what the default run (no --preview) shows of a default "
             "rule",
             "code\tfindings\tjudged\ttrue\tfalse\tdebatable\tdefault_findings\t"
             "default_judged\tdefault_true"]
    for r in sorted(rows, key=lambda r: r["code"]):
        shown = r.get("default_run")
        extra = f"\t{shown['findings']}\t{shown['judged']}\t{shown['true']}" if shown else ""
        lines.append(f"{r['code']}\t{r['findings']}\t{r['judged']}\t{r['true']}\t"
                     f"{r['false']}\t{r['debatable']}{extra}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="folder holding one snapshot per repository of corpus.tsv")
    parser.add_argument("--repos", default="", help="comma-separated names (default: all)")
    parser.add_argument("--sample", type=int, default=25)
    parser.add_argument("--all-up-to", type=int, default=30)
    parser.add_argument("--seed", default="torchlint")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--todo", type=Path, help="write unjudged sampled findings here")
    parser.add_argument("--context", type=int, default=12, help="source lines around each")
    parser.add_argument("--findings", type=Path, help="save every finding here (JSON)")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.add_argument("--write-results", type=Path, metavar="TSV",
                        help="write the per-rule table here (benchmarks/precision/results.tsv "
                             "feeds the README's precision column: python -m torchlint.docs)")
    args = parser.parse_args()

    wanted = {r for r in args.repos.split(",") if r}
    repos = [r for r in read_corpus() if (not wanted or r["name"] in wanted)
             and (args.corpus / r["name"]).is_dir()]
    if not repos:
        raise SystemExit(f"no repository of {CORPUS} found under {args.corpus}")
    from torchlint.registry import all_rules

    rules = all_rules()
    default_codes = sorted(code for code, rule in rules.items()
                           if rule.default and not rule.preview)
    all_findings: list[Finding] = []
    default_findings: list[Finding] = []
    errors: list[str] = []
    for repo in repos:
        found, failed = lint(args.corpus / repo["name"], repo["name"], args.jobs)
        all_findings += found
        errors += [f"{repo['name']}: {line}" for line in failed]
        # what a plain run shows of the default rules (without their preview shapes)
        shown, failed = lint(args.corpus / repo["name"], repo["name"], args.jobs,
                             ("--select", ",".join(default_codes)))
        default_findings += shown
        errors += [f"{repo['name']} (default run): {line}" for line in failed]
        print(f"{repo['name']}: {len(found)} findings, {len(shown)} in the default run",
              file=sys.stderr)
    verdicts = read_verdicts(args.verdicts)

    todo: dict[tuple[str, str, int, str], Finding] = {}
    scores = score(all_findings, verdicts, args, todo)
    default_scores = score(default_findings, verdicts, args, todo)

    rows = []
    for code, rule_score in scores.items():
        rule = rules.get(code)
        tier = "preview" if rule is not None and rule.preview else (
            "default" if rule is not None and rule.default else "opt-in")
        row = {"code": code, "tier": tier, **counts(rule_score)}
        if tier == "default":
            row["default_run"] = counts(default_scores.get(code, RuleScore(code)))
        rows.append(row)
    default_rows = [r["default_run"] for r in rows
                    if "default_run" in r and r["default_run"]["precision"] is not None]
    weight = sum(r["findings"] for r in default_rows)
    overall = sum(r["precision"] * r["findings"] for r in default_rows) / weight if weight else None
    summary = {"repositories": [r["name"] for r in repos], "findings": len(all_findings),
               "errors": errors, "default_rules_precision": overall, "rules": rows}
    if args.findings:
        args.findings.write_text(json.dumps([f.__dict__ for f in all_findings], indent=1),
                                 encoding="utf-8")
    if args.todo:
        with args.todo.open("w", encoding="utf-8") as handle:
            for finding in todo.values():
                handle.write(f"=== {finding.repo}\t{finding.path}\t{finding.line}\t"
                             f"{finding.code}\n{finding.message}\n")
                if finding.fix:
                    handle.write(f"fix {finding.fix}\n")
                handle.write(context(args.corpus, finding, args.context) + "\n\n")
        print(f"{len(todo)} sampled findings without a verdict -> {args.todo}",
              file=sys.stderr)
    if args.write_results:
        write_results(args.write_results, rows, len(repos))
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{len(repos)} repositories, {len(all_findings)} findings, "
          f"{len(errors)} error line(s)")
    for line in errors[:20]:
        print(f"  error: {line}")
    print(f"{'code':6} {'tier':8} {'findings':>8} {'judged':>6} {'true':>5} {'false':>5} "
          f"{'debat.':>6} {'precision':>9}  unjudged")
    for row in rows:
        print_row(row["code"], row["tier"], row)
        shown = row.get("default_run")
        if shown is not None and (shown["findings"], shown["judged"], shown["true"]) != (
                row["findings"], row["judged"], row["true"]):
            print_row("", "  run", shown)
    print("(run: what the default run, without --preview, shows of a default rule that also "
          "has preview shapes)")
    if overall is not None:
        print(f"default rules, as the default run shows them, weighted by findings: "
              f"{overall:.1%} true")
    return 0


def score(findings: list[Finding], verdicts: dict[tuple[str, str, int, str], tuple[str, str]],
          args: argparse.Namespace, todo: dict[tuple[str, str, int, str], Finding]
          ) -> dict[str, RuleScore]:
    """Each rule's sample of ``findings`` scored against ``verdicts``; the sampled findings
    without a verdict are added to ``todo``."""
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_code[finding.code].append(finding)
    scores: dict[str, RuleScore] = {}
    for code in sorted(by_code):
        rule_score = scores[code] = RuleScore(code, len(by_code[code]))
        rule_score.sampled = sample(by_code[code], args.sample, args.all_up_to, args.seed)
        for finding in rule_score.sampled:
            verdict = verdicts.get(finding.key)
            if verdict is None:
                todo[finding.key] = finding
            else:
                rule_score.verdicts[verdict[0]] += 1
    return scores


def counts(rule_score: RuleScore) -> dict:
    return {"findings": rule_score.findings, "sampled": len(rule_score.sampled),
            "judged": rule_score.judged, "true": rule_score.verdicts["true"],
            "false": rule_score.verdicts["false"],
            "debatable": rule_score.verdicts["debatable"], "precision": rule_score.precision}


def print_row(code: str, tier: str, row: dict) -> None:
    precision = "-" if row["precision"] is None else f"{row['precision']:.0%}"
    print(f"{code:6} {tier:8} {row['findings']:8} {row['judged']:6} {row['true']:5} "
          f"{row['false']:5} {row['debatable']:6} {precision:>9}  "
          f"{row['sampled'] - row['judged']}")


if __name__ == "__main__":
    sys.exit(main())
