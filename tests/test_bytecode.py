"""torchlint keeps its own modules' bytecode where PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from torchlint.run.bytecode import keep_bytecode


@pytest.fixture()
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A package ``pkgx`` (with a module) imported without writing bytecode."""
    root = tmp_path / "pkgx"
    root.mkdir()
    (root / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    (root / "mod.py").write_text("def answer():\n    return 42\n", encoding="utf-8")
    (tmp_path / "other.py").write_text("X = 2\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for name in ("pkgx", "pkgx.mod", "other"):
        sys.modules.pop(name, None)
        monkeypatch.delitem(sys.modules, name, raising=False)
    modules = {name: importlib.import_module(name) for name in ("pkgx", "pkgx.mod", "other")}
    yield root, modules
    for name in modules:
        sys.modules.pop(name, None)


def _cached(path: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(path)))


def test_missing_bytecode_of_the_package_is_written_and_loads(package) -> None:
    root, modules = package
    assert not _cached(root / "mod.py").exists()  # Python wrote none
    assert keep_bytecode(modules, "pkgx") == 2
    for name in ("__init__.py", "mod.py"):
        assert _cached(root / name).exists()
    assert not _cached(root.parent / "other.py").exists()  # another package's: untouched
    # Python loads it: the module imported again comes from the bytecode just written
    spec = importlib.util.spec_from_file_location("pkgx.mod", root / "mod.py")
    assert spec is not None and spec.loader is not None
    code = spec.loader.get_code("pkgx.mod")  # type: ignore[attr-defined]
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["answer"]() == 42  # type: ignore[operator]


def test_valid_bytecode_is_kept_and_stale_bytecode_rewritten(package) -> None:
    root, modules = package
    keep_bytecode(modules, "pkgx")
    assert keep_bytecode(modules, "pkgx") == 0  # nothing to do the second time
    source = root / "mod.py"
    source.write_text("def answer():\n    return 43  # changed\n", encoding="utf-8")
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert keep_bytecode(modules, "pkgx") == 1


def test_nothing_is_written_when_python_writes_bytecode_itself(
        package, monkeypatch: pytest.MonkeyPatch) -> None:
    root, modules = package
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert keep_bytecode(modules, "pkgx") == 0
    assert not _cached(root / "mod.py").exists()


def test_a_folder_it_cannot_write_into_is_left_alone(package) -> None:
    root, modules = package
    (root / "__pycache__").write_text("not a folder\n", encoding="utf-8")  # no folder there
    assert keep_bytecode(modules, "pkgx") == 0
    assert (root / "__pycache__").read_text(encoding="utf-8") == "not a folder\n"
