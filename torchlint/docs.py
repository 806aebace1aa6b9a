"""Generated from the rules so they cannot drift: the README's rule table and
``torchlint/catalog.py``.

    python -m torchlint.docs README.md    # rewrites both
"""

from __future__ import annotations

from pathlib import Path

from torchlint.registry import all_rules

BEGIN = "<!-- rules:begin -->"
END = "<!-- rules:end -->"
FIX_LABELS = {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe / unsafe", "none": "—"}


def tier(rule: type) -> str:
    """``default``, ``opt-in``, or ``preview`` (with ``--preview`` only; ``preview; default
    once stable`` for one that joins the defaults when it leaves the preview tier)."""
    if getattr(rule, "preview", False):
        return "preview" + ("; default once stable" if getattr(rule, "default", False) else "")
    return "default" if getattr(rule, "default", False) else "opt-in"


def read_counts(path: Path, first: int) -> dict[str, tuple[int, int, int]]:
    """A harness's per-rule results TSV: the rule code (first column) and the three counts
    from column ``first`` on. Empty when the file is missing."""
    found: dict[str, tuple[int, int, int]] = {}
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if line.startswith("#") or len(parts) < first + 3 or not parts[first].isdigit():
            continue
        found[parts[0]] = (int(parts[first]), int(parts[first + 1]), int(parts[first + 2]))
    return found


def read_precision(path: Path) -> dict[str, tuple[int, ...]]:
    """Per rule, from the precision harness's results (``benchmarks/precision.py
    --write-results``): (findings, judged, true) with ``--preview``, and for a default
    rule the same three counts of the default run after them. Empty when the file is
    missing."""
    found: dict[str, tuple[int, ...]] = dict(read_counts(path, 1))
    for code, shown in read_counts(path, 6).items():
        if code in found:
            found[code] += shown
    return found


def precision_cell(measured: tuple[int, ...] | None) -> str:
    """``92 % (23/25)``; for a default rule whose preview shapes add findings, what the
    default run shows first: ``100 % (1/1); 7 % (1/15) with preview``."""
    if measured is None:
        return "no findings"
    cell = _precision(*measured[:3])
    if len(measured) == 6 and measured[3:] != measured[:3]:
        shown = _precision(*measured[3:]) if measured[3] else "no findings"
        return f"{shown}; {cell} with preview"
    return cell


def _precision(findings: int, judged: int, true: int) -> str:
    if not judged:
        return f"{findings} unjudged"
    return f"{100 * true / judged:.0f} % ({true}/{judged})"


def read_recall(path: Path) -> dict[str, tuple[int, int, int]]:
    """Per rule, from the recall harness's results (``benchmarks/recall.py
    --write-results``): (true instances, caught by the default run, caught only with
    ``--preview``). Empty when the file is missing."""
    return read_counts(path, 2)


def recall_cell(measured: tuple[int, int, int] | None) -> str:
    if measured is None or not measured[0]:
        return "not hunted" if measured is None else "no instances"
    instances, default, preview_only = measured
    cell = f"{100 * default / instances:.0f} % ({default}/{instances})"
    if preview_only:
        both = default + preview_only
        cell += f", {100 * both / instances:.0f} % ({both}) with preview"
    return cell


def rule_table(precision: dict[str, tuple[int, ...]] | None = None,
               recall: dict[str, tuple[int, int, int]] | None = None) -> str:
    """The README's rule table; with ``precision``, a column of measured precision on real
    code (true findings among the judged ones); with ``recall``, a column of measured
    recall (hunted real instances the default run reports, and with ``--preview``)."""
    head = "| Code | Name | Enabled | Fix | What it flags |"
    rule_line = "|---|---|---|---|---|"
    if precision is not None:
        head = head.replace("| What", "| Precision on real code | What")
        rule_line += "---|"
    if recall is not None:
        head = head.replace("| What", "| Recall on real code | What")
        rule_line += "---|"
    lines = [head, rule_line]
    for code, rule in all_rules().items():
        summary = rule.summary().replace("|", "\\|")
        enabled = tier(rule)
        measured = "" if precision is None else f"{precision_cell(precision.get(code))} | "
        if recall is not None:
            measured += f"{recall_cell(recall.get(code))} | "
        lines.append(f"| {code} | `{rule.name}` | {enabled} | {FIX_LABELS[rule.fix_safety]} "
                     f"| {measured}{summary} |")
    return "\n".join(lines)


def catalog_source() -> str:
    """The text of ``torchlint/catalog.py`` for the built-in rules."""
    lines = [
        '"""Every built-in rule\'s code, name and default state, and what its prefilter asks of a',
        "file, readable without importing a rule.",
        "",
        "Generated by ``python -m torchlint.docs`` from the rules themselves; a test keeps it current.",
        "It lets a run answered from the cache, or over files no rule can fire on, start without",
        "loading libcst or any rule.",
        '"""',
        "",
        "# code: (name, on by default, preview)",
        "BUILTIN: dict[str, tuple[str, bool, bool]] = {",
    ]
    builtin = {code: rule for code, rule in all_rules().items()
               if rule.__module__.startswith("torchlint.rules.")}
    for code, rule in builtin.items():
        lines.append(f'    "{code}": ("{rule.name}", {rule.default}, {rule.preview}),')
    lines += [
        "}",
        "",
        "# code: (text triggers, text patterns, ast trigger as data or None): what the engine",
        "# asks before importing any rule (see torchlint.engine.screen)",
        "SCREEN: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple | None]] = {",
    ]
    for code, rule in builtin.items():
        requires = rule.requires.data() if rule.requires is not None else None
        lines.append(f'    "{code}": ({rule.triggers!r}, {rule.patterns!r}, {requires!r}),')
    lines += ["}", "", "# code: the module of its rule (a run imports only the rules a file needs)",
              "MODULES: dict[str, str] = {"]
    for code, rule in builtin.items():
        lines.append(f'    "{code}": "{rule.__module__}",')
    lines.append("}")
    return "\n".join(lines) + "\n"


def results_for(readme: Path) -> Path:
    """Where the precision results of the project whose README this is are kept."""
    return readme.resolve().parent / "benchmarks" / "precision" / "results.tsv"


def recall_results_for(readme: Path) -> Path:
    """Where the recall results of the project whose README this is are kept."""
    return readme.resolve().parent / "benchmarks" / "recall" / "results.tsv"


def update_readme(text: str, precision: dict[str, tuple[int, ...]] | None = None,
                  recall: dict[str, tuple[int, int, int]] | None = None) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{rule_table(precision, recall)}\n{END}{tail}"


if __name__ == "__main__":  # python -m torchlint.docs README.md
    import sys

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    measured = read_precision(results_for(path))
    hunted = read_recall(recall_results_for(path))
    path.write_text(update_readme(path.read_text(encoding="utf-8"), measured or None,
                                  hunted or None), encoding="utf-8")
    catalog = Path(__file__).with_name("catalog.py")
    catalog.write_text(catalog_source(), encoding="utf-8")
