"""``gbft action``: the Docker action's entrypoint.

One budget covers the whole step: engine set-up, fuzzing (on the base build
too, when there is one), minimisation, confirmation, and reporting.  The
verdict itself is domain knowledge (``bugs.triage``, in the campaign); this
module only reads the inputs, calls the campaign and the reporter, and writes
the outputs.  Results go to
``$GITHUB_OUTPUT``, the job summary to ``$GITHUB_STEP_SUMMARY`` (cut to 1 MiB),
at most 10 error annotations; engine text printed to the log is wrapped in
``::stop-commands::`` so it cannot run workflow commands.  SIGTERM (a
cancelled job) stops the run and flushes what is there.  The exit code is
decided in one place, ``exit_code``, from ``fail-on``; a bad input exits 2 before
anything runs, and a build (input ``build-command``) that fails exits 4: neither
green nor an engine bug.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..bugs.triage import tally
from ..records.summary import Summary
from ..records.enums import Stop, StopReason
from ..knowledge.source import BuildFailed, BuildPlan, BuildRecord
from ..report.sanitize import code_block, inline
from ..exitcodes import ActionExit
from .config import ActionConfig, ConfigError

# gbft_action.exitcodes is the one place; these names are the action's contract there.
EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_ERROR, EXIT_BUILD = (
    ActionExit.OK, ActionExit.FAILED, ActionExit.CONFIG, ActionExit.ERROR, ActionExit.BUILD)
SUMMARY_LIMIT = 1 << 20
MAX_ANNOTATIONS = 10
REPORT_RESERVE_S = 20.0  # of the budget, kept for reporting


def exit_code(fail_on: str, failures: int, new_failures: int, incomplete: bool = False) -> int:
    """The one place the result becomes the step's exit code.  ``incomplete`` (the report
    failed, or the output disk filled) is an error even on a green verdict: the issues the
    workflow asked for were not filed, or the models it paid for were not all judged."""
    if fail_on == "any" and failures:
        return EXIT_FAILED
    if fail_on == "new" and new_failures:
        return EXIT_FAILED
    return EXIT_ERROR if incomplete else EXIT_OK


def main(env: dict[str, str] | None = None) -> int:
    t0 = time.monotonic()
    try:
        cfg = ActionConfig.from_env(env).validate()
    except ConfigError as e:
        print(f"::error title=gbft-action: bad input::{e}")
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        builds = _build(cfg)
        if builds:
            t0 = time.monotonic()  # the fuzzing budget stays the fuzzing budget: builds come on top
        return _run(cfg, t0, builds)
    except BuildFailed as e:
        return _build_failed(e)
    except (OSError, RuntimeError, ValueError, subprocess.CalledProcessError) as e:
        print(f"::error title=gbft-action failed::{inline(str(e), 500)}")
        return EXIT_ERROR


def _build(cfg: ActionConfig) -> list[BuildRecord]:
    """With build-command: the PR's build, then the base's at the merge base (or restored)."""
    if not cfg.build_command:
        return []
    out = cfg.path(cfg.output_dir)
    plan = BuildPlan(cfg.build_command, cfg.path("."), cfg.path(cfg.pr_build_dir),
                     cfg.path(cfg.base_build_dir) if cfg.base_build_dir else None, cfg.base_ref,
                     cfg.path(cfg.ccache_dir), out)
    cancel = _Cancel()  # a cancelled job kills the build's process group, not only bash
    try:
        records = plan.run()
    except Cancelled:
        raise BuildFailed("the build was cancelled (SIGTERM)") from None
    finally:
        cancel.restore()
    for r in records:
        print(f"gbft-action: {r.line()}")
    return records


def _build_failed(e: BuildFailed) -> int:
    """A broken build is neither green nor an engine bug: its own exit code, one error line, the
    end of its log in the job summary (as untrusted text: it is the pull request's output)."""
    print(f"::error title=gbft-action: build failed::{inline(str(e), 500)}")
    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}\n{e.log_tail}\n::{token}::")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(f"## gbft-action: {inline(str(e), 500)}\n\nNo model was run: the verdict needs both "
                    f"builds.\n\n{code_block(e.log_tail or '(no output)')}\n")
    return EXIT_BUILD


def _run(cfg: ActionConfig, t0: float, builds: list[BuildRecord]) -> int:
    out = cfg.path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    cancel = _Cancel()
    summary = Summary(0, stop_reason=Stop(StopReason.OUTSIDE, "cancelled (SIGTERM) during set-up"))
    filed, report_failed = 0, False
    try:
        summary = cancel.during(_campaign(cfg, out, t0))
        if not cancel.yes:
            filed, report_failed = _report(cfg, out)
        cancel.disarm()  # last in the try: from here a signal cannot cut the outputs short
    except Cancelled:
        cancel.disarm()  # whatever was judged and written stays; outputs and summary below
    try:
        if cancel.yes and not (out / "summary.json").exists():
            summary.write(out)
        _write_outputs(cfg, out, summary, filed, builds)
    finally:
        cancel.restore()
    from ..campaign import cut_short, disk_filled

    if cut_short(summary):  # a verdict over fewer models than the budget allowed: the step errs
        what = "output disk full" if disk_filled(summary) else "the run stopped on a harness error"
        print(f"::error title=gbft-action: {what}::{inline(str(summary.stop_reason), 300)}; "
              f"the summary covers the {summary.models} models judged")
    t = tally(summary)
    return exit_code(cfg.fail_on, t.failures, t.new, report_failed or bool(cut_short(summary)))


def _campaign(cfg: ActionConfig, out: Path, t0: float) -> Any:
    """Engine builds set up (part of the step's budget), then the campaign for what is left."""
    from ..campaign import Campaign
    from ..records.config import configure
    from ..knowledge.builds import Commands, prepare_builds

    deadline = t0 + cfg.budget
    pr, base = prepare_builds(cfg.engine, cfg.path(cfg.pr_build_dir) if cfg.pr_build_dir else None,
                              cfg.path(cfg.base_build_dir) if cfg.base_build_dir else None, out,
                              Commands(cfg.converter_command, cfg.runner_command))
    reserve = 3.0
    if cfg.report == "issues":
        reserve += min(REPORT_RESERVE_S, 0.15 * cfg.budget)
    fuzz = configure(dict(out=out, engine=pr.engine, budget=max(5.0, deadline - time.monotonic() - reserve),
                          **cfg.knob_values(), corpus=cfg.corpus_file, frontend=cfg.frontends,
                          state=str(cfg.path(cfg.state_dir)) if cfg.state_dir else "",
                          engine_python=pr.python, engine_env=dict(pr.env), base=base,
                          platform_label=cfg.platform_label, shard=cfg.shard_pair, opsets=cfg.opsets))
    return Campaign(fuzz)


class Cancelled(Exception):
    """SIGTERM (a cancelled job) outside the fuzz loop: set-up or reporting."""


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

    def during(self, camp: Any) -> Summary:
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


def _report(cfg: ActionConfig, out: Path) -> tuple[int, bool]:
    """(root-cause issues filed, whether reporting failed as a whole).  A failure here never costs the
    outputs or the verdict: it is one error line, and the step's outputs are still written."""
    from ..report.local import ReportWriteError
    from ..report.render import RunContext
    from ..report.filing import ReportConfig
    from ..report.reporter import report
    from ..report.choose import make_tracker

    kind = {"issues": "github", "summary": "none", "none": "none"}[cfg.report]
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    try:
        tracker = make_tracker(kind, out=out, repo=cfg.repository, token=cfg.github_token, base_url=api)
        res = report(ReportConfig(out, max_new_issues=int(cfg.max_new_issues)), tracker, RunContext.from_env())
    except (ValueError, OSError, ReportWriteError) as e:  # GitHub unusable, the output unreadable or unwritable
        print(f"::error title=gbft-action: reporting failed::{inline(str(e), 500)}")
        return 0, True
    for x in res.failed[:MAX_ANNOTATIONS]:
        print(f"::warning title=gbft-action: GitHub refused a write::{inline(x.title, 100)}: {inline(x.reason, 200)}")
    return (res.bugs_filed if kind == "github" else 0), False


# --------------------------------------------------------------------------- outputs


def _write_outputs(cfg: ActionConfig, out: Path, summary: Summary, filed: int,
                   builds: Sequence[BuildRecord] = ()) -> None:
    t = tally(summary)  # the headline's and the tables' unit: root causes, fingerprints as detail
    outputs = {"models": summary.models, "failures": t.failures, "fingerprints": t.fingerprints,
               "new-failures": t.new, "new-fingerprints": t.new_fingerprints,
               "changed": t.by_verdict.get("changed", 0), "fixed": t.by_verdict.get("fixed", 0),
               "pre-existing": t.by_verdict.get("pre-existing", 0), "issues-filed": filed,
               "coverage-olc": _olc(summary), "frontends": _per_frontend(summary), "report-dir": str(out),
               **_build_outputs(builds)}
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            for k, v in outputs.items():
                f.write(f"{k}={v}\n")
    md_path = out / "summary.md"
    md = md_path.read_text() if md_path.exists() else _plain_summary(summary)
    if len(md.encode()) > SUMMARY_LIMIT:
        md = md.encode()[: SUMMARY_LIMIT - 200].decode(errors="ignore") + "\n\n(summary cut to 1 MiB)\n"
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(md)
    _annotate(summary, set(summary.blamed))
    print(json.dumps(outputs))


def _build_outputs(builds: Sequence[BuildRecord]) -> dict[str, str]:
    """build-seconds, base-build-seconds, base-build-cached (empty without build-command)."""
    by = {r.name: r for r in builds}
    pr, base = by.get("PR"), by.get("base")
    return {"build-seconds": f"{pr.seconds:.0f}" if pr else "",
            "base-build-seconds": f"{base.seconds:.0f}" if base else "",
            "base-build-cached": ("true" if base.cached else "false") if base else ""}


def _olc(summary: Summary) -> str:
    """OLC as a number; a mixed campaign's per front end ("tf=0.4100 onnx=0.3300"): one
    figure over two corpora would measure neither."""
    if summary.frontends:
        return " ".join(f"{n}={_olc_of(fe.coverage)}" for n, fe in summary.frontends.items())
    return _olc_of(summary.coverage)


def _per_frontend(summary: Summary) -> str:
    """A mixed campaign's figures per front end, as one line of JSON (models, distinct failures,
    OLC); "" for one front end (the other outputs are its figures)."""
    if not summary.frontends:
        return ""
    return json.dumps({n: {"models": fe.models, "failures": fe.unique_failures, "coverage-olc": float(_olc_of(fe.coverage))}
                       for n, fe in summary.frontends.items()}, sort_keys=True, separators=(",", ":"))


def _olc_of(coverage: Any) -> str:
    olc = coverage.get("OLC", 0.0) if isinstance(coverage, dict) else 0.0
    return f"{olc if isinstance(olc, (int, float)) else 0.0:.4f}"


def _plain_summary(summary: Summary) -> str:
    from ..bugs.triage import headline

    eng = summary.engine
    return (f"## gbft-action: {eng.engine} {eng.version}\n\n{headline(summary)}\n\n"
            f"{summary.models} models, {summary.unique_failures} distinct failures ({summary.stop_reason or ''}).\n")


def _annotate(summary: Summary, new: set[str]) -> None:
    """At most 10 error annotations, for new bugs; engine text inside stop-commands."""
    shown = [f for f in summary.failures if f.key in new][:MAX_ANNOTATIONS]
    for f in shown:
        print(f"::error title=gbft: new bug {f.key}::{inline(f.title or f.message, 200)}")
    token = secrets.token_hex(16)  # engines cannot guess it, so cannot end the block
    print(f"::stop-commands::{token}")
    for f in summary.failures:
        print(f"{f.count:6d}  {f.key}  {f.title}  {f.message[:200]}")
    print(f"::{token}::")
