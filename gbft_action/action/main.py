"""``gbft action``: the Docker action's entrypoint.

One budget covers the whole step: engine set-up, fuzzing, minimisation,
replaying new bugs on the base build, and reporting.  Results go to
``$GITHUB_OUTPUT``, the job summary to ``$GITHUB_STEP_SUMMARY`` (cut to 1 MiB),
at most 10 error annotations; engine text printed to the log is wrapped in
``::stop-commands::`` so it cannot run workflow commands.  SIGTERM (a
cancelled job) stops the run and flushes what is there.  The exit code is
decided in one place, ``exit_code``, from ``fail-on``.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import site
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Any

from ..report.sanitize import inline
from .config import ActionConfig, ConfigError

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_ERROR = 0, 1, 2, 3
SUMMARY_LIMIT = 1 << 20
MAX_ANNOTATIONS = 10
# MNN's heap-damage bugs show only some of the time.  One that shows with chance p on
# both builds passes for new with chance ((1 - p) p)^ROUNDS: at most 1 in 65,536 (p = 1/2).
ROUNDS = 8
REPORT_RESERVE_S = 20.0  # of the budget, kept for base-build replays and reporting


def exit_code(fail_on: str, failures: int, new_failures: int) -> int:
    """The one place the result becomes the step's exit code."""
    if fail_on == "any" and failures:
        return EXIT_FAILED
    if fail_on == "new" and new_failures:
        return EXIT_FAILED
    return EXIT_OK


def main(env: dict[str, str] | None = None) -> int:
    t0 = time.monotonic()
    try:
        cfg = ActionConfig.from_env(env).validate()
    except ConfigError as e:
        print(f"::error title=gbft-action: bad input::{e}")
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return _run(cfg, t0)
    except (OSError, RuntimeError, ValueError, subprocess.CalledProcessError) as e:
        print(f"::error title=gbft-action failed::{inline(str(e), 500)}")
        return EXIT_ERROR


def _run(cfg: ActionConfig, t0: float) -> int:
    out = cfg.path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    cancel = _Cancel()
    summary: dict[str, Any] = {"models": 0, "unique_failures": 0, "stop_reason": "cancelled (SIGTERM) during set-up"}
    verdicts: dict[str, str] = {}
    new: list[str] = []
    filed = 0
    try:
        camp, base_python = _campaign(cfg, out, t0)
        summary = cancel.during(camp)
        if not cancel.yes:
            verdicts = _replay_on_base(camp.cfg.engine, out, summary, t0 + cfg.budget, camp.cfg.engine_python,
                                       base_python) if cfg.base_build else {}
            new = [f for f in summary.get("new_failures", [])
                   if verdicts.get(f, "new") == "new" and not _flaky(out, f)]
            filed = _report(cfg, out)
        cancel.disarm()  # last in the try: from here a signal cannot cut the outputs short
    except Cancelled:
        cancel.disarm()  # whatever was judged and written stays; outputs and summary below
        if cfg.base_build and not verdicts:  # cut short in the replays: none of them is known new
            verdicts = {f: "unchecked" for f in summary.get("new_failures", [])}
    try:
        if cancel.yes and not (out / "summary.json").exists():
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        _write_outputs(cfg, out, summary, new, verdicts, filed)
    finally:
        cancel.restore()
    return exit_code(cfg.fail_on, summary["unique_failures"], len(new))


def _campaign(cfg: ActionConfig, out: Path, t0: float) -> tuple[Any, str]:
    """Engine builds set up (part of the step's budget); the campaign for what is left,
    and the base build's python."""
    from ..campaign import Campaign, FuzzConfig

    deadline = t0 + cfg.budget
    engine, python = prepare_engine(cfg, cfg.engine_build, out / ".engine-pr")
    # The base build's venv too, before the fuzz budget is computed: set-up is part of the
    # step's budget, and the reserve below is then left whole for the replays themselves.
    base_python = prepare_engine(cfg, cfg.base_build, out / ".engine-base")[1] if cfg.base_build else ""
    reserve = 3.0
    if cfg.report == "issues":
        reserve += min(REPORT_RESERVE_S, 0.15 * cfg.budget)
    if cfg.base_build:  # replaying each new bug on the base build: about half a second each
        reserve += 0.3 * cfg.budget
    fuzz = FuzzConfig(out=out, engine=engine, budget=max(5.0, deadline - time.monotonic() - reserve),
                      seed=int(cfg.seed), blocks=cfg.block_range,
                      corpus=str(cfg.path(cfg.corpus)) if cfg.corpus else FuzzConfig.__dataclass_fields__[
                          "corpus"].default, state=str(cfg.path(cfg.state_dir)) if cfg.state_dir else "",
                      engine_python=python, platform_label=cfg.platform_label)
    return Campaign(fuzz), base_python


def _flaky(out: Path, fid: str) -> bool:
    """A bug whose own replays disagree cannot be pinned on this pull request: it never fails the step."""
    path = out / "bugs" / fid / "meta.json"
    return path.exists() and json.loads(path.read_text()).get("flaky") is True


class Cancelled(Exception):
    """SIGTERM (a cancelled job) outside the fuzz loop: set-up, base-build replays, reporting."""


class _Cancel:
    """SIGTERM and SIGINT for the whole step.

    While the campaign runs, a signal asks it to stop at once: it abandons the cases in
    flight and writes its summary from what was judged.  Before and after, the signal
    raises ``Cancelled`` where the step is, and the outputs are written from what there is.
    """

    def __init__(self) -> None:
        self.yes = False
        self._armed = True
        self._camp: Any = None
        self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGTERM, signal.SIGINT)}

    def _handler(self, signum: int, frame: Any) -> None:
        first, self.yes = not self.yes, True
        if self._camp is not None:
            self._camp.request_stop("cancelled (SIGTERM)", hard=True)
        elif first and self._armed:
            raise Cancelled()

    def during(self, camp: Any) -> dict[str, Any]:
        self._camp = camp
        try:
            return camp.run()
        finally:
            self._camp = None

    def disarm(self) -> None:
        self._armed = False

    def restore(self) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)


# --------------------------------------------------------------------------- engine builds


def prepare_engine(cfg: ActionConfig, build: str, venv_dir: Path) -> tuple[str, str]:
    """(engine name for the registry, python for the engine worker) for a build.

    An MNN wheel from the pull request goes into a private virtual environment
    (with the tool's own packages visible underneath), so the tool's
    dependencies are untouched; installing a local wheel needs no network.
    """
    if cfg.engine == "command":
        os.environ["GBFT_CONVERTER_COMMAND"] = cfg.converter_command
        os.environ["GBFT_RUNNER_COMMAND"] = cfg.runner_command
        if build:
            os.environ["GBFT_ENGINE_BUILD"] = str(cfg.path(build))
        return "command", ""
    if not build:
        return "mnn", ""
    path = cfg.path(build)
    wheels = [path] if path.suffix == ".whl" else sorted(path.glob("*.whl"))
    if not wheels:
        raise ValueError(f"engine-build {build}: no MNN wheel (*.whl) there")
    venv.EnvBuilder(system_site_packages=True, clear=True, with_pip=False).create(venv_dir)
    _see_own_packages(venv_dir)
    py = venv_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-index",
                    "--no-deps", "--force-reinstall", str(wheels[0])], check=True)
    return "mnn", str(py)


def _see_own_packages(venv_dir: Path) -> None:
    """Put the tool's own site-packages behind the venv's: the worker imports gbft_action and
    its dependencies from there, the PR's MNN from the venv.

    ``system_site_packages`` only reaches the base interpreter's packages, not those of
    the environment gbft runs in (a virtual environment, an editable install).  A .pth
    line starting with "import" runs at start-up; ``addsitedir`` also runs that
    directory's own .pth files (an editable install's finder).
    """
    site_dir = next(venv_dir.glob("lib/python*/site-packages"))
    dirs = [d for d in site.getsitepackages() if Path(d).is_dir()]
    (site_dir / "zz-gbft-host.pth").write_text(f"import site; list(map(site.addsitedir, {dirs!r}))\n")


def _replay_on_base(engine: str, out: Path, summary: dict[str, Any], deadline: float,
                    pr_python: str, base_python: str) -> dict[str, str]:
    """A verdict for every new fingerprint; only "new" ones are blamed on the pull request.

    Pre-existing: the base build fails the same way (ClusterFuzzLite's rule).
    Unreproducible: the PR build itself does not fail that way when the model runs
    alone (MNN's heap damage can make a bug depend on earlier models).  Unchecked:
    the step's budget ran out before the replays could tell.
    """
    from ..pipeline import Lane, LaneConfig

    # Only the build may differ between the two: same work folder, so the same file
    # paths (and path lengths) reach the engine. MNN's heap-corruption bugs react to
    # such details, and a difference here once made a bug look new on an identical build.
    base = Lane(LaneConfig(engine, out / ".work-replay", engine_python=base_python), 0)
    pr = Lane(LaneConfig(engine, out / ".work-replay", engine_python=pr_python), 1)
    fids: list[str] = list(summary.get("new_failures", []))
    verdicts: dict[str, str] = {}
    try:  # workers start on their first call; the PR lane only if some bug needs it
        for i, fid in enumerate(fids):
            left = deadline - 5 - time.monotonic()
            if left <= 0:
                break
            # A fair share of what is left, so one hanging replay cannot starve the rest.
            share = max(2.0, left / (len(fids) - i))
            verdicts[fid] = _base_verdict(base, pr, out / "bugs" / fid, time.monotonic() + share)
    finally:
        base.stop()
        pr.stop()
    for fid in fids:
        verdicts.setdefault(fid, "unchecked")
    (out / "base_build.json").write_text(json.dumps(verdicts, indent=2, sort_keys=True) + "\n")
    pre = [f for f, v in verdicts.items() if v == "pre-existing"]
    (out / "preexisting.json").write_text(json.dumps(pre, indent=2) + "\n")
    return verdicts


def _base_verdict(base: Any, pr: Any, bundle: Path, until: float) -> str:
    """pre-existing, new, unreproducible, or unchecked when its share of time ran out first.

    Rounds of one base replay then one PR replay, each in a fresh worker, alternated so
    that whatever drifts during the step weighs on both builds alike.  Pre-existing as
    soon as the base build shows the bug; unreproducible as soon as the PR build does
    not (a sometimes-bug is not pinned on the PR); new only after ROUNDS rounds of
    both.  A verdict is never guessed from a replay the deadline cut short.
    """
    from ..bugs.fingerprint import Fingerprint
    from ..bugs.replay import SAME, load_bundle, replay

    meta, g, small = load_bundle(bundle)
    target, model = Fingerprint.from_json(meta["fingerprint"]), small or g

    def same(lane: Any) -> bool | None:
        left = until - time.monotonic()
        if left <= 0:
            return None
        v = replay(lane, model, target, budget=left, fresh=True)
        return None if v.result.aborted else v.outcome == SAME

    for _ in range(ROUNDS):
        seen = same(base)
        if seen is not False:
            return "unchecked" if seen is None else "pre-existing"
        seen = same(pr)
        if seen is not True:
            return "unchecked" if seen is None else "unreproducible"
    return "new"


def _report(cfg: ActionConfig, out: Path) -> int:
    from ..report.render import RunContext
    from ..report.reporter import ReportConfig, report
    from ..report.trackers import make_tracker

    kind = {"issues": "github", "summary": "none", "none": "none"}[cfg.report]
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    tracker = make_tracker(kind, out=out, repo=cfg.repository, token=cfg.github_token, base_url=api)
    res = report(ReportConfig(out, max_new_issues=int(cfg.max_new_issues)), tracker, RunContext.from_env())
    return len(res.filed) if kind == "github" else 0


# --------------------------------------------------------------------------- outputs


def _write_outputs(cfg: ActionConfig, out: Path, summary: dict[str, Any], new: list[str],
                   verdicts: dict[str, str], filed: int) -> None:
    cov = summary.get("coverage") or {}
    outputs = {"models": summary["models"], "failures": summary["unique_failures"], "new-failures": len(new),
               "issues-filed": filed, "coverage-olc": f"{cov.get('OLC', 0.0):.4f}", "report-dir": str(out)}
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            for k, v in outputs.items():
                f.write(f"{k}={v}\n")
    md_path = out / "summary.md"
    md = md_path.read_text() if md_path.exists() else _plain_summary(summary)
    md += _verdict_lines(verdicts)
    if len(md.encode()) > SUMMARY_LIMIT:
        md = md.encode()[: SUMMARY_LIMIT - 200].decode(errors="ignore") + "\n\n(summary cut to 1 MiB)\n"
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(md)
    _annotate(summary, set(new))
    print(json.dumps(outputs))


_VERDICT_TEXT = {"pre-existing": "Pre-existing on the base build", "unreproducible": "Not reproducible alone on the PR build",
                 "unchecked": "Not checked against the base build (budget ran out, or the job was cancelled)"}


def _verdict_lines(verdicts: dict[str, str]) -> str:
    """One line per kind of verdict that does not fail this pull request under fail-on: new."""
    lines = ""
    for kind, text in _VERDICT_TEXT.items():
        fids = sorted(f for f, v in verdicts.items() if v == kind)
        if fids:
            lines += f"\n{text} (not failing this pull request): {', '.join(fids)}\n"
    return lines


def _plain_summary(summary: dict[str, Any]) -> str:
    eng = summary.get("engine", {})
    return (f"## gbft-action: {eng.get('name', '')} {eng.get('version', '')}\n\n{summary['models']} models, "
            f"{summary['unique_failures']} distinct failures ({summary.get('stop_reason', '')}).\n")


def _annotate(summary: dict[str, Any], new: set[str]) -> None:
    """At most 10 error annotations, for new bugs; engine text inside stop-commands."""
    shown = [f for f in summary.get("failures", []) if f["key"] in new][:MAX_ANNOTATIONS]
    for f in shown:
        print(f"::error title=gbft: new bug {f['key']}::{inline(f.get('title') or f['message'], 200)}")
    token = secrets.token_hex(16)  # engines cannot guess it, so cannot end the block
    print(f"::stop-commands::{token}")
    for f in summary.get("failures", []):
        print(f"{f['count']:6d}  {f['key']}  {f.get('title') or ''}  {f['message'][:200]}")
    print(f"::{token}::")
