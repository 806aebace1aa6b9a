"""The VS Code extension in editors/vscode builds (``npm ci && npm run compile``),
packages to a .vsix, and its manifest matches what the server understands.

Skipped when npm is not installed or the npm registry cannot be reached."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

from torchlint.lsp.settings import KEYS

EXTENSION = Path(__file__).resolve().parents[1] / "editors" / "vscode"
DATA = Path(__file__).resolve().parent / "data" / "vscode"
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET",
           "network", "getaddrinfo")


def _npm(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["npm", *args], cwd=folder, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The .vsix, and what ``vsce package`` said."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    folder = tmp_path_factory.mktemp("vscode") / "vscode"
    shutil.copytree(EXTENSION, folder, ignore=shutil.ignore_patterns(
        "node_modules", "dist", "*.vsix"))
    installed = _npm(folder, "ci", "--no-audit", "--no-fund")
    if installed.returncode != 0:
        output = installed.stdout + installed.stderr
        if any(word in output for word in OFFLINE):
            pytest.skip("the npm registry cannot be reached")
        raise AssertionError(output)
    compiled = _npm(folder, "run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    done = _npm(folder, "run", "package")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "torchlint.vsix", done.stdout + done.stderr


@pytest.fixture(scope="module")
def package(packaged: tuple[Path, str]) -> Path:
    return packaged[0]


def test_packaging_warns_of_nothing(packaged: tuple[Path, str]) -> None:
    vsix, said = packaged
    assert "WARNING" not in said, said
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        bundle = archive.read("extension/dist/extension.js")
        manifest = json.loads(archive.read("extension/package.json"))
        icon = archive.read(f"extension/{manifest['icon']}")
    assert {"extension/LICENSE.txt", "extension/icon.png"} <= names or \
        {"extension/LICENSE", "extension/icon.png"} <= names, names
    assert icon.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(bundle) < 500_000 and bundle.count(b"\n") < 100  # minified


def _manifest() -> dict[str, Any]:
    return json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))


def test_the_package_holds_the_bundle_and_nothing_else(package: Path) -> None:
    with zipfile.ZipFile(package) as vsix:
        names = set(vsix.namelist())
        bundle = vsix.read("extension/dist/extension.js").decode()
        manifest = json.loads(vsix.read("extension/package.json"))
    assert {"extension/package.json", "extension/dist/extension.js",
            "extension.vsixmanifest"} <= names
    assert not [n for n in names if n.startswith(("extension/src/", "extension/node_modules/"))]
    assert manifest["main"] == "./dist/extension.js"
    # the language client and the commands it sends to the server are in the bundle
    assert "torchlint.applyFixAll" in bundle and "torchlint.ruleDocumentation" in bundle
    assert "vscode-languageclient" in bundle or "LanguageClient" in bundle


def test_the_manifest_contributes_the_servers_settings() -> None:
    manifest = _manifest()
    properties = manifest["contributes"]["configuration"]["properties"]
    editor_only = {"torchlint.path", "torchlint.interpreter", "torchlint.importStrategy",
                   "torchlint.trace.server"}
    assert set(properties) - editor_only == {f"torchlint.{key}" for key in KEYS}
    source = (EXTENSION / "src" / "extension.ts").read_text(encoding="utf-8")
    sent = re.search(r"SERVER_SETTINGS = \[(.*?)\]", source, re.S)
    assert sent is not None
    assert re.findall(r'"(\w+)"', sent.group(1)) == list(KEYS)
    commands = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    assert commands == {"torchlint.fixAll": "Fix all auto-fixable problems",
                        "torchlint.showRule": "Show rule",
                        "torchlint.restart": "Restart server"}
    assert {"onLanguage:python", "onNotebook:jupyter-notebook"} <= set(
        manifest["activationEvents"])
    assert '{ notebook: "*", language: "python" }' in source  # notebook cells too


def test_versions_are_pinned_and_the_lock_is_committed() -> None:
    manifest = _manifest()
    for group in ("dependencies", "devDependencies"):
        for name, version in manifest[group].items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), (name, version)
    lock = json.loads((EXTENSION / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    ignored = (EXTENSION / ".gitignore").read_text(encoding="utf-8").split()
    assert {"node_modules/", "dist/", "*.vsix"} <= set(ignored)


def _server_command(package: Path, config: dict[str, Any], path: list[Path],
                    pythonpath: str = "", extension: Path | None = None) -> dict[str, Any]:
    """What the built extension's serverCommand chooses, with ``path`` as PATH (started
    in the first folder of ``path``, or in the extension's)."""
    node = shutil.which("node")
    assert node is not None
    env = dict(os.environ, PATH=os.pathsep.join(map(str, path)), PYTHONPATH=pythonpath)
    done = subprocess.run([node, str(DATA / "server_command.js"),
                           str(package.parent / "dist" / "extension.js"), json.dumps(config),
                           *([str(extension)] if extension else [])],
                          capture_output=True, text=True, timeout=120, env=env,
                          cwd=path[0] if path else package.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An interpreter without torchlint."""
    folder = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(with_pip=False).create(folder / "venv")
    return folder / "venv" / "bin" / "python"


def test_an_interpreter_with_torchlint_runs_the_server(package: Path) -> None:
    chosen = _server_command(package, {"interpreter": [sys.executable]}, [],
                             str(EXTENSION.parents[1]))
    assert chosen == {"found": {"command": sys.executable,
                                "args": ["-m", "torchlint", "server"]}, "shown": []}


def test_without_torchlint_in_the_interpreter_torchlint_on_path_runs(
        package: Path, bare_python: Path, tmp_path: Path) -> None:
    (tmp_path / "torchlint").write_text("#!/bin/sh\n")
    (tmp_path / "torchlint").chmod(0o755)
    chosen = _server_command(package, {"interpreter": [str(bare_python)]}, [tmp_path])
    assert chosen == {"found": {"command": str(tmp_path / "torchlint"), "args": ["server"]},
                      "shown": []}


def test_without_any_torchlint_the_user_is_told_why(package: Path, bare_python: Path,
                                                    tmp_path: Path) -> None:
    chosen = _server_command(package, {"interpreter": [str(bare_python)],
                                       "importStrategy": "useBundled"}, [tmp_path])
    assert chosen["found"] is None
    (shown,) = chosen["shown"]
    assert "bundles no torchlint" in shown and "no torchlint on PATH" in shown
    assert f"{bare_python}: ModuleNotFoundError: No module named 'torchlint'" in shown
    assert "pip install '/path/to/torchlint[lsp]'" in shown


def test_use_bundled_runs_the_torchlint_packaged_with_the_extension(package: Path,
                                                                    tmp_path: Path) -> None:
    libs = tmp_path / "extension" / "bundled" / "libs"
    libs.mkdir(parents=True)
    (libs / "torchlint").symlink_to(EXTENSION.parents[1] / "torchlint")
    (libs / "rules").symlink_to(EXTENSION.parents[1] / "rules")
    chosen = _server_command(package, {"interpreter": [sys.executable],
                                       "importStrategy": "useBundled"}, [tmp_path],
                             extension=tmp_path / "extension")
    found = chosen["found"]
    assert (found["command"], found["args"]) == (sys.executable, ["-m", "torchlint", "server"])
    assert found["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(libs)
