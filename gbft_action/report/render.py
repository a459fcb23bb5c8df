"""Rendering issues, comments and the job summary from Jinja2 templates.

Everything that came from the engine (messages, logs) passes through
``sanitize`` first; the repro script and the Mermaid diagram are our own text.
Users may point ``template_dir`` at their own templates (same names).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..bugs.bundle import ALONE_FILE, TEMPLATES, mermaid
from ..bugs.repro import STATUS_TEXT, engine_needs, render_repro
from ..graph.ir import Graph
from ..records.bundle import BundleMeta, EngineInfo
from ..records.engine_coverage import EngineCoverage
from ..records.report import ReportEntry
from ..records.summary import RootCauseRow, ShardRun, Summary
from .markers import IssueState, TrackedRow
from .sanitize import cell, code_block, finalize, prose, title, truncate_body

WHAT = {"MCF": "fails to convert a valid model", "IF": "fails while running a converted model",
        "DCF": "computes results that differ from the reference framework's", "TIMEOUT": "hangs on a valid model",
        "XPF": "computes different results on different platforms",
        "XBF": "computes different results from the base build",
        "XTF": "computes different results with more threads"}
TOOL_REPO = "gbft-action/gbft-action"
TRACKING_TITLE = "Precision differences found by gbft (tracking)"
# The symptom classes that, under policy ``summary``, are listed in one tracking issue each.
TRACKING_TITLES = {"precision": TRACKING_TITLE, "nan-inf": "NaN/Inf differences found by gbft (tracking)",
                   "unisolated": "Wrong results not yet pinned on one operator, found by gbft (tracking)",
                   "unsupported": "Operators the converter does not support, found by gbft (tracking)"}
SYMPTOM_TEXT = {"wrong-result": "wrong result", "nan-inf": "NaN/Inf", "conversion-error": "conversion error",
                "api-error": "API error", "heap-damage": "heap damage", "unisolated": "unisolated wrong result",
                "unsupported": "unsupported operator"}


def support_matrix(summary: Summary) -> dict[str, object] | None:
    """The support matrix of a campaign's probes (search.probe), from its coverage (one front
    end's, or the ONNX one of a mixed campaign): totals, and the operators whose instances do not
    all agree, worst first.  None when nothing was probed."""
    cov = summary.coverage or {}
    sup = cov.get("support") or next((c.get("support") for c in cov.values() if isinstance(c, dict)
                                      and c.get("support")), None)
    if not isinstance(sup, dict) or not isinstance(sup.get("rows"), dict):
        return None
    rows: list[dict[str, Any]] = [{"op": str(op)[:40], **{k: int(r.get(k, 0)) for k in ("instances", "converts", "runs", "agrees")},
             "failing": "; ".join(str(x)[:80] for x in (r.get("failing") or [])[:6] if isinstance(x, str))}
            for op, r in sup["rows"].items() if isinstance(r, dict)]
    failing = sorted((r for r in rows if r["agrees"] < r["instances"]),
                     key=lambda r: (r["agrees"] / max(1, r["instances"]), r["converts"], r["op"]))
    return {"operators": len(rows), "agree_all": len(rows) - len(failing),
            "convert_none": sum(r["converts"] == 0 for r in rows), "rows": failing}


def symptom_text(symptom: str) -> str:
    """A symptom class as a reader says it ("wrong-result" -> "wrong result")."""
    return SYMPTOM_TEXT.get(symptom, symptom.replace("-", " ")) or "unclassified"


@dataclass
class RunContext:
    """Where this report comes from: the workflow run, pull request and commit."""

    commit: str = ""
    pr_link: str = ""
    run_link: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @staticmethod
    def from_env(env: dict[str, str] | None = None, commit: str = "") -> RunContext:
        e = dict(os.environ if env is None else env)
        server = e.get("GITHUB_SERVER_URL", "https://github.com")
        repo = e.get("GITHUB_REPOSITORY", "")
        run = e.get("GITHUB_RUN_ID", "")
        ref = e.get("GITHUB_REF", "")  # refs/pull/<n>/merge on pull_request events
        pr = ref.split("/")[2] if ref.startswith("refs/pull/") else e.get("GBFT_PR_NUMBER", "")
        return RunContext(
            commit=commit or e.get("GBFT_ENGINE_COMMIT", "") or e.get("GITHUB_SHA", ""),
            pr_link=f"{server}/{repo}/pull/{pr}" if repo and pr.isdigit() else "",
            run_link=f"{server}/{repo}/actions/runs/{run}" if repo and run.isdigit() else "",
        )


def stage_text(symptom: str, status: str) -> str:
    """A root cause's symptom as its issue's label says it, naming the stage that failed: a
    model the converter built without one of its outputs converts fine and fails at inference,
    so it reads "inference error (output missing)", not "conversion error" (its class and key
    stay conversion-error: the converter dropped the output)."""
    if symptom == "conversion-error" and status == "IF":
        return "inference error (output missing)"
    return symptom_text(symptom)


def _rc_view(rc: RootCauseRow, status: str) -> dict[str, object]:
    """What the issue template shows of a root cause (raw values: the template sanitises each)."""
    return {"key": rc.key, "symptom": stage_text(rc.symptom, status), "title": rc.title, "ops": list(rc.ops),
            "detail": rc.detail, "fingerprints": len(rc.fingerprints)}


def _node(meta: BundleMeta) -> str:
    return meta.node if meta.node.isidentifier() else ""


class Renderer:
    def __init__(self, template_dir: Path | None = None) -> None:
        dirs = [str(template_dir)] if template_dir else []
        dirs.append(str(TEMPLATES))  # the user's templates first, ours as the fallback
        loader = jinja2.FileSystemLoader(dirs)
        # Every {{ value }} is a sanitised cell unless marked Markup (sanitize.finalize).
        self.env = jinja2.Environment(loader=loader, keep_trailing_newline=True, autoescape=False,
                                      undefined=jinja2.StrictUndefined, finalize=finalize)
        self.code_env = jinja2.Environment(loader=loader, keep_trailing_newline=True, autoescape=False)

    def issue(self, bundle: Path, meta: BundleMeta, ctx: RunContext, aliases: Sequence[str] = (),
              run_key: str = "", rc: RootCauseRow | None = None,
              merged: Sequence[dict[str, object]] = ()) -> tuple[str, str]:
        """(title, body) of the issue for one bug bundle: a fingerprint's, or the one shown for a
        root cause ``rc`` (``merged``: its fingerprints as rows).  The bundle is data (a pull
        request's artifact): its repro and diagram are generated here from its graph, never pasted."""
        fp = meta.fingerprint
        repro, graph = self._repro(bundle, meta)
        log = (bundle / "engine.log").read_text(errors="replace") if (bundle / "engine.log").exists() else ""
        body = self.env.get_template("issue.md.j2").render(
            fp={**fp.to_json(), "id": meta.id}, aliases=list(aliases), run_key=run_key,
            engine={"name": meta.engine.engine, "version": meta.engine.version},
            what=WHAT.get(fp.status, "fails"), status_text=STATUS_TEXT.get(fp.status, fp.status),
            onnx=fp.frontend == "onnx",
            tool_repo=TOOL_REPO, commit=ctx.commit, platforms=list(meta.platforms) or ["?"],
            pr_link=Markup(ctx.pr_link), run_link=Markup(ctx.run_link), occurrences=meta.occurrences,
            first_seen=meta.first_seen, last_seen=meta.last_seen,
            original_size=meta.original_size, minimized_size=meta.minimized_size,
            minimized=meta.minimized, alone=cell(meta.alone, 40) if meta.alone else "",
            message=Markup(prose(meta.message, 1000)),
            details=self._details(bundle),
            mermaid=code_block(mermaid(graph, _node(meta)) if graph else "flowchart TD", "mermaid"),
            flaky=meta.flaky, engine_pip=engine_needs(meta.engine),
            repro_lines=repro.count("\n"), repro_block=code_block(repro, "python"),
            engine_only=(bundle / "repro_engine.py").exists(),
            log_block=code_block("\n".join(log.splitlines()[-60:])) if log.strip() else "",
            rc=_rc_view(rc, fp.status) if rc else None, merged=list(merged), state=Markup(IssueState.of(meta).encode()))
        if rc:
            return title(f"[{stage_text(rc.symptom, fp.status)}] {rc.title or fp.title}"), truncate_body(body)
        return title(fp.title), truncate_body(body)

    def _repro(self, bundle: Path, meta: BundleMeta) -> tuple[str, Graph | None]:
        """repro.py generated from the bundle's blamed operator alone, else its (minimised)
        graph; a bundle that does not hold a valid graph gets a line saying so instead."""
        path = next((bundle / n for n in (ALONE_FILE, "minimized.json") if (bundle / n).exists()), bundle / "graph.json")
        try:
            graph = Graph.from_json(path.read_text())
            return render_repro(self.code_env, graph, meta), graph
        except Exception as e:  # noqa: BLE001 - an artifact's graph, any emitter failure: a line, not a crash
            return f"# no repro: {path.name} in the bundle is not a valid model ({type(e).__name__})\n", None

    def _details(self, bundle: Path) -> Markup:
        """For a DCF: the worst elements of the first differing output, as a table."""
        path = bundle / "result.json"
        try:
            case = json.loads(path.read_text()) if path.exists() else {}
            diffs = [d for d in case.get("diffs") or [] if not d.get("ok")]
            rows = [f"| {cell(d['name'], 40)} | {100 * float(d['ratio']):.2f}% | {cell(d['reason'], 120)} |"
                    for d in diffs]
        except (ValueError, KeyError, TypeError, AttributeError):
            rows = []
        if not rows:
            return Markup("")
        return Markup("| output | elements within tolerance | difference |\n|---|---:|---|\n" + "\n".join(rows[:10]))

    def comment(self, meta: BundleMeta, ctx: RunContext, run_occurrences: int, regressed: bool) -> str:
        return truncate_body(self.env.get_template("comment.md.j2").render(
            regressed=regressed, pr_link=Markup(ctx.pr_link), commit=ctx.commit, run_link=Markup(ctx.run_link),
            platforms=list(meta.platforms) or ["?"], run_occurrences=run_occurrences, occurrences=meta.occurrences))

    def tracking(self, key: str, rows: list[TrackedRow], ctx: RunContext, run_key: str,
                 data: str, symptom: str = "precision") -> tuple[str, str]:
        """(title, body) of the tracking issue ``key`` of one symptom class; ``data`` is its rows,
        encoded, kept hidden in the body so that the next run adds to them."""
        body = self.env.get_template("tracking.md.j2").render(
            key=key, rows=rows, run_key=run_key, data=Markup(data), commit=ctx.commit, run_link=Markup(ctx.run_link),
            pr_link=Markup(ctx.pr_link), tool_repo=TOOL_REPO, symptom=symptom)
        return TRACKING_TITLES[symptom], truncate_body(body)

    def tracking_comment(self, rows: list[TrackedRow], ctx: RunContext, regressed: bool,
                         symptom: str = "precision") -> str:
        return truncate_body(self.env.get_template("tracking_comment.md.j2").render(
            rows=rows, regressed=regressed, pr_link=Markup(ctx.pr_link), commit=ctx.commit,
            run_link=Markup(ctx.run_link), what=symptom_text(symptom)))

    def moved(self, duplicate: int, runs: int) -> str:
        """On the issue that won a race: what the duplicate filed at the same time held."""
        return (f"Also reported in #{duplicate}, filed at the same moment by another gbft reporter and closed as a "
                f"duplicate of this issue: its {runs} run{'s' if runs != 1 else ''} now count{'s' if runs == 1 else ''} "
                "here.")

    def carried(self) -> str:
        """On an issue filed before counts were kept in comments: what its body counted."""
        return "The counts this issue held before gbft kept them in comments (one per run), carried over."

    def duplicate(self, winner: int) -> str:
        """On the issue that lost a race: where the bug is tracked."""
        return (f"Duplicate of #{winner}: two gbft reporters filed this bug at the same moment, and the older "
                f"issue keeps it. What this one held now counts in #{winner}.")

    def fixed(self, engine: EngineInfo, ctx: RunContext, platforms: list[str], closing: bool) -> str:
        return self.env.get_template("fixed.md.j2").render(
            engine={"name": engine.engine, "version": engine.version}, commit=ctx.commit,
            platforms=platforms or ["?"], closing=closing, run_link=Markup(ctx.run_link))

    def summary(self, summary: Summary, headline: str, sections: list[dict[str, Any]],
                ids: list[dict[str, object]], not_filed: list[str], refused: Sequence[ReportEntry] = (),
                declined: Sequence[ReportEntry] = (), by_root_cause: bool = False, ignored: str = "",
                listed: str = "") -> str:
        eng = summary.engine
        counts = summary.platforms  # in the order given on the command line
        plats = {p: counts[p] for p in summary.platform_order or counts if p in counts}
        base = summary.triage.base if summary.triage else EngineInfo()
        return self.env.get_template("summary.md.j2").render(
            engine={"name": eng.engine, "version": eng.version, "settings": _settings(eng.settings)},
            models=summary.models,
            base=" ".join(x for x in (base.engine, base.version) if x)[:80],
            headline=Markup(headline), sections=sections, ids=ids,
            elapsed_s=summary.elapsed_s, models_per_s=summary.models_per_s,
            platforms=list(plats) or [eng.machine or "?"], per_platform=plats if len(plats) > 1 else {},
            stop_reason=str(summary.stop_reason or ""),
            by_status=summary.by_status, coverage=summary.coverage, not_filed=not_filed,
            frontends=summary.frontends or {}, harness=summary.harness_errors.to_json(),
            refused=list(refused), declined=list(declined), by_root_cause=by_root_cause, ignored=ignored, listed=listed,
            shards=_shards(summary.shards), support=support_matrix(summary), **_coverage_words(summary.coverage))


def _engine_words(engine: Any) -> dict[str, object]:
    """summary.json's ``coverage.engine`` (engines.coverage) as the job summary's table: module
    names of plain words and whole counts only (an artifact's data)."""
    none: dict[str, object] = {"engine_modules": [], "engine_blocks": 0, "engine_models": 0, "engine_uncovered": False}
    if not isinstance(engine, dict) or not isinstance(engine.get("modules"), dict):
        return none
    name = re.compile(r"[A-Za-z0-9 :_-]{1,40}")
    rows = [(m, n) for m, n in engine["modules"].items() if name.fullmatch(str(m)) and type(n) is int]
    count = [v if type(v := engine.get(k)) is int else 0 for k in ("blocks", "models")]
    if not rows:  # coverage was asked for and the models ran none of the engine's code: say why
        return {**none, "engine_models": count[1], "engine_uncovered": count[1] > 0}
    return {"engine_modules": rows, "engine_blocks": count[0], "engine_models": count[1], "engine_uncovered": False}


def _coverage_words(coverage: Mapping[str, Any] | None) -> dict[str, object]:
    """The coverage line's exported forms and operator-set counts, as words ("" when absent or
    not of the written shape: summary.json is data from an artifact, and a TensorFlow campaign
    has neither)."""
    cov = coverage or {}
    ok = re.compile(r"[A-Za-z0-9_]{1,40}")
    forms = cov.get("forms")
    by = cov.get("operators_by_opset")
    form = re.compile(r"[A-Za-z0-9_]{1,40}( \([a-z]{1,20}\))?")  # "QDQConvPattern (onnxruntime)"
    return {"forms": ", ".join(f for f in forms if isinstance(f, str) and form.fullmatch(f))
            if isinstance(forms, list) else "",
            "by_opset": ", ".join(f"{k}: {v}" for k, v in sorted(by.items(), key=lambda kv: _number(kv[0]))
                                  if ok.fullmatch(str(k)) and isinstance(v, int))
            if isinstance(by, dict) else "",
            "opsets": _opsets_words(cov.get("opsets")), **_engine_words(cov.get("engine"))}


def _opsets_words(per: Any) -> str:
    """A campaign of several opsets (search.opsets): per opset its models and operators, as
    words ("" when absent or not of the written shape)."""
    if not isinstance(per, dict):
        return ""
    return "; ".join(f"opset {o}: {d['models']} models, {d['operators']} operators" for o, d in per.items()
                     if str(o).isdigit() and len(str(o)) <= 3 and isinstance(d, dict)
                     and all(type(d.get(k)) is int for k in ("models", "operators")))


def _number(text: Any) -> int:
    """A version's order (summary.json's keys are sorted as text: "10" before "6")."""
    return int(text) if str(text).isdigit() else 0


def _settings(settings: Mapping[str, str]) -> str:
    """The engine's settings as the heading shows them ("precision low, threads 4"); only
    words: summary.json is data from an artifact."""
    ok = re.compile(r"[a-z0-9_]{1,32}")
    return ", ".join(f"{k} {v}" for k, v in sorted(settings.items()) if ok.fullmatch(k) and ok.fullmatch(v))


def _shards(shards: Mapping[str, ShardRun] | None) -> dict[str, object] | None:
    """A merged campaign's shards (gbft merge): how many, and which did not finish.  Only
    names of the form I/N are shown: summary.json is data from an artifact."""
    if not shards:
        return None
    unfinished = [k for k, v in shards.items() if re.fullmatch(r"\d{1,4}/\d{1,4}", k) and not v.complete]
    return {"total": len(shards), "unfinished": sorted(unfinished)}


def engine_coverage_text(outs: Sequence[tuple[str, EngineCoverage]]) -> str:
    """``gbft coverage``: the engine's blocks per module of one output, or of several side by
    side (each column an output), with what the last one has beyond the first."""
    modules = sorted({m for _, ec in outs for m in ec.modules},
                     key=lambda m: (-max(ec.modules.get(m, 0) for _, ec in outs), m))
    head = ["module", *(name for name, _ in outs)] + (["last - first"] if len(outs) > 1 else [])
    rows = [[m, *(str(ec.modules.get(m, 0)) for _, ec in outs)] +
            ([f"{outs[-1][1].modules.get(m, 0) - outs[0][1].modules.get(m, 0):+d}"] if len(outs) > 1 else [])
            for m in modules]
    rows.append(["all", *(str(ec.total) for _, ec in outs)] +
                ([f"{outs[-1][1].total - outs[0][1].total:+d}"] if len(outs) > 1 else []))
    rows.append(["models", *(str(ec.models) for _, ec in outs)] + ([""] if len(outs) > 1 else []))
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, width)))
                     for r in [head, *rows])
