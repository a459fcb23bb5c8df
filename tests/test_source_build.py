"""Engine builds from source (knowledge/source.py, input build-command): real git, real bash.

The builds here are toy commands on a toy repository; the container test builds a C engine
inside the image, and BENCHMARKS records MNN 3.6.1 built from source there."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gbft_action.action.config import ActionConfig, ConfigError
from gbft_action.action.main import EXIT_BUILD, main
from gbft_action.knowledge.source import BuildFailed, BuildPlan

# Writes the tree's VERSION into the build; refuses to build a tree holding BROKEN.
COMMAND = 'test ! -e BROKEN || { echo "error: broken tree" >&2; exit 3; }; cp VERSION "$GBFT_BUILD_OUT"/'


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """master at "base"; the checked-out branch pr one commit ahead, at "pr"."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "master")
    (ws / "VERSION").write_text("base\n")
    git(ws, "add", "VERSION")
    git(ws, "commit", "-qm", "base")
    git(ws, "checkout", "-qb", "pr")
    (ws / "VERSION").write_text("pr\n")
    git(ws, "commit", "-qam", "pr")
    return ws


def _gone(pid: int, wait: float = 5.0) -> bool:
    """Whether the process ended (gone, or a zombie its new parent has not reaped yet)."""
    import time

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status")
        try:
            if "State:\tZ" in status.read_text():
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def plan(ws: Path, command: str = COMMAND, base_ref: str = "master") -> BuildPlan:
    return BuildPlan(command, ws, ws / "gbft-build" / "pr", ws / "gbft-build" / "base", base_ref,
                     ws / ".gbft-ccache", ws / "gbft-out")


def test_the_pr_builds_from_the_workspace_and_the_base_from_the_merge_base(repo):
    records = plan(repo).run()
    assert (repo / "gbft-build/pr/VERSION").read_text() == "pr\n"
    assert (repo / "gbft-build/base/VERSION").read_text() == "base\n"
    assert [r.name for r in records] == ["PR", "base"] and not any(r.cached for r in records)
    assert records[1].commit == git(repo, "rev-parse", "master")
    assert (repo / "gbft-out" / "build-base.log").exists()


def test_a_base_build_restored_from_the_cache_is_not_rebuilt(repo):
    (repo / "gbft-build/base").mkdir(parents=True)
    (repo / "gbft-build/base/VERSION").write_text("restored\n")
    # The base tree would fail to build: a rebuild would show.
    git(repo, "checkout", "-q", "master")
    (repo / "BROKEN").write_text("")
    git(repo, "add", "BROKEN")
    git(repo, "commit", "-qm", "break the base")
    git(repo, "checkout", "-q", "pr")
    git(repo, "merge", "-q", "master", "-m", "merge")
    git(repo, "rm", "-q", "BROKEN")
    git(repo, "commit", "-qm", "fix")
    base = plan(repo).run()[1]
    assert base.cached and base.commit == git(repo, "rev-parse", "master")
    assert (repo / "gbft-build/base/VERSION").read_text() == "restored\n"


def test_a_failing_build_is_one_line_naming_the_build_its_command_and_its_last_output(repo):
    (repo / "BROKEN").write_text("")
    with pytest.raises(BuildFailed) as e:
        plan(repo).run()
    line = str(e.value)
    assert "\n" not in line and line.startswith("the PR build failed (exit 3)")
    assert COMMAND in line and line.endswith("error: broken tree")


def test_nothing_a_build_started_outlives_it(repo, tmp_path):
    import time

    pidfile = tmp_path / "daemon.pid"
    plan(repo, command=f'sleep 120 & echo $! > {pidfile}; cp VERSION "$GBFT_BUILD_OUT"/', base_ref="").run()
    assert _gone(int(pidfile.read_text()))  # it would have run on into the fuzzing budget


def test_a_build_that_leaves_nothing_is_a_failed_build(repo):
    with pytest.raises(BuildFailed, match=r"the PR build left nothing in \$GBFT_BUILD_OUT"):
        plan(repo, command="true").run()


def test_without_the_history_there_is_no_merge_base_and_the_error_says_what_to_fetch(repo, tmp_path):
    with pytest.raises(BuildFailed, match="fetch-depth: 0"):
        plan(repo, base_ref="no-such-branch").run()


def test_the_build_gets_no_action_input_and_no_token(repo, monkeypatch):
    monkeypatch.setenv("INPUT_GITHUB-TOKEN", "ghp_secret0123456789")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "runtime-secret")
    plan(repo, command='env > "$GBFT_BUILD_OUT/env"', base_ref="").run()
    seen = (repo / "gbft-build/pr/env").read_text()
    assert "ghp_secret" not in seen and "runtime-secret" not in seen and "GBFT_BUILD_OUT=" in seen


def test_the_action_ends_a_failed_build_with_exit_4_and_runs_no_model(repo, tmp_path, capsys, monkeypatch):
    (repo / "BROKEN").write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    env = {"GITHUB_WORKSPACE": str(repo), "INPUT_BUILD-COMMAND": COMMAND, "INPUT_BASE-REF": "master"}
    assert main(env) == EXIT_BUILD
    printed = capsys.readouterr().out
    assert "::error title=gbft-action: build failed::the PR build failed (exit 3)" in printed
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## gbft-action: the PR build failed") and "error: broken tree" in summary
    assert not (repo / "gbft-out" / "summary.json").exists()


def test_build_inputs_are_checked_before_anything_runs(repo):
    with pytest.raises(ConfigError, match="'base-ref' needs 'build-command'"):
        ActionConfig.from_env({"GITHUB_WORKSPACE": str(repo), "INPUT_BASE-REF": "master"}).validate()
    (repo / "gbft-build/pr").mkdir(parents=True)
    (repo / "gbft-build/pr/old.whl").write_text("")
    with pytest.raises(ConfigError, match="must not exist yet or be an empty folder"):
        ActionConfig.from_env({"GITHUB_WORKSPACE": str(repo), "INPUT_BUILD-COMMAND": COMMAND}).validate()
    cfg = ActionConfig.from_env({"GITHUB_WORKSPACE": str(repo), "INPUT_BUILD-COMMAND": COMMAND,
                                 "INPUT_ENGINE-BUILD": "dist/pr", "INPUT_BASE-REF": "master"}).validate()
    assert (cfg.pr_build_dir, cfg.base_build_dir) == ("dist/pr", "gbft-build/base")
    # Without build-command, a build folder is used as it is: it must exist.
    for name in ("ENGINE-BUILD", "BASE-BUILD"):
        with pytest.raises(ConfigError, match="dist/pr does not exist in the workspace"):
            ActionConfig.from_env({"GITHUB_WORKSPACE": str(repo), f"INPUT_{name}": "dist/pr"}).validate()
    assert json.dumps(cfg.base_ref) == '"master"'


def test_a_cancelled_job_kills_the_whole_build_and_ends_with_the_build_exit_code(repo, tmp_path):
    import os
    import signal
    import sys
    import time

    from .conftest import ROOT

    pidfile = tmp_path / "grandchild.pid"
    env = {**os.environ, "GITHUB_WORKSPACE": str(repo),
           # bash starts a grandchild; only killing the process group stops it.
           "INPUT_BUILD-COMMAND": f"sleep 120 & echo $! > {pidfile}; wait"}
    p = subprocess.Popen([sys.executable, "-m", "gbft_action.cli", "action"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()[0]
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert p.returncode == EXIT_BUILD and "the build was cancelled" in out, out
    assert _gone(int(pidfile.read_text()))
