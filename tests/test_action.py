"""The GitHub Action entrypoint (gbft action) as GitHub runs it: INPUT_* in, files out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gbft_action.action.config import INPUTS, KNOB_INPUTS, ActionConfig, ConfigError
from gbft_action.action.main import exit_code
from gbft_action.bugs.triage import tally
from gbft_action.records import Summary

from .conftest import ROOT, gbft_cmd

OUTPUTS = {"models", "failures", "fingerprints", "new-failures", "new-fingerprints", "changed", "fixed", "pre-existing",
           "issues-filed", "coverage-olc", "frontends", "report-dir", "build-seconds", "base-build-seconds", "base-build-cached"}


def action_env(ws: Path, **inputs: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
    env.update({"GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(ws / "out.txt"),
                "GITHUB_STEP_SUMMARY": str(ws / "summary.md"), "GITHUB_REPOSITORY": "alibaba/MNN"})
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    return env


def outputs(ws: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (ws / "out.txt").read_text().splitlines())


def test_action_yml_inputs_are_exactly_what_the_entrypoint_reads():
    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    assert set(spec["inputs"]) == set(INPUTS) | set(KNOB_INPUTS) and not set(INPUTS) & set(KNOB_INPUTS)
    assert set(spec["outputs"]) == OUTPUTS
    assert spec["runs"] == {"using": "docker", "image": "Dockerfile"}
    for name, default in [*((n, d) for n, (_, d) in INPUTS.items()), *KNOB_INPUTS.items()]:
        assert str(spec["inputs"][name].get("default", "")) == default, name
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    # GitHub builds it with no build argument: the base is Debian bookworm's (Python 3.11).
    assert "ARG BASE=debian:bookworm-slim" in lines and lines[lines.index("ARG BASE=debian:bookworm-slim") + 1] == "FROM ${BASE}"


@pytest.mark.parametrize("name,value,words", [
    ("budget-seconds", "ten", ["budget-seconds", "ten", "seconds"]),
    ("fail-on", "sometimes", ["fail-on", "new, any, never"]),
    ("report", "email", ["report", "issues, summary, none"]),
    ("blocks", "5-2", ["blocks", "MIN-MAX"]),
    ("engine", "tvm", ["engine", "mnn, command"]),
    ("chooser", "smart", ["chooser", "mcts, random, learned"]),
    ("guide", "g", ["guide", "chooser to learned"]),
    ("symptom-policy", "precision=loud", ["symptom-policy", "'loud'", "report, summary, ignore"]),
    ("symptom-policy", "rounding=report", ["symptom-policy", "'rounding'", "wrong-result, nan-inf"]),
    ("symptom-policy", "precision", ["symptom-policy", "CLASS=POLICY"]),
])
def test_bad_input_is_one_line_naming_it(name, value, words):
    with pytest.raises(ConfigError) as e:
        ActionConfig.from_env({f"INPUT_{name.upper()}": value}).validate()
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words)


def test_symptom_policy_is_parsed_once_for_the_action_and_the_cli():
    from gbft_action.policy import DEFAULT_POLICY, POLICIES, SYMPTOMS, parse_policy, policy_for
    from gbft_action.cli import build_parser

    assert set(DEFAULT_POLICY) == set(SYMPTOMS) and set(DEFAULT_POLICY.values()) <= set(POLICIES)
    assert parse_policy("") == {} and parse_policy(" precision=report, nan-inf=summary,") == {
        "precision": "report", "nan-inf": "summary"}
    cfg = ActionConfig.from_env({"INPUT_SYMPTOM-POLICY": "precision=report"}).validate()
    assert cfg.knob_values()["symptom_policy"] == {"precision": "report"}
    assert ActionConfig.from_env({}).validate().knob_values()["symptom_policy"] == {}
    assert policy_for("precision", cfg.knob_values()["symptom_policy"]) == "report" and policy_for("precision", {}) == "summary"
    assert policy_for("tie") == "ignore" and policy_for("a-class-from-a-newer-campaign") == "report"
    args = build_parser().parse_args(["fuzz", "--symptom-policy", "tie=report"])
    assert args.symptom_policy == {"tie": "report"}
    for bad in ("tie=maybe", "=report", "tie", "tie=report,rounding=ignore"):
        with pytest.raises(ValueError) as e:
            parse_policy(bad)
        assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_bad_input_fails_the_step(tmp_path):
    r = subprocess.run([*gbft_cmd(), "action"], env=action_env(tmp_path, **{"budget-seconds": "ten"}),
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "budget-seconds" in r.stderr
    assert "::error" in r.stdout and "budget-seconds" in r.stdout


def test_token_is_required_for_issues_and_never_shown():
    with pytest.raises(ConfigError, match="github-token"):
        ActionConfig.from_env({"INPUT_REPORT": "issues"}).validate()
    cfg = ActionConfig.from_env({"INPUT_GITHUB-TOKEN": "ghp_secretvalue", "GITHUB_REPOSITORY": "a/b"})
    assert "ghp_secretvalue" not in repr(cfg) and cfg.repository == "a/b"


def test_exit_code_mapping():
    assert exit_code("new", failures=3, new_failures=0) == 0
    assert exit_code("new", failures=3, new_failures=1) == 1
    assert exit_code("any", failures=1, new_failures=0) == 1
    assert exit_code("never", failures=9, new_failures=9) == 0


@pytest.mark.slow
def test_action_run_writes_outputs_summary_and_guards_the_log(tmp_path):
    t0 = time.monotonic()
    r = subprocess.run([*gbft_cmd(), "action"], env=action_env(tmp_path, **{
        "budget-seconds": "40", "seed": "21", "report": "summary", "fail-on": "any"}),
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert time.monotonic() - t0 < 40 + 15
    out = outputs(tmp_path)
    assert set(out) == OUTPUTS
    assert int(out["models"]) > 100 and int(out["failures"]) > 0
    assert r.returncode == 1  # fail-on: any, and MNN 3.6.1 has bugs
    assert 0 < float(out["coverage-olc"]) <= 1 and Path(out["report-dir"]) == tmp_path / "gbft-out"
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## gbft-action: mnn") and "| status | count |" in summary
    lines = r.stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("::stop-commands::"))
    token = lines[start].split("::")[2]
    assert f"::{token}::" in lines[start + 1:]
    assert sum(x.startswith("::error") for x in lines) <= 10


@pytest.mark.slow
def test_the_action_on_two_front_ends_exits_as_fail_on_says_with_figures_per_front_end(tmp_path):
    # A real mixed campaign's summary.json, read by the action's own outputs (a summary built from
    # dicts once hid an AttributeError here that a user met).
    r = subprocess.run([*gbft_cmd(), "action"], env=action_env(tmp_path, **{
        "budget-seconds": "30", "seed": "4", "report": "summary", "fail-on": "any", "frontend": "tf,onnx"}),
        capture_output=True, text=True, cwd=ROOT, timeout=150)
    assert "Traceback" not in r.stderr and r.returncode == 1, r.stderr[-2000:]  # MNN 3.6.1 fails on both
    out = outputs(tmp_path)
    per = json.loads(out["frontends"])
    assert set(per) == {"tf", "onnx"} and all(v["models"] > 0 for v in per.values())
    assert sum(v["models"] for v in per.values()) == int(out["models"])
    assert {x.split("=")[0] for x in out["coverage-olc"].split()} == {"tf", "onnx"}
    (tmp_path / "n").mkdir()
    never = subprocess.run([*gbft_cmd(), "action"], env=action_env(tmp_path / "n", **{
        "budget-seconds": "20", "seed": "4", "report": "none", "fail-on": "never", "frontend": "tf,onnx"}),
        capture_output=True, text=True, cwd=ROOT, timeout=150)
    assert never.returncode == 0 and "Traceback" not in never.stderr


@pytest.mark.slow
def test_sigterm_flushes_within_five_seconds(tmp_path):
    env = action_env(tmp_path, **{"budget-seconds": "300", "seed": "3", "fail-on": "never"})
    p = subprocess.Popen([*gbft_cmd(), "action"], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    cases = tmp_path / "gbft-out" / "cases.jsonl"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (cases.exists() and cases.stat().st_size > 2000):
        time.sleep(0.2)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    so, se = p.communicate(timeout=30)
    took = time.monotonic() - t0
    summary = tmp_path / "gbft-out" / "summary.json"
    why = f"exit {p.returncode} after {took:.1f} s\n{so[-1500:]}\n{se[-3000:]}"
    assert took < 5.0 and summary.exists(), why
    s = json.loads(summary.read_text())
    assert s["stop_reason"].startswith("cancelled") and s["models"] > 0
    assert outputs(tmp_path)["models"] == str(s["models"])


# A cancelled job's SIGTERM can land in any phase of the step, not only the fuzz loop.
# Each case sends it from inside the named function (in-process, the real handler);
# the step must still end within 5 s with its outputs and summary.json written.
@pytest.mark.parametrize("where, reason, judged", [
    ("gbft_action.knowledge.builds.prepare_build", "cancelled (SIGTERM) during set-up", False),
    ("gbft_action.pipeline.Lane.start", "cancelled (SIGTERM)", False),  # from a starting thread
    ("gbft_action.campaign.Campaign._confirm", "cancelled (SIGTERM)", True),  # confirming, with a base build
    ("gbft_action.action.main._report", "budget reached", True),
])
def test_sigterm_in_any_phase_still_writes_the_outputs(monkeypatch, tmp_path, where, reason, judged):
    import gbft_action.action.main as am
    import gbft_action.knowledge.builds as builds

    module, name = where.rsplit(".", 1)
    head, last = module.rsplit(".", 1)
    owner = getattr(__import__(head, fromlist=[last]), last) if last[0].isupper() else \
        __import__(module, fromlist=[name])
    real, sent = getattr(owner, name), []

    def cancelled_here(*a, **k):
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)  # the main thread's handler runs; a worker thread carries on meanwhile
        return real(*a, **k)

    monkeypatch.setattr(owner, name, cancelled_here)
    base = name == "_confirm"
    if base:  # a base build (the installed MNN), without building a venv for it
        monkeypatch.setattr(builds, "prepare_build", lambda engine, path, d, c=None: builds.EngineBuild("mnn"))
        (tmp_path / "base").mkdir()
    # With a base build a tail of the budget is kept for confirming: 30 s leaves the loop time for a
    # model even when the workers start slowly (a loaded machine), so that the cancel meets one.
    env = action_env(tmp_path, **{"budget-seconds": "30" if base else "15", "seed": "3", "fail-on": "never",
                                  **({"base-build": "base"} if base else {})})
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = signal.getsignal(signal.SIGTERM)
    code = am.main(env)
    assert sent and time.monotonic() - sent[0] < 5.0
    assert code == am.EXIT_OK and signal.getsignal(signal.SIGTERM) is before
    s = json.loads((tmp_path / "gbft-out" / "summary.json").read_text())
    out = outputs(tmp_path)
    assert s["stop_reason"] == reason and out["models"] == str(s["models"])
    assert (s["models"] > 0) == judged and out["issues-filed"] == "0"
    # Only a confirmed failure is blamed: cut short in the confirmations, none is.
    t = tally(Summary.from_json(s))  # outputs in the headline's unit: root causes, fingerprints beside them
    assert out["new-failures"] == ("0" if base else str(t.new)) and out["failures"] == str(t.failures)
    assert out["new-fingerprints"] == ("0" if base else str(len(s.get("new_failures", []))))
    if base:
        assert s["triage"]["blamed"] == [] and out["pre-existing"] == str(t.by_verdict["pre-existing"])


@pytest.mark.slow
def test_base_build_equal_to_pr_build_fails_nothing_new(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels),
                    f"MNN=={_mnn_version()}"], check=True, timeout=300)
    r = subprocess.run([*gbft_cmd(), "action"], env=action_env(tmp_path, **{
        "engine-build": str(wheels), "base-build": str(wheels), "budget-seconds": "90", "seed": "21",
        "fail-on": "new"}), capture_output=True, text=True, cwd=ROOT, timeout=200)
    assert (tmp_path / "out.txt").exists(), f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    out = outputs(tmp_path)
    s = json.loads((tmp_path / "gbft-out" / "summary.json").read_text())
    verdicts = (tmp_path / "gbft-out" / "verdicts.json").read_text()
    why = f"{r.stdout[-1500:]}\n{r.stderr[-1500:]}\nverdicts: {verdicts[-3000:]}"
    assert int(out["failures"]) > 0 and int(out["pre-existing"]) > 0, why
    assert r.returncode == 0 and out["new-failures"] == out["changed"] == "0" and not s["triage"]["blamed"], why
    assert all(f["verdict"] not in ("new", "changed") for f in s["failures"]), why
    md = (tmp_path / "summary.md").read_text()
    assert md.splitlines()[2].startswith("**No new failures**"), md[:500]


def _wheel(d: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel (name 0.0) holding ``files``."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-0.0.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    digest = {n: base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode()
              for n, c in files.items()}
    record = "".join(f"{n},sha256={digest[n]},{len(c.encode())}\n" for n, c in files.items()) + f"{info}/RECORD,,\n"
    d.mkdir(parents=True, exist_ok=True)
    whl = d / f"{name}-0.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for n, c in {**files, f"{info}/RECORD": record}.items():
            z.writestr(n, c)
    return whl


def test_a_pr_wheel_venv_sees_the_tool_and_puts_the_pr_build_first(tmp_path):
    from gbft_action.knowledge.builds import prepare_build

    _wheel(tmp_path / "build", "MNN", {"MNN/__init__.py": "BUILD = 'the pull request'\n"})
    build = prepare_build("mnn", tmp_path / "build", tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # From "/": nothing may come from the directory the step runs in.
    r = subprocess.run([build.python, "-c", "import MNN, numpy, gbft_action.workers.serve; print(MNN.BUILD)"],
                       capture_output=True, text=True, cwd="/", env=env, timeout=60)
    assert build.engine == "mnn" and r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "the pull request"  # the PR's build, not the MNN gbft itself runs with


def _mnn_version() -> str:
    from importlib.metadata import version

    return version("MNN")


def test_a_report_that_cannot_reach_github_still_writes_the_outputs(monkeypatch, tmp_path, capsys):
    import socket

    import gbft_action.action.main as am

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = action_env(tmp_path, **{"budget-seconds": "12", "seed": "3", "fail-on": "never", "report": "issues",
                                  "github-token": "ghp_" + "x" * 36})
    env["GITHUB_API_URL"] = f"http://127.0.0.1:{port}"
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code = am.main(env)
    printed = capsys.readouterr().out
    s = json.loads((tmp_path / "gbft-out" / "summary.json").read_text())
    assert code == am.EXIT_ERROR and outputs(tmp_path)["models"] == str(s["models"]) and s["models"] > 0
    errors = [line for line in printed.splitlines() if line.startswith("::error title=gbft-action: reporting")]
    assert len(errors) == 1 and "cannot reach the GitHub API" in errors[0], printed[-2000:]
    assert "x" * 36 not in printed


def _action_steps(workflow: dict) -> list[dict]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])
            if str(s.get("uses", "")).startswith("gbft-action/gbft-action@")]


def test_the_example_workflows_build_mnn_inside_the_image_as_mnn_builds_it():
    examples = {p.name: yaml.safe_load(p.read_text()) for p in (ROOT / ".github" / "examples").glob("*.yml")}
    assert set(examples) == {"gbft-pr.yml", "gbft-nightly.yml", "gbft-shards.yml", "gbft-report.yml"}
    for name, wf in examples.items():
        text = (ROOT / ".github" / "examples" / name).read_text()
        assert "pip wheel" not in text, name  # a wheel built on the runner does not install in the image
        for step in _action_steps(wf):
            assert set(step["with"]) <= set(INPUTS) | set(KNOB_INPUTS), (name, set(step["with"]) - set(INPUTS))
            if "build-command" in step["with"]:
                var = step["with"]["build-command"].removeprefix("${{ env.").removesuffix(" }}")
                assert var in ("MNN_BUILD", "MNN_COVERAGE_BUILD"), name
                build = {**wf.get("env", {}), **next(j for j in wf["jobs"].values() if step in j["steps"]).get("env", {})}[var]
                # build_deps.py makes pymnn_build/CMakeCache.txt, which setup.py opens; a stale build/
                # would put the previous build's extensions into the wheel (setuptools skips them).
                assert (build.index("build_deps.py") < build.index("rm -rf build dist") < build.index("setup.py bdist_wheel")
                        < build.index("$GBFT_BUILD_OUT"))
        # A group keeps one pending run and cancels the rest: a report dropped (reporters may race).
        assert "concurrency" not in wf and not any("concurrency" in j for j in wf["jobs"].values()), name
    # The nightly's coverage build: every object instrumented, linked against gbft's runtime, and
    # the guide trained from what it ran.
    learn = examples["gbft-nightly.yml"]["jobs"]["learn"]
    cov = learn["env"]["MNN_COVERAGE_BUILD"]
    assert "gbft coverage --runtime" in cov and cov.count("-fsanitize-coverage=trace-pc -g1") == 2 and "$RT" in cov
    runs = " ".join(s.get("run", "") for s in learn["steps"])
    assert "learn collect" in runs and "gbft learn train" in runs and "download.pytorch.org/whl/cpu" in runs
    pr = examples["gbft-pr.yml"]["jobs"]["fuzz"]
    steps = pr["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0  # the merge base must be in the history
    (action,) = _action_steps(examples["gbft-pr.yml"])
    assert action["with"]["base-ref"] == "${{ steps.base.outputs.sha }}"
    cached = {s["with"]["path"]: s["with"]["key"] for s in steps if str(s.get("uses", "")).startswith("actions/cache@")}
    cfg = ActionConfig.from_env({"INPUT_BUILD-COMMAND": "x", "INPUT_BASE-REF": "y"})
    assert cached[cfg.base_build_dir].endswith("${{ steps.base.outputs.sha }}")  # keyed by the base commit
    assert cfg.ccache_dir in cached
    assert any("ARM64" in str(m["runner"]) for m in pr["strategy"]["matrix"]["include"])
