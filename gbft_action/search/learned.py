"""The learned guide in the fuzz loop (issue 38, the patent's steps 5 to 7): ``--chooser learned``.

A guide is a folder (records.learned.LearnedMeta): the coverage predictor and one block policy
per front end, both ONNX, run here by ONNX Runtime (no training framework in the pull-request
job).  ``Guide.predict`` is the predictor's per-module blocks for a model; ``TestValue`` is
the patent's test value: each module's predicted blocks against the mean of the models this
campaign ran so far (its increment, relative to the two), weighted by the module's share of
the engine's known defects, mixed half and half with an even share so that a module without
known defects still counts.  A model of negative value is not run (GuidedSource counts it).
``Policy`` scores the corpus's blocks at one graph node from what ``observation`` says of the
model so far and of the campaign's coverage; its choice is drawn among the admissible blocks.

Training (learn.policy) builds the same observation and the same value: one definition each.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..corpus import Block
from ..records.learned import LearnedMeta, PolicyFile
from ..records.io import RecordError
from ..graph.ir import Graph
from .features import FEATURES_VERSION, RELATIONS, Encoder, FeatureGraph, of_graph

MAX_DEGREE = 4  # in- and out-degree one-hot up to this (more: the last)
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "learned"  # the guide the package ships


class GuideError(ValueError):
    """A guide that cannot be used here (missing, of another version, no policy for a front end)."""


class Guide:
    """The predictor and the policies of a guide folder, loaded once."""

    def __init__(self, folder: Path) -> None:
        try:
            self.meta = LearnedMeta.read(folder)
        except RecordError as e:
            raise GuideError(str(e)) from None
        if self.meta.features_version != FEATURES_VERSION:
            raise GuideError(f"{folder}: a guide of features v{self.meta.features_version}; this gbft makes "
                             f"v{FEATURES_VERSION} (train it again: gbft learn train)")
        self.folder = folder
        self.encoder = Encoder(self.meta.vocab)
        self.scale = np.array(self.meta.scale, np.float32)
        self._predictor = _session(folder / self.meta.predictor)
        _check_width(self._predictor, folder / self.meta.predictor, self.encoder.width, len(self.modules))

    @staticmethod
    def digest(folder: str | Path | None) -> str:
        """The guide's files' digest (learned.json and every ONNX file in the folder): what a
        resumed campaign must find again; "" when there is no guide there."""
        path = Path(folder) if folder else SHIPPED
        h = hashlib.sha256()
        files = sorted(p for p in path.glob("*") if p.name == "learned.json" or p.suffix == ".onnx") if path.is_dir() else []
        for p in files:
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        return h.hexdigest() if files else ""

    @staticmethod
    def load(folder: str | Path | None) -> Guide:
        """A guide folder, or the shipped one (None or "")."""
        path = Path(folder) if folder else SHIPPED
        if not (path / "learned.json").exists():
            raise GuideError(f"--guide {path}: not a learned guide (no learned.json; see gbft learn train)")
        return Guide(path)

    @property
    def modules(self) -> tuple[str, ...]:
        return self.meta.modules

    def predict(self, g: FeatureGraph) -> np.ndarray:
        """Per module (``modules``), the blocks the predictor expects the model to run."""
        feed = {"x": self.encoder.nodes(g), **{f"edges_{r}": e for r, e in zip(RELATIONS, self.encoder.relations(g))}}
        out = self._predictor.run(None, feed)[0][0]
        return np.expm1(np.clip(out, 0.0, 1.2) * self.scale)

    def policy(self, frontend: str) -> Policy:
        pf = self.meta.policies.get(frontend)
        if pf is None:
            have = ", ".join(sorted(self.meta.policies)) or "none"
            raise GuideError(f"the guide in {self.folder} has no policy for the {frontend} front end (it has: {have})")
        session = _session(self.folder / pf.file)
        _check_width(session, self.folder / pf.file, observation_width(pf.ops, self.modules), len(pf.blocks))
        return Policy(session, pf)

    def test_value(self) -> TestValue:
        return TestValue(self.modules, self.meta.bug_share)


def _session(path: Path) -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        raise GuideError("the learned chooser runs its guide with ONNX Runtime: pip install onnxruntime "
                         "(gbft-action[onnx])") from None
    if not path.is_file():
        raise GuideError(f"{path}: missing (a guide folder holds learned.json and the ONNX files it names)")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # the fuzz loop's lanes take the other cores
    opts.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's own errors (a corrupt file, an LFS pointer)
        raise GuideError(f"{path}: ONNX Runtime cannot load it ({type(e).__name__}: {str(e)[:200]})") from None


def _check_width(session: Any, path: Path, width: int, outputs: int) -> None:
    """The file's first input's last dimension and its output's, against what learned.json says
    (a file of another guide fails here, not in the middle of a campaign)."""
    got_in, got_out = session.get_inputs()[0].shape[-1], session.get_outputs()[0].shape[-1]
    if got_in != width or got_out != outputs:
        raise GuideError(f"{path}: takes {got_in} features and gives {got_out} values; learned.json says "
                         f"{width} and {outputs} (a file of another guide?)")


@dataclass
class TestValue:
    """The patent's test value of a model against the models run so far in this campaign."""

    __test__ = False  # not a pytest class, whatever its name

    modules: Sequence[str]
    bug_share: dict[str, float]
    total: np.ndarray = field(init=False)
    runs: int = 0

    def __post_init__(self) -> None:
        self.total = np.zeros(len(self.modules), np.float64)
        even = 1.0 / max(1, len(self.modules))
        w = np.array([0.5 * even + 0.5 * self.bug_share.get(m, 0.0) for m in self.modules], np.float64)
        self.weights = w / w.sum() if w.sum() > 0 else w

    @property
    def mean(self) -> np.ndarray:
        return self.total / max(1, self.runs)

    def __call__(self, predicted: np.ndarray) -> float:
        """Positive: the model is expected to run more of the engine's code, where its defects
        were, than this campaign's models did on average.  The first model is always worth running."""
        if self.runs == 0:
            return 1.0
        m = self.mean
        # Relative to both (in (-1, 1)): a module no model ran much of does not swamp the rest.
        return float(np.dot(self.weights, (predicted - m) / (predicted + m + 1.0)))

    def ran(self, predicted: np.ndarray) -> None:
        self.total += predicted
        self.runs += 1

    def deficit(self) -> np.ndarray:
        """Each module's mean so far, squashed to [0, 1) (the policy's view of the campaign)."""
        return (1.0 - np.exp(-self.mean / 1000.0)).astype(np.float32)


def observation(ops: Sequence[str], placed: Sequence[Block], tails: Sequence[str], d_in: int, d_out: int,
                deficit: np.ndarray) -> np.ndarray:
    """What the policy sees at one graph node: the share of each operator among the blocks
    placed so far, the operators feeding this node, its degrees, the campaign's coverage."""
    at = _index(tuple(ops))
    n = len(ops)
    v = np.zeros(2 * n + 2 * MAX_DEGREE + len(deficit), np.float32)
    for b in placed:
        for op in b.ops:
            if op in at:
                v[at[op]] += 1.0 / max(1, len(placed))
    for t in tails:
        if t in at:
            v[n + at[t]] = 1.0
    v[2 * n + min(d_in, MAX_DEGREE) - 1] = 1.0
    v[2 * n + MAX_DEGREE + min(max(d_out, 1), MAX_DEGREE) - 1] = 1.0
    v[2 * n + 2 * MAX_DEGREE:] = deficit
    return v


@functools.lru_cache(maxsize=16)
def _index(names: tuple[str, ...]) -> dict[str, int]:
    """Each name's position (asked once per node: built once per list)."""
    return {x: i for i, x in enumerate(names)}


def observation_width(ops: Sequence[str], modules: Sequence[str]) -> int:
    return 2 * len(ops) + 2 * MAX_DEGREE + len(modules)


class Policy:
    """A front end's block policy: scores for every block of its training corpus; a block the
    campaign's corpus has and it never saw scores the mean."""

    def __init__(self, session: Any, pf: PolicyFile) -> None:
        self.session, self.file = session, pf
        self.ops = pf.ops
        self._at = {b: i for i, b in enumerate(pf.blocks)}
        self._rows: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.name = session.get_inputs()[0].name

    def scores(self, obs: np.ndarray, cands: Sequence[Block]) -> np.ndarray:
        raw = self.session.run(None, {self.name: obs[None, :]})[0][0]
        where, known = self._where(tuple(b.name for b in cands))
        return np.where(known, raw[where].astype(np.float64), float(np.mean(raw)))

    def _where(self, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The candidates' rows of the scores, and which the policy knows (cached: the same
        candidate lists come back at every node of every model)."""
        hit = self._rows.get(names)
        if hit is None:
            rows = np.array([self._at.get(n, 0) for n in names], np.int64)
            hit = self._rows[names] = (rows, np.array([n in self._at for n in names]))
        return hit


def draw(scores: np.ndarray, u: float) -> int:
    """The index drawn from softmax(scores) by one uniform number ``u`` (the campaign's rng)."""
    p = np.exp(scores - scores.max())
    c = np.cumsum(p / p.sum())
    return min(int(np.searchsorted(c, u, side="right")), len(scores) - 1)


def bug_share(counts: dict[str, int]) -> dict[str, float]:
    """Per module, its share of the defects attributed to it (``counts``)."""
    total = sum(counts.values())
    return {m: c / total for m, c in sorted(counts.items())} if total else {}



@dataclass
class Learned:
    """One front end's learned choice in a campaign: its policy, and the test value against the
    models this source ran (each source its own, as each has its own coverage)."""

    guide: Guide
    policy: Policy
    frontend: str
    value: TestValue
    skipped: int = 0  # models of negative test value, not run

    @staticmethod
    def of(guide: Guide, frontend: str) -> Learned:
        return Learned(guide, guide.policy(frontend), frontend, guide.test_value())

    def scores(self, placed: Sequence[Block], tails: Sequence[str], d_in: int, d_out: int,
               cands: Sequence[Block]) -> np.ndarray:
        obs = observation(self.policy.ops, placed, tails, d_in, d_out, self.value.deficit())
        return self.policy.scores(obs, cands)

    def worth(self, g: Graph) -> tuple[float, np.ndarray]:
        """The model's test value and its predicted blocks per module."""
        predicted = self.guide.predict(of_graph(g, self.frontend))
        return self.value(predicted), predicted

    def summary(self) -> dict[str, object]:
        return {"skipped_negative": self.skipped, "ran": self.value.runs,
                "mean_predicted": {m: round(float(x), 1) for m, x in zip(self.value.modules, self.value.mean)}}
