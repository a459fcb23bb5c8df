"""The real action image: docker build of the Dockerfile, docker run as GitHub runs it.

Needs a Docker engine.  scripts/docker-setup.sh starts dockerd, makes the
debian:bookworm-slim base with debootstrap (no registry here) and builds the
image.  Where Docker cannot start the tests skip, saying why; with
GBFT_REQUIRE_DOCKER=1 (set by .ci/run) they fail instead, so CI cannot pass
by skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gbft_action.report.render import TRACKING_TITLES

from .conftest import ROOT
from .github_fake import GitHubFake

pytestmark = pytest.mark.slow
TAG = "gbft-action:test"
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"


@pytest.fixture(scope="module")
def image() -> str:
    why = ""
    if shutil.which("docker") is None and not Path(DOCKER).exists():
        why = "no docker client"
    else:
        r = subprocess.run([str(ROOT / "scripts" / "docker-setup.sh"), TAG], capture_output=True, text=True,
                           timeout=1800)
        if r.returncode != 0:
            why = f"docker-setup.sh failed ({r.returncode}): {r.stderr.strip()[-800:]}"
    if why:
        if os.environ.get("GBFT_REQUIRE_DOCKER") == "1":
            pytest.fail(f"container tests are required here but Docker is unavailable: {why}")
        pytest.skip(f"Docker unavailable: {why}")
    return TAG


def docker_run(ws: Path, inputs: dict[str, str], network: str = "none", extra_env: dict[str, str] | None = None,
               timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {"GITHUB_WORKSPACE": "/github/workspace", "GITHUB_OUTPUT": "/github/workspace/out.txt",
           "GITHUB_STEP_SUMMARY": "/github/workspace/summary.md", "GITHUB_REPOSITORY": "alibaba/MNN",
           **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}, **(extra_env or {})}
    argv = [DOCKER, "run", "--rm", f"--network={network}", "-v", f"{ws}:/github/workspace",
            "-w", "/github/workspace"]
    for k, v in env.items():
        argv += ["-e", f"{k}={v}"]
    return subprocess.run([*argv, TAG], capture_output=True, text=True, timeout=timeout)


def outputs(ws: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (ws / "out.txt").read_text().splitlines())


def test_container_fuzzes_offline_and_writes_outputs(image, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    r = docker_run(ws, {"budget-seconds": "60", "seed": "21", "report": "summary", "fail-on": "never"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = outputs(ws)
    assert int(out["models"]) > 100 and int(out["failures"]) > 0
    assert out["report-dir"] == "/github/workspace/gbft-out"
    assert (ws / "summary.md").read_text().startswith("## gbft-action: mnn")
    s = json.loads((ws / "gbft-out" / "summary.json").read_text())
    assert s["engine"]["name"] == "mnn" and s["models"] == int(out["models"])


def test_container_bad_input_fails_with_one_line(image, tmp_path):
    r = docker_run(tmp_path, {"budget-seconds": "ten"}, timeout=120)
    assert r.returncode == 2 and "budget-seconds" in r.stderr and r.stderr.strip().count("\n") == 0


def test_container_reports_to_the_github_server(image, tmp_path):
    token = "ghp_containerTestToken0123456789abcdefABCD"
    with GitHubFake(token=token) as fake:
        fake.add_repo("alibaba/MNN")
        r = docker_run(tmp_path, {"budget-seconds": "60", "seed": "21", "report": "issues", "github-token": token,
                                  "max-new-issues": "3", "fail-on": "never"}, network="host",
                       extra_env={"GITHUB_API_URL": fake.base_url})
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert outputs(tmp_path)["issues-filed"] == "3"
        filed = [i for i in fake.issues("alibaba/MNN") if i["labels"]]
        # The quota caps root causes; one tracking issue per summarised class may come on top.
        tracking = set(TRACKING_TITLES.values())
        assert len([i for i in filed if i["title"] not in tracking]) == 3
        assert len(filed) - 3 <= len(tracking)
        assert token not in r.stdout + r.stderr
        fake.assert_no_violations()


ENGINE_SOURCE = ROOT / "tests" / "data" / "engine_source"
COMMAND_ENGINE = ROOT / "tests" / "data" / "command_engine"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_container_builds_the_pr_and_its_merge_base_from_source_and_names_the_regression(image, tmp_path):
    # master: a C converter front that refuses nothing; the PR makes it refuse Tanh.
    ws = tmp_path / "ws"
    shutil.copytree(ENGINE_SOURCE, ws)
    for script in ("convert.py", "run.py"):  # MNN's converter and runner behind the C front
        shutil.copy(COMMAND_ENGINE / script, ws / script)
    _git(ws, "init", "-q", "-b", "master")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    _git(ws, "checkout", "-qb", "pr")
    (ws / "reject.h").write_text('#define REJECT "Tanh"\n')
    _git(ws, "commit", "-qam", "pr: refuse Tanh")
    r = docker_run(ws, {"engine": "command", "build-command": 'make && cp convert convert.py run.py "$GBFT_BUILD_OUT"/',
                        "base-ref": "master", "converter-command": "{build}/convert {model} {artifact}",
                        "runner-command": "python3 {build}/run.py {artifact} {inputs} {outputs_dir} {outputs}",
                        "budget-seconds": "60", "blocks": "2-4", "seed": "4", "fail-on": "new"}, timeout=400)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    out = outputs(ws)
    assert int(out["new-failures"]) >= 1 and out["base-build-cached"] == "false" and out["build-seconds"]
    # ccache served the base build: scan.c is the same in both trees, convert.c is not.
    assert "base build: " in r.stdout and "ccache 1 hits / 1 misses" in r.stdout, r.stdout[-2000:]
    headline = (ws / "summary.md").read_text().splitlines()[2]
    assert headline.startswith("**") and "new failure" in headline and "Tanh" in headline, headline
    # A build that does not compile ends the step with exit 4 and one error line; no model runs.
    (ws / "gbft-build").rename(ws / "old-build")
    (ws / "convert.c").write_text("this is not C\n")
    r = docker_run(ws, {"engine": "command", "build-command": "make", "converter-command": "x {model}",
                        "runner-command": "y", "output-dir": "out2"}, timeout=120)
    assert r.returncode == 4, r.stdout[-2000:]
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1 and "the PR build failed (exit 2): make" in errors[0], errors
    assert not (ws / "out2" / "summary.json").exists()
