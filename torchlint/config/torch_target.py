"""The torch release a project declares: the oldest one its torch requirement allows.

Read from a folder's ``pyproject.toml`` (``[project]`` dependencies and optional
dependencies, Poetry's dependency tables), ``setup.cfg`` (``install_requires``,
``extras_require``), ``setup.py`` (its string literals that are torch requirements, such as
``"torch>=2.6"`` in a dependency list; read with ``ast``, never run), ``requirements*.txt``
and ``requirements/**.txt``, and a conda ``environment.yml``. Requirement specifiers are
parsed by ``packaging``; conda and Poetry spellings are first turned into PEP 440 ones.
Nothing is executed, and a file that does not mention torch is never parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from torchlint.source import read_file

TORCH_NAMES = frozenset({"torch", "pytorch"})
_MENTION = re.compile(rb"\b(?:py)?torch\b", re.I)
_CONDA = re.compile(r"^\s*-\s*(?:[\w.-]+::)?(?:py)?torch(?![\w.-])\s*(?P<spec>[^#\s][^#]*)?", re.I)
_CONDA_PIP = re.compile(r"^\s*-\s*pip\s*:\s*$")


@dataclass(frozen=True)
class Declaration:
    """One place that declares torch, and the oldest release it allows (None: no bound)."""

    release: tuple[int, int] | None
    where: str  # "requirements.txt: torch>=2.1"


def _lowest(specifiers: Iterable[tuple[str, str]]) -> tuple[int, int] | None:
    """The oldest ``major.minor`` that (operator, version) pairs all allow, or None."""
    from packaging.version import InvalidVersion, Version

    bounds: list[tuple[int, int]] = []
    for operator, version in specifiers:
        if operator not in (">=", ">", "==", "~=", "==="):
            continue
        try:
            parsed = Version(version.removesuffix(".*"))
        except InvalidVersion:
            continue
        release = (*parsed.release, 0)
        bounds.append((release[0], release[1]))
    return max(bounds) if bounds else None


def _pep508(line: str) -> tuple[int, int] | None | Literal[False]:
    """A PEP 508 requirement line: False if it is not torch, else its lowest release."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return False
    if canonicalize_name(requirement.name) not in TORCH_NAMES:
        return False
    return _lowest((s.operator, s.version) for s in requirement.specifier)


def _from_lines(lines: Iterable[str], label: str) -> Iterator[Declaration]:
    for raw in lines:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")) or not _MENTION.search(line.encode()):
            continue
        found = _pep508(line)
        if found is not False:
            yield Declaration(found, f"{label}: {line}")


def _conda_spec(spec: str) -> list[tuple[str, str]]:
    """A conda version spec (``=2.1``, ``2.1.*``, ``>=1.12,<2``, ``2.1.0 py3.10_cuda*``,
    ``=2.1.0=py3.10_cuda``) as (operator, version) pairs."""
    spec = spec.strip()
    if spec.startswith("=") and not spec.startswith("=="):  # =2.1 is 2.1.*
        return [("==", spec[1:].split("=", 1)[0].strip())]
    if re.match(r"^[\d.*]+\s+\S+$", spec):  # a version, then a build string
        spec = spec.split()[0]
    pairs = []
    for part in spec.replace(" ", "").split(","):
        match = re.match(r"^(>=|<=|==|!=|~=|>|<)?([\w.*+!-]+)", part)
        if match:
            pairs.append((match.group(1) or "==", match.group(2)))
    return pairs


def _from_environment(text: str, label: str) -> Iterator[Declaration]:
    in_pip = False
    pip_indent = -1
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped.strip():
            continue
        indent = len(stripped) - len(stripped.lstrip())
        if _CONDA_PIP.match(stripped):
            in_pip, pip_indent = True, indent
            continue
        if in_pip and indent <= pip_indent:
            in_pip = False
        item = stripped.strip()
        if not item.startswith("-") or not _MENTION.search(item.encode()):
            continue
        if in_pip:
            yield from _from_lines([item[1:].strip()], label)
            continue
        match = _CONDA.match(stripped)
        if match:
            spec = (match.group("spec") or "").strip()
            release = _lowest(_conda_spec(spec)) if spec else None
            yield Declaration(release, f"{label}: {item[1:].strip()}")


def _poetry(value: object) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        value = value.get("version", "")
    if not isinstance(value, str) or not value.strip() or value.strip() == "*":
        return []
    pairs = []
    for part in value.split(","):
        part = part.strip()
        if part[:1] in "^~" and not part.startswith("~="):
            pairs.append((">=", part[1:].strip()))
        elif part[:1].isdigit():
            pairs.append(("==", part))
        else:
            match = re.match(r"^(>=|<=|==|!=|~=|>|<)\s*(.+)$", part)
            if match:
                pairs.append((match.group(1), match.group(2).strip()))
    return pairs


def _from_pyproject(data: dict[str, Any], label: str) -> Iterator[Declaration]:
    project = data.get("project")
    if isinstance(project, dict):
        lists: list[object] = [project.get("dependencies")]
        extras = project.get("optional-dependencies")
        if isinstance(extras, dict):
            lists.extend(extras.values())
        for entries in lists:
            if isinstance(entries, list):
                yield from _from_lines([e for e in entries if isinstance(e, str)], label)
    tool = data.get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    if isinstance(poetry, dict):
        tables = [poetry.get("dependencies")]
        groups = poetry.get("group")
        if isinstance(groups, dict):
            tables.extend(g.get("dependencies") for g in groups.values() if isinstance(g, dict))
        for table in tables:
            if not isinstance(table, dict):
                continue
            for name, value in table.items():
                if name.lower() in TORCH_NAMES:
                    yield Declaration(_lowest(_poetry(value)), f"{label}: {name} = {value!r}")


def _from_setup_cfg(text: str, label: str) -> Iterator[Declaration]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(v for _, v in parser.items("options.extras_require"))
    for value in values:
        yield from _from_lines(value.splitlines(), label)


def _from_setup_py(text: str, label: str) -> Iterator[Declaration]:
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    literals = [node.value for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and len(node.value) < 200 and _MENTION.search(node.value.encode())]
    yield from _from_lines(literals, label)


def _read(path: str) -> bytes | None:
    try:
        return read_file(path)  # a FIFO or device is not waited on
    except OSError:
        return None


def _requirement_files(directory: str, names: frozenset[str]) -> list[str]:
    found = [n for n in sorted(names) if n.startswith("requirements") and n.endswith(".txt")]
    if "requirements" in names and os.path.isdir(os.path.join(directory, "requirements")):
        top = os.path.join(directory, "requirements")
        for folder, subfolders, files in os.walk(top):
            subfolders[:] = sorted(subfolders) if folder == top else []
            found += [os.path.relpath(os.path.join(folder, f), directory)
                      for f in sorted(files) if f.endswith(".txt")]
    return found


def declaration_files(directory: str, names: frozenset[str]) -> list[str]:
    """The files of ``directory`` that may declare a requirement (``names``: its entries)."""
    found = [os.path.join(directory, n) for n in ("pyproject.toml", "setup.cfg", "setup.py",
                                                   "environment.yml", "environment.yaml")
             if n in names]
    found += [os.path.join(directory, n) for n in _requirement_files(directory, names)]
    return found


def declarations_in(directory: str, names: frozenset[str]) -> list[Declaration]:
    """Every torch requirement the folder's project files declare (``names``: its entries)."""
    found: list[Declaration] = []
    if "pyproject.toml" in names:
        data = _read(os.path.join(directory, "pyproject.toml"))
        if data and _MENTION.search(data):
            from torchlint.config.toml_files import loads, tomllib

            try:
                parsed = loads(data.decode("utf-8", "replace"))
            except tomllib().TOMLDecodeError:
                parsed = {}
            found += _from_pyproject(parsed, "pyproject.toml")
    if "setup.cfg" in names:
        data = _read(os.path.join(directory, "setup.cfg"))
        if data and _MENTION.search(data):
            found += _from_setup_cfg(data.decode("utf-8", "replace"), "setup.cfg")
    if "setup.py" in names:
        data = _read(os.path.join(directory, "setup.py"))
        if data and _MENTION.search(data):
            found += _from_setup_py(data.decode("utf-8", "replace"), "setup.py")
    for name in _requirement_files(directory, names):
        data = _read(os.path.join(directory, name))
        if data and _MENTION.search(data):
            found += _from_lines(data.decode("utf-8", "replace").splitlines(),
                                 name.replace(os.sep, "/"))
    for name in ("environment.yml", "environment.yaml"):
        if name in names:
            data = _read(os.path.join(directory, name))
            if data and _MENTION.search(data):
                found += _from_environment(data.decode("utf-8", "replace"), name)
    return found


def declared_target(declarations: list[Declaration]) -> tuple[tuple[int, int] | None, str]:
    """(the oldest release any bounded declaration allows, a description of the source)."""
    bounded = [d for d in declarations if d.release is not None]
    if not bounded:
        where = "; ".join(d.where for d in declarations)
        return None, f"{where} (no lower bound: the target stays unknown)"
    oldest = min(bounded, key=lambda d: d.release or (0, 0))
    return oldest.release, oldest.where
