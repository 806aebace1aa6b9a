"""JUnit XML, as CI systems read test reports: one ``testsuite`` per file and one failed
``testcase`` per finding (as Ruff writes it); a run without findings is one passing case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby
from pathlib import PurePosixPath
from typing import TextIO

from torchlint.diagnostic import Diagnostic
from torchlint.reporters.sources import Sources, relative_path

PACKAGE = "org.torchlint"


def _suite(parent: ET.Element, name: str, tests: int, failures: int) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=name, tests=str(tests), disabled="0",
                         errors="0", failures=str(failures), package=PACKAGE)


def junit_tree(diagnostics: Sequence[Diagnostic]) -> ET.Element:
    root = ET.Element("testsuites", name="torchlint", tests=str(len(diagnostics) or 1),
                      failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = _suite(root, "torchlint", 1, 0)
        ET.SubElement(suite, "testcase", name="No errors found", classname="torchlint")
        return root
    for path, group in groupby(sorted(diagnostics, key=lambda d: d.sort_key),
                               key=lambda d: d.path):
        found = list(group)
        shown = relative_path(path)
        suite = _suite(root, shown, len(found), len(found))
        classname = str(PurePosixPath(shown).with_suffix(""))
        for d in found:
            case = ET.SubElement(suite, "testcase", name=f"{PACKAGE}.{d.code}",
                                 classname=classname, line=str(d.line), column=str(d.column))
            where = f"cell {d.cell}, " if d.cell is not None else ""
            failure = ET.SubElement(case, "failure", message=d.message)
            failure.text = f"{where}line {d.line}, col {d.column}, {d.code} {d.message}"
    return root


def render_junit(diagnostics: Sequence[Diagnostic], stream: TextIO,
                 sources: Sources | None = None) -> None:
    root = junit_tree(diagnostics)
    ET.indent(root, space="  ")
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")
