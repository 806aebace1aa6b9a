"""SARIF 2.1.0, with the metadata of every rule; columns count characters, like ``check``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from torchlint import __version__
from torchlint.diagnostic import Diagnostic
from torchlint.docs import tier
from torchlint.registry import all_rules
from torchlint.reporters.sources import Sources

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
# labels of [project.urls] that point at torchlint's home, in order of preference
_HOME_LABELS = ("documentation", "docs", "homepage", "home", "repository", "source")


def information_uri() -> str | None:
    """torchlint's home page as its package metadata declares it (``[project.urls]``), or
    None: a URL is given only when one is declared, never guessed."""
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        declared = metadata("torchlint").get_all("Project-URL") or []
    except (PackageNotFoundError, OSError, ValueError):
        return None
    urls: dict[str, str] = {}
    for entry in declared:
        label, _, url = entry.partition(",")
        if url.strip().startswith(("https://", "http://")):
            urls[label.strip().lower()] = url.strip()
    return next((urls[label] for label in _HOME_LABELS if label in urls), None)


def _artifact(path: str) -> dict[str, str]:
    resolved = Path(path).resolve()
    try:
        relative = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        return {"uri": resolved.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SRCROOT}


def _rules() -> list[dict[str, Any]]:
    described = []
    for code, rule in all_rules().items():
        doc = rule.doc()
        why = doc.split("## Why is this bad?", 1)[-1].split("##", 1)[0].strip() if doc else ""
        described.append({
            "id": code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary() or rule.name},
            "fullDescription": {"text": " ".join(why.split()) or rule.summary() or rule.name},
            # the whole documentation travels inline: no link that could go dead
            "help": {"text": doc or rule.name, "markdown": doc or rule.name},
            # a preview rule runs only with --preview: not enabled by default (yet)
            "defaultConfiguration": {"enabled": bool(rule.default) and not rule.preview,
                                     "level": "error"},
            "properties": {"fixSafety": rule.fix_safety,
                           "tags": ["pytorch", *tier(rule).split("; ")]},
        })
    return described


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    region = {"startLine": line, "startColumn": column, "endLine": end_line,
              "endColumn": end_column}
    if (end_line, end_column) < (line, column):
        region["endLine"], region["endColumn"] = line, column
    return region


def _fixes(d: Diagnostic, sources: Sources, artifact: dict[str, str]) -> list[dict[str, Any]]:
    if d.fix is None:
        return []
    replacements = []
    for edit in d.fix.resolved_edits():
        span = sources.edit_range(d.path, edit)
        if span is None:
            return []
        start, end = span
        replacements.append({
            "deletedRegion": _region(start.line, start.column, end.line, end.column),
            "insertedContent": {"text": edit.text},
        })
    label = "safe" if d.fix.is_safe else "unsafe (apply with --fix --unsafe-fixes)"
    return [{"description": {"text": f"{d.code} fix: {label}"},
             "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
             "properties": {"applicability": d.fix.applicability.value}}]


def sarif_log(diagnostics: Sequence[Diagnostic], sources: Sources | None = None
              ) -> dict[str, Any]:
    sources = sources or Sources()
    rules = _rules()
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    results = []
    for d in diagnostics:
        artifact = _artifact(d.path)
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": artifact,
                "region": _region(*d.file_region),  # a notebook's: in the .ipynb text
            }}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.cell is not None:  # SARIF has no cells: the region is within this cell
            result["properties"] = {"cell": d.cell}
            result["locations"][0]["message"] = {"text": f"cell {d.cell}"}
        fixes = _fixes(d, sources, artifact)
        if fixes and d.cell is None:
            result["fixes"] = fixes
        results.append(result)
    driver: dict[str, Any] = {"name": "torchlint", "version": __version__,
                              "semanticVersion": __version__, "rules": rules}
    home = information_uri()
    if home is not None:
        driver["informationUri"] = home
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().resolve().as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def render_sarif(diagnostics: Sequence[Diagnostic], stream: TextIO,
                 sources: Sources | None = None) -> None:
    json.dump(sarif_log(diagnostics, sources), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
