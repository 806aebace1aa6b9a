"""The CI integrations, run the way their runners run them: the GitHub Action's steps in
bash with the runner's files and variables, and the README's GitLab job, whose Code
Quality report is validated against GitLab's documented format
(tests/data/gitlab-code-quality.schema.json)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
BAD = "import torch\n\nx = torch.autograd.Variable(torch.ones(3))\n"
GOOD = "import torch\n\nx = torch.ones(3)\n"
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed")


def _clean_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHON", "TORCHLINT", "GITHUB", "CI"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(os.environ.get("VIRTUAL_ENV", "\0")))
    return env


def _offline(output: str) -> bool:
    return any(s in output for s in ("Could not find a version", "No matching distribution",
                                     "Failed to establish a new connection"))


class Runner:
    """Runs a composite action's steps as the GitHub runner does: each `run` in
    `bash --noprofile --norc -eo pipefail`, `${{ }}` expressions substituted, GITHUB_ENV and
    GITHUB_OUTPUT files read between steps. `uses` steps are recorded, not run."""

    def __init__(self, action: dict[str, Any], workspace: Path, temp: Path) -> None:
        self.action = action
        self.workspace = workspace
        self.temp = temp
        self.env: dict[str, str] = {}
        self.outputs: dict[str, dict[str, str]] = {}
        self.used: list[dict[str, Any]] = []

    def _value(self, expression: str, inputs: dict[str, str]) -> str:
        context = {"github.action_path": str(ROOT), "github.action_repository": "owner/torchlint",
                   "github.server_url": "https://github.com", "github.workspace": str(self.workspace)}
        if expression in context:
            return context[expression]
        if expression.startswith("inputs."):
            return inputs[expression.removeprefix("inputs.")]
        match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        if match:
            return self.outputs.get(match.group(1), {}).get(match.group(2), "")
        raise AssertionError(f"the test runner does not know ${{{{ {expression} }}}}")

    def _condition(self, condition: str | None, inputs: dict[str, str]) -> bool:
        if condition is None:
            return True
        match = re.fullmatch(r"inputs\.([\w-]+) == '([^']*)'", condition.strip())
        assert match, f"the test runner does not know the condition {condition!r}"
        return inputs[match.group(1)] == match.group(2)

    def run(self, given: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
        inputs = {name: str(spec.get("default", "")) for name, spec in
                  self.action["inputs"].items()}
        inputs.update(given)
        done = []
        for step in self.action["runs"]["steps"]:
            if not self._condition(step.get("if"), inputs):
                continue
            if "uses" in step:
                self.used.append({k: EXPRESSION.sub(lambda m: self._value(m.group(1), inputs), v)
                                  for k, v in step.get("with", {}).items()} | {"uses": step["uses"]})
                continue
            assert step["shell"] == "bash"
            script = self.temp / "step.sh"
            script.write_text(EXPRESSION.sub(lambda m: self._value(m.group(1), inputs),
                                             step["run"]))
            env_file, output_file = self.temp / "env", self.temp / "output"
            output_file.write_text("")
            env = {**_clean_environment(), **self.env, "RUNNER_TEMP": str(self.temp),
                   "GITHUB_ENV": str(env_file), "GITHUB_OUTPUT": str(output_file),
                   "GITHUB_WORKSPACE": str(self.workspace), "CI": "true",
                   "GITHUB_ACTIONS": "true"}
            for name, value in step.get("env", {}).items():
                env[name] = EXPRESSION.sub(lambda m: self._value(m.group(1), inputs), str(value))
            result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail",
                                     str(script)], cwd=self.workspace, env=env,
                                    capture_output=True, text=True, timeout=900)
            done.append(result)
            if env_file.exists():
                for line in env_file.read_text().splitlines():
                    name, _, value = line.partition("=")
                    self.env[name] = value
            self.outputs[step.get("id", "")] = dict(
                line.partition("=")[::2] for line in output_file.read_text().splitlines())
            if result.returncode != 0:
                break
        return done


def test_the_github_action_installs_checks_annotates_and_writes_sarif(tmp_path: Path) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    workspace = tmp_path / "repo"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "train.py").write_text(BAD)
    (workspace / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL002"]\n')
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    runner = Runner(action, workspace, temp)
    install, sarif, check = runner.run({"src": "src", "sarif": "true",
                                        "args": "--target-torch 2.4"})
    if install.returncode != 0 and _offline(install.stdout + install.stderr):
        pytest.skip("torchlint's dependencies could not be installed (no package index)")
    assert install.returncode == 0, install.stderr
    assert runner.env["TORCHLINT"].startswith(str(temp / "torchlint-venv"))
    assert sarif.returncode == 0, sarif.stderr
    report = json.loads((workspace / "torchlint.sarif").read_text())
    assert report["runs"][0]["results"][0]["ruleId"] == "TL704"
    (upload,) = runner.used
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["sarif_file"] == "torchlint.sarif"
    assert check.returncode == 1  # findings remain: the step fails the job
    assert check.stdout.startswith("::error title=torchlint (TL704),file=src/train.py,line=3,col=5")
    # a clean tree passes, and without sarif no report is written or uploaded
    (workspace / "src" / "train.py").write_text(GOOD)
    (workspace / "torchlint.sarif").unlink()
    clean = Runner(action, workspace, temp)
    clean.env = dict(runner.env)
    results = clean.run({"src": "src"})
    assert [r.returncode for r in results] == [0, 0]
    assert not clean.used and not (workspace / "torchlint.sarif").exists()


def _gitlab_job() -> dict[str, Any]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    part = text.split("<!-- gitlab-ci:begin -->", 1)[1].split("<!-- gitlab-ci:end -->", 1)[0]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", part, re.S).group(1))["torchlint"]


def test_the_gitlab_job_publishes_a_valid_code_quality_report(tmp_path: Path) -> None:
    import jsonschema

    job = _gitlab_job()
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "train.py").write_text(BAD + "y = torch.autograd.Variable(torch.zeros(2))\n" * 2)
    (project / "pkg" / "notes.py").write_text(GOOD)
    env = {**_clean_environment(), "CI": "true", "GITLAB_CI": "true",
           **{k: str(v) for k, v in job.get("variables", {}).items()},
           "TORCHLINT_SOURCE": str(ROOT)}  # the repository under test, not a download
    failed = None
    for command in job["script"]:  # as the runner does: stop at the first failure
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=900)
        if done.returncode != 0:
            failed = (command, done)
            break
    if failed and _offline(failed[1].stdout + failed[1].stderr):
        pytest.skip("torchlint's dependencies could not be installed (no package index)")
    assert failed is not None and "torchlint check" in failed[0]  # findings fail the job
    assert failed[1].returncode == 1, failed[1].stderr
    report_path = project / job["artifacts"]["reports"]["codequality"]
    assert job["artifacts"]["when"] == "always"
    report = json.loads(report_path.read_text())
    schema = json.loads((ROOT / "tests" / "data" / "gitlab-code-quality.schema.json").read_text())
    jsonschema.Draft7Validator(schema).validate(report)
    assert len(report) == 3
    assert len({issue["fingerprint"] for issue in report}) == len(report)  # unique, as required
    for issue in report:
        path = project / issue["location"]["path"]
        assert path.is_file() and ".torchlint-venv" not in issue["location"]["path"]
        lines = path.read_text().splitlines()
        assert 1 <= issue["location"]["lines"]["begin"] <= len(lines)
