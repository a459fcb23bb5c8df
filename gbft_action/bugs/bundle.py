"""Bug bundles (``OUT/bugs/<id>/``), the known-bugs file, and repro rendering.

A bundle holds everything needed to replay one bug: the graph, the model
files, inputs, expected and actual outputs, the engine log, ``meta.json``, the
minimised graph with a Mermaid diagram, and a self-contained ``repro.py``.
The known-bugs file (``known_bugs.json``) carries fingerprints across runs.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import Path

import jinja2

from .. import __version__
from ..graph.ir import Graph
from ..records import BundleMeta, EngineInfo, MinimizeStats, RootKey, Tolerance
from ..records.case import CaseRecord, PlatformRecord
from ..records.known import KNOWN_FILE, KnownBug, read_known, write_known
from .repro import ReproData, render_repro

# The blamed operator alone (rerun.diagnose.shown_alone): what the repro and the issue show.
ALONE_FILE = "alone.json"
# Package data: found the same way in a source checkout, an editable install and a wheel.
TEMPLATES = Path(str(files("gbft_action") / "templates"))
CASE_FILES = ("graph.json", "model.pb", "model.tflite", "model.onnx", "inputs.npz", "expected.npz", "actual.npz", "engine.log",
              "result.json", "actual-base.npz", "engine-base.log",  # -base: the base build's, if it ran
              "model-reference.onnx", "reference-ort.npz")  # the second reference's model and outputs


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def known_of(out: Path) -> dict[str, KnownBug]:
    """An output's known-bugs file ({} when it has none: a run killed before its end)."""
    path = out / KNOWN_FILE
    return read_known(path) if path.exists() else {}


@dataclass(frozen=True)
class Found:
    """What a bundle records of the campaign and the worker that found it."""

    seed: int | None = None
    tolerance: Tolerance = Tolerance()
    engine: EngineInfo = EngineInfo()
    platform: str = ""  # the platform's label or name (bundles and issues list where a bug shows)

    @staticmethod
    def of_engine(engine: EngineInfo, seed: int | None = None, tolerance: Tolerance = Tolerance()) -> Found:
        """Where an engine worker ran: its label or platform name, else its machine."""
        return Found(seed, tolerance, replace(engine, platform="", source="", formats=None), engine.where)


class BugBook:
    """Fingerprints seen before (from ``--state``) and in this run, with their bundles."""

    def __init__(self, out: Path, state_dir: str = "", template_dir: Path = TEMPLATES) -> None:
        self.out = out
        self.dir = out / "bugs"
        self.known: dict[str, KnownBug] = known_of(Path(state_dir)) if state_dir else {}
        self.before = set(self.known)
        self.seen_this_run: dict[str, int] = {}
        self.templates = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)),
                                            keep_trailing_newline=True, autoescape=False)

    # -- recording ------------------------------------------------------------------
    def observe(self, rec: PlatformRecord, case_dir: str, graph: Graph, ctx: Found) -> bool:
        """Count one failing case (``case_dir``: its model's kept folder); True when its
        fingerprint is new in this run."""
        if rec.fingerprint is None:
            return False
        fid = rec.key
        platform = ctx.platform
        entry = self.known.get(fid) or KnownBug(rec.fingerprint, rec.fingerprint.title, now())
        platforms = entry.platforms + ((platform,) if platform and platform not in entry.platforms else ())
        entry = replace(entry, count=entry.count + 1, last_seen=now(), platforms=platforms)
        first = fid not in self.seen_this_run
        self.seen_this_run[fid] = self.seen_this_run.get(fid, 0) + 1
        if first:
            entry = replace(entry, bundle=str(self.write_bundle(rec, case_dir, graph, ctx)))
        self.known[fid] = entry
        return first

    def resume(self, records: list[CaseRecord]) -> None:
        """A resumed campaign: its own earlier sightings are this run's, not new ones again."""
        for fid, entry in known_of(self.out).items():
            self.known.setdefault(fid, entry)
        for rec in records:
            if rec.failed:  # the first platform's, as before: its count seeds the run's own
                self.seen_this_run[rec.key] = self.seen_this_run.get(rec.key, 0) + 1

    def new_ids(self) -> list[str]:
        return sorted(f for f in self.seen_this_run if f not in self.before)

    def new_ids_in_order(self) -> list[str]:
        """New fingerprints in the order they were first seen, not yet minimised."""
        return [f for f in self.seen_this_run if f not in self.before and not self._minimized(f)]

    def flaky(self, fid: str) -> bool:
        """Its own replays disagreed (minimize_bug's check): never blamed on a pull request."""
        meta = self.meta(fid)
        return meta is not None and meta.flaky is True

    def _minimized(self, fid: str) -> bool:
        meta = self.meta(fid)
        return meta is not None and meta.minimized

    def meta(self, fid: str) -> BundleMeta | None:
        """A bundle's meta.json (None before the bundle exists)."""
        return BundleMeta.read(self.bundle_dir(fid))

    def set_root_cause(self, fid: str, root_cause: RootKey) -> None:
        """Record the root cause a bundle shows in its meta.json."""
        meta = self.meta(fid)
        if meta is not None and meta.root_cause != root_cause:
            meta.with_(root_cause=root_cause).write(self.bundle_dir(fid))

    def set_flaky(self, fid: str, flaky: bool) -> None:
        """Whether its own replays disagreed (rerun.replay.minimize_bug's check)."""
        self._meta(fid).with_(flaky=flaky).write(self.bundle_dir(fid))  # atomic: a kill here loses no bundle

    def save(self) -> None:
        # Occurrences go into each bundle once, here, not on every failing case.
        for fid, n in self.seen_this_run.items():
            meta = self.meta(fid)
            if meta is not None:
                # A resumed run may meet bundles the killed run never entered in known_bugs.json.
                entry = self.known.get(fid)
                platforms = sorted(set(meta.platforms) | set(entry.platforms if entry else ()))
                meta.with_(occurrences=n, last_seen=entry.last_seen if entry else meta.last_seen,
                           platforms=tuple(platforms)).write(self.bundle_dir(fid))
        write_known(self.out / KNOWN_FILE, self.known)

    # -- bundles ----------------------------------------------------------------------
    def bundle_dir(self, fid: str) -> Path:
        return self.dir / fid

    def write_bundle(self, rec: PlatformRecord, case_dir: str, graph: Graph, ctx: Found) -> Path:
        fp = rec.fingerprint
        assert fp is not None, "a bundle is written for a failure"
        d = self.bundle_dir(rec.key)
        d.mkdir(parents=True, exist_ok=True)
        case = self.out / case_dir
        for name in CASE_FILES:
            # A platform other than the first keeps its outputs and log as actual-<platform>.npz ...
            stem, dot, ext = name.partition(".")
            own = case / f"{stem}-{rec.platform}{dot}{ext}"
            src = own if own.exists() else case / name
            if src.exists():
                shutil.copy2(src, d / name)
        size = len(graph.block_nodes())
        meta = BundleMeta(
            id=rec.key, fingerprint=fp, title=fp.title, status=rec.status, stage=rec.stage,
            engine=ctx.engine, op=rec.op, node=rec.node, message=rec.message, seed=ctx.seed,
            symptom=rec.symptom, direction=rec.direction, after=rec.after, crosscheck=rec.crosscheck,
            case_index=rec.index, case_seed=graph.seed, graph_hash=rec.hash, tool_version=__version__,
            platforms=(ctx.platform,), occurrences=1, first_seen=now(), last_seen=now(),
            tolerance=ctx.tolerance, original_size=size, minimized_size=size)
        meta.write(d)
        (d / "graph.json").write_text(graph.to_json())
        # Until the minimiser has run (it may not get budget), the smallest known
        # model is the original: meta.json says "minimized": false.
        (d / "minimized.json").write_text(graph.to_json())
        (d / "minimized.mmd").write_text(mermaid(graph, highlight=rec.node))
        self.write_repro(d, graph, meta)
        return d

    def add_minimized(self, fid: str, small: Graph, node: str, stats: MinimizeStats) -> None:
        d = self.bundle_dir(fid)
        meta = self._meta(fid)
        (d / "minimized.json").write_text(small.to_json())
        (d / "minimized.mmd").write_text(mermaid(small, highlight=node))
        (d / ALONE_FILE).unlink(missing_ok=True)  # shown for the model before; a new key decides again
        meta = meta.with_(alone="", minimized_size=len(small.block_nodes()), minimize=stats, minimized=True,
                          node=node or meta.node)
        meta.write(d)
        self.write_repro(d, small, meta)

    def _meta(self, fid: str) -> BundleMeta:
        meta = self.meta(fid)
        if meta is None:
            raise FileNotFoundError(f"{self.bundle_dir(fid)}: no meta.json in the bug bundle")
        return meta

    def add_alone(self, fid: str, alone: Graph) -> None:
        """The blamed operator alone, shown wrong (or failing) so by the diagnosis: the model
        the repro shows, and the issue's graph, in place of a minimised one."""
        d = self.bundle_dir(fid)
        meta = self._meta(fid).with_(alone=alone.nodes[-1].op)
        (d / ALONE_FILE).write_text(alone.to_json())
        meta.write(d)
        self.write_repro(d, alone, meta)

    def write_repro(self, d: Path, graph: Graph, meta: BundleMeta) -> None:
        """repro.py (TensorFlow rebuilds the model) and, when the model and its data are small,
        repro_engine.py (they are embedded: only the engine is needed)."""
        write_repros(self.templates, d, graph, meta)


def mermaid(g: Graph, highlight: str = "") -> str:
    """The graph as a Mermaid flowchart (GitHub renders it); the failing node in red."""
    lines = ["flowchart TD"]
    for name, t in g.inputs.items():
        lines.append(f'  {name}[/"{name} {list(t.shape)}"/]')
    for n in g.nodes:
        label = f"{n.id}: {n.op}" + (" (adapter)" if n.role == "adapter" else "") + f"<br/>{list(n.out.shape)}"
        lines.append(f'  {n.id}["{label}"]')
        for src in n.inputs:
            lines.append(f"  {src} --> {n.id}")
    if highlight:
        lines.append(f"  style {highlight} fill:#f88,stroke:#900")
    return "\n".join(lines) + "\n"


def _no_repro(why: str) -> str:
    """A repro.py that says why there is none (exit 2: "something else went wrong")."""
    return f"#!/usr/bin/env python3\nimport sys\nprint({('no repro: ' + why)[:300]!r})\nsys.exit(2)\n"


def repro_data(d: Path, minimized: bool) -> ReproData | None:
    """The frozen model and TensorFlow's data of the model a bundle's repro shows (the
    minimised one's only if the minimiser kept them)."""
    if minimized:
        return ReproData.from_files(d / "minimized.pb", d / "minimized-inputs.npz", d / "minimized-expected.npz")
    return ReproData.from_files(d / "model.pb", d / "inputs.npz", d / "expected.npz")


def write_repros(env: jinja2.Environment, d: Path, graph: Graph, meta: BundleMeta) -> None:
    try:
        text = render_repro(env, graph, meta)
    except ValueError as e:  # a graph the renderer refuses (a size check): the campaign goes on
        (d / "repro.py").write_text(_no_repro(str(e)))
        (d / "repro_engine.py").unlink(missing_ok=True)
        return
    (d / "repro.py").write_text(text)
    (d / "repro.py").chmod(0o755)
    # The engine-only script embeds the frozen TensorFlow model: for the tf front end only (an
    # ONNX repro holds its model already; a TFLite one is converted from TensorFlow's session).
    # Not for an operator shown alone: its data are not the minimised model's.
    tf = meta.frontend == "tf" and not meta.alone
    data = repro_data(d, meta.minimized) if tf else None
    engine_only = d / "repro_engine.py"
    if data is not None and data.small():
        engine_only.write_text(render_repro(env, graph, meta, data))
        engine_only.chmod(0o755)
    else:
        engine_only.unlink(missing_ok=True)
