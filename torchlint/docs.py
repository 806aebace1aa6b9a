"""The README's rule table, generated from the registry so it cannot drift."""

from __future__ import annotations

from torchlint.registry import all_rules

BEGIN = "<!-- rules:begin -->"
END = "<!-- rules:end -->"
FIX_LABELS = {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe / unsafe", "none": "—"}


def rule_table() -> str:
    lines = ["| Code | Name | Enabled | Fix | What it flags |", "|---|---|---|---|---|"]
    for code, rule in all_rules().items():
        summary = rule.summary().replace("|", "\\|")
        enabled = "default" if rule.default else "opt-in"
        lines.append(f"| {code} | `{rule.name}` | {enabled} | {FIX_LABELS[rule.fix_safety]} "
                     f"| {summary} |")
    return "\n".join(lines)


def update_readme(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{rule_table()}\n{END}{tail}"


if __name__ == "__main__":  # python -m torchlint.docs README.md
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(update_readme(path.read_text(encoding="utf-8")), encoding="utf-8")
