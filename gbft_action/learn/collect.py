"""Training data for the coverage predictor (issue 38, the patent's steps 1 to 3).

``collect`` runs models on an engine built with coverage and writes one ``DatasetRow`` a
model: its features (search.features) and the engine's blocks it ran, per module of the
engine's source (engines.coverage.ModulePlacer, by the engine knowledge's rules).  The
models are the generator's (each front end asked, drawn by the random chooser so that the
data do not lean on any guide) and those packages ship (ONNX's node tests, each run with its
own inputs).  Each row is appended as soon as its model ran: a collection stopped at any
point resumes where it was (the same seed draws the same models; the rows already written
are skipped).  An engine crash is a row too (the blocks it ran before it died are lost with
its worker: its row holds what the calls before returned).
"""

from __future__ import annotations

import shutil
import sys
from functools import partial
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..campaign import corpus_of
from ..records.config import Config
from ..knowledge.builds import EngineBuild
from ..engines.coverage import ModulePlacer, build_shim, preload_env
from ..frontends import FRONTENDS
from ..graph.generate import GenOptions
from ..graph.ir import Graph
from ..pipeline import CaseResult, Lane, LaneConfig
from ..records.learned import DatasetMeta, DatasetRow
from ..search.features import FEATURES_VERSION, of_graph, of_onnx
from ..search.guided import GuidedSource

CASE_BUDGET = 60.0  # seconds at most for one model (the stages' own limits cut first)
NO_BLOCKS = 20  # models in a row without a block: the engine is not instrumented


@dataclass(frozen=True)
class CollectConfig:
    out: Path
    engine: str = "mnn"
    build: EngineBuild | None = None  # the coverage build (its venv's python); None: the engine as installed
    frontends: tuple[str, ...] = ("onnx", "tf", "tflite")
    models: int = 500  # generated models per front end
    seed: int = 0
    node_tests: bool = True  # ONNX's node test models too
    node_test_limit: int = 0  # at most this many of them (0: all)
    blocks: tuple[int, int] = (1, 12)

    def validate(self) -> CollectConfig:
        bad = [f for f in self.frontends if f not in FRONTENDS]
        if bad:
            raise ValueError(f"--frontend {','.join(bad)}: unknown (known: {', '.join(FRONTENDS)})")
        if self.models < 0:
            raise ValueError(f"--models {self.models}: expected 0 or more")
        return self


Job = Callable[[Lane], Iterator[tuple[str, Callable[[], tuple[CaseResult, dict[str, object]]]]]]


def collect(cfg: CollectConfig, say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> int:
    """Run the models not yet in ``cfg.out``'s data set; returns the rows written now."""
    jobs: list[tuple[str, Job]] = [(fe, _generated(cfg, fe)) for fe in cfg.frontends]
    if cfg.node_tests:
        jobs.append(("onnx", _node_tests(cfg)))
    return run_jobs(cfg, jobs, say)


def collect_graphs(cfg: CollectConfig, frontend: str, graphs: Sequence[tuple[str, Graph]],
                   say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> int:
    """Rows for models given whole (a catalogue's defects: their repros' blocks say which modules
    the defects are in), keyed as given."""
    def job(lane: Lane) -> Iterator[tuple[str, Callable[[], tuple[CaseResult, dict[str, object]]]]]:
        for i, (key, g) in enumerate(graphs):
            yield key, _graph_case(lane, 200_000 + i, g, frontend)
    return run_jobs(cfg, [(frontend, job)], say)


def run_jobs(cfg: CollectConfig, jobs: Sequence[tuple[str, Job]], say: Callable[[str], None]) -> int:
    cfg.out.mkdir(parents=True, exist_ok=True)
    DatasetRow.mend(cfg.out)
    done = {r.key for r in DatasetRow.read_all(cfg.out)}
    env = preload_env(build_shim(cfg.out / ".work"), dict(cfg.build.env) if cfg.build else {})
    placer: ModulePlacer | None = None
    written = blind = 0
    for fe, job in jobs:
        lane = Lane(LaneConfig(cfg.engine, cfg.out / ".work", engine_python=cfg.build.python if cfg.build else "",
                               engine_env=env, frontend=FRONTENDS[fe], cross_reference=False), 0)
        info = lane.start()
        _check_meta(cfg.out, f"{info.engine or cfg.engine} {info.version}".strip())
        # The engine's rules for its source folders, as the engine its worker names (a module:Class
        # adapter of MNN places by MNN's).
        placer = placer or ModulePlacer(lane.knowledge.module_of)
        try:
            t0, n = time.monotonic(), 0
            for key, run in job(lane):
                if key in done:
                    continue
                try:
                    res, feats = run()
                except (ValueError, TypeError, KeyError, OSError) as e:
                    # A package model this harness cannot feed (a sequence input, an optional
                    # one left empty): not the engine's doing, and not a row.
                    say(f"collect: {key}: skipped ({type(e).__name__}: {e})")
                    continue
                if res.workdir is not None:  # the case's files are no row's: thousands of folders
                    shutil.rmtree(res.workdir, ignore_errors=True)
                if res.aborted:
                    continue
                complete = res.failed_call not in ("crash", "timeout", "memory")
                row = DatasetRow(key, fe, res.status.value, feats, placer.counts(res.engine_blocks), complete)
                row.append(cfg.out)
                done.add(key)
                written, n = written + 1, n + 1
                blind = blind + 1 if not row.modules else 0
                if blind >= NO_BLOCKS:
                    raise ValueError(f"the engine reported no blocks for {NO_BLOCKS} models in a row: not a build with "
                                     f"-fsanitize-coverage=trace-pc (see gbft coverage --runtime)")
                if n % 50 == 0:
                    say(f"collect: {key}: {n} rows this pass, {n / (time.monotonic() - t0):.1f} a second")
        finally:
            lane.stop()
    say(f"collect: {written} rows written, {len(done)} in {cfg.out}")
    return written


def _graph_case(lane: Lane, index: int, g: Graph, frontend: str) -> Callable[[], tuple[CaseResult, dict[str, object]]]:
    def run() -> tuple[CaseResult, dict[str, object]]:
        return lane.run(index, g, CASE_BUDGET), of_graph(g, frontend).to_json()
    return run


def _check_meta(out: Path, engine: str) -> None:
    """The data set's header: written once; a resumed one must be of the same engine build."""
    meta = DatasetMeta.read(out)
    if meta is None:
        DatasetMeta(engine, FEATURES_VERSION).write(out)
    elif meta.engine != engine or meta.features_version != FEATURES_VERSION:
        raise ValueError(f"{out}: a data set of {meta.engine} (features v{meta.features_version}); this run is of "
                         f"{engine} (features v{FEATURES_VERSION}): use another folder")


def _generated(cfg: CollectConfig, fe: str) -> Job:
    """The front end's generated models, in the order the seed draws them."""
    def models(lane: Lane) -> Iterator[tuple[str, Callable[[], tuple[CaseResult, dict[str, object]]]]]:
        corpus = corpus_of(Config(out=cfg.out, frontend=fe), fe)
        src = GuidedSource(corpus, GenOptions(blocks=cfg.blocks), cfg.seed, "random")
        for i in range(cfg.models):
            g = src.next_graph(i)
            yield f"generated:{fe}:{cfg.seed}:{i}", _graph_case(lane, i, g, fe)
    return models


def _node_tests(cfg: CollectConfig) -> Job:
    """The models the onnx package ships with data: its node tests (``collect_testcases``) and
    the small models of its backend test data, each run with its first inputs."""
    def models(lane: Lane) -> Iterator[tuple[str, Callable[[], tuple[CaseResult, dict[str, object]]]]]:
        cases = _package_models()
        if cfg.node_test_limit:
            cases = cases[:cfg.node_test_limit]
        scratch = cfg.out / ".work" / "package-model.onnx"
        for k, (name, load) in enumerate(cases):
            def run(load: Callable[[], tuple[Any, list[Any]]] = load, k: int = k) -> tuple[CaseResult, dict[str, object]]:
                import onnx

                m, arrays = load()
                init = {t.name for t in m.graph.initializer}
                names = [i.name for i in m.graph.input if i.name not in init]
                if len(arrays) != len(names) or not all(isinstance(a, np.ndarray) for a in arrays):
                    raise ValueError("inputs other than tensors, or not one per graph input")
                onnx.save(m, str(scratch))
                res = lane.run_file(100_000 + k, scratch, dict(zip(names, arrays)),
                                    [o.name for o in m.graph.output], CASE_BUDGET)
                return res, of_onnx(m).to_json()
            yield f"node:{name}", run
    return models


def _package_models() -> list[tuple[str, Callable[[], tuple[Any, list[Any]]]]]:
    """(name, a loader of (ModelProto, input arrays)) of every model the onnx package ships with
    test data, sorted by name (the same list on every run of one onnx version)."""
    import warnings

    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.case.node import collect_testcases

    out: list[tuple[str, Callable[[], tuple[Any, list[Any]]]]] = []
    with warnings.catch_warnings():  # the cases' own reference values overflow on purpose
        warnings.simplefilter("ignore")
        for case in collect_testcases(None):
            if case.model is not None and case.data_sets:
                out.append((case.name, partial(_of_case, case)))
    root = Path(onnx.__file__).parent / "backend" / "test" / "data"

    def from_folder(d: Path) -> tuple[Any, list[Any]]:
        arrays = []
        for pb in sorted((d / "test_data_set_0").glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
            t = onnx.TensorProto()
            t.ParseFromString(pb.read_bytes())
            arrays.append(numpy_helper.to_array(t))
        return onnx.load(str(d / "model.onnx")), arrays

    for kind in ("simple", "pytorch-operator", "pytorch-converted"):
        for d in sorted((root / kind).glob("*/model.onnx")):
            out.append((f"{kind}/{d.parent.name}", partial(from_folder, d.parent)))
    return sorted(out, key=lambda x: x[0])


def _of_case(case: Any) -> tuple[Any, list[Any]]:
    return case.model, list(case.data_sets[0][0])
