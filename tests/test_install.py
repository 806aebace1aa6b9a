"""torchlint installed as a user installs it (``pip install .``, not editable) works from
anywhere: from the clone's root, where ``python -m torchlint`` imports the checkout itself,
and from any other folder; as a command, a flake8 plugin and a language server.

One wheel and one virtual environment per test session: the wheel is built from a copy
of the checkout without build isolation, and the environment reuses this one's packages
(their folders are on its path, but not their ``.pth`` files, so an editable install of
torchlint here does not leak into it), so nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from lsp_client import Client, open_document

CHECKOUT = Path(__file__).resolve().parents[1]
DEMO = CHECKOUT / "fixtures" / "demo"
COPIED = ("torchlint", "rules", "pyproject.toml", "README.md")


@pytest.fixture(scope="session")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh environment with torchlint installed from a wheel."""
    if not importable("setuptools"):
        pytest.skip("building the wheel needs setuptools")
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    for name in COPIED:
        origin = CHECKOUT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(origin, source / name)
    built = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                 "--no-build-isolation", "--wheel-dir", str(work / "wheels"), str(source)],
                work)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "wheels").glob("torchlint-*.whl")
    venv.EnvBuilder(with_pip=False).create(work / "venv")
    interpreter = work / "venv" / ("Scripts" if os.name == "nt" else "bin") / "python"
    own = Path(run([str(interpreter), "-c", "import site; print(site.getsitepackages()[0])"],
                   work).stdout.strip())
    (own / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n",
                                          encoding="utf-8")
    installed = run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                     "--no-index", "--target", str(own), str(wheel)], work)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return interpreter


def importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env, stdin=subprocess.DEVNULL)


@pytest.fixture(params=["the clone's root", "another folder"])
def cwd(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where the command is started."""
    return CHECKOUT if request.param == "the clone's root" else tmp_path


def test_the_environment_runs_its_installed_copy(python: Path, tmp_path: Path) -> None:
    found = run([str(python), "-c", "import torchlint.rules as r; print(r.__file__)"],
                tmp_path)
    assert found.returncode == 0, found.stderr
    assert str(python.parent.parent) in found.stdout


def test_check_works_wherever_it_is_started(python: Path, cwd: Path) -> None:
    demo = "fixtures/demo" if cwd == CHECKOUT else str(DEMO)
    done = run([str(python), "-m", "torchlint", "check", "--no-cache", demo], cwd)
    assert "internal error" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    assert "TL901" in done.stdout and "Found " in done.stdout + done.stderr


def test_the_flake8_plugin_works_wherever_it_is_started(python: Path, cwd: Path) -> None:
    if not importable("flake8"):
        pytest.skip("flake8 is not installed")
    done = run([str(python), "-m", "flake8", "--select", "TL", str(DEMO / "data.py")], cwd)
    assert "TL901" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_the_language_server_lints_wherever_it_is_started(python: Path, tmp_path: Path,
                                                          cwd: Path) -> None:
    if not importable("pygls"):
        pytest.skip("the lsp extra is not installed")
    client = Client(cwd, [str(python), "-m", "torchlint", "server"], checkout=False)
    try:
        client.initialize(tmp_path)
        text = (DEMO / "data.py").read_text(encoding="utf-8")
        uri = open_document(client, tmp_path / "data.py", text)
        assert "TL901" in {d["code"] for d in client.diagnostics(uri)}
    finally:
        client.close()
