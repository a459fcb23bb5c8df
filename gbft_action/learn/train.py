"""``gbft learn train``: a guide folder from a data set (issue 38).

The predictor is trained on the rows outside the held-out fifth (learn.predictor.held_out, by a
hash of each row's key) and judged on that fifth: R² per module of the scaled log target, and
the rank correlation (Spearman) of each model's total blocks; both go into ``learned.json``.
The modules' bug share comes from the rows of known defects' repros (keys ``defect:...``,
bench/bug_modules.py collects them): a repro counts for the modules where it ran more than the
data set's models do on average.  Then each front end's policy is trained against the exported
predictor (learn.policy), so that what it learned is what the fuzz loop will run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..campaign import corpus_of
from ..records.config import Config
from ..records.learned import DatasetMeta, DatasetRow, LearnedMeta
from ..search.features import FEATURES_VERSION, Encoder, FeatureGraph
from ..search.learned import Guide, bug_share
from . import predictor as P
from .policy import train_policy

DEFECT = "defect:"


def train_guide(data: Path, out: Path, frontends: Sequence[str], steps: int, epochs: int = 60, seed: int = 0,
                say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> LearnedMeta:
    meta = DatasetMeta.read(data)
    if meta is None:
        raise ValueError(f"{data}: not a data set (no dataset.json; see gbft learn collect)")
    if meta.features_version != FEATURES_VERSION:
        raise ValueError(f"{data}: features v{meta.features_version}; this gbft makes v{FEATURES_VERSION}: collect again")
    every = list(DatasetRow.read_all(data))
    rows = [r for r in every if r.complete]  # a crash's count is partial: not a target
    fit = [r for r in rows if not P.held_out(r.key)]
    test = [r for r in rows if P.held_out(r.key)]
    if len(fit) < 8 or not test:
        raise ValueError(f"{data}: {len(rows)} rows: too few to train and judge a predictor")
    enc = Encoder.of(FeatureGraph.from_json(r.features) for r in fit)
    modules, scale = P.targets(fit)
    say(f"train: {len(fit)} rows to fit, {len(test)} held out ({len(every) - len(rows)} cut short by a crash left out); {len(enc.vocab)} operator tokens, {len(modules)} modules")
    net = P.train(P.encode(fit, enc, modules, scale), enc.width, len(modules), epochs, seed, log=say)
    quality = judge(net, P.encode(test, enc, modules, scale), modules, scale, [r.key for r in test])
    say(f"train: held out: total blocks Spearman {quality['total_spearman']:.3f}, "
        f"mean R² over modules {quality['mean_r2']:.3f}")
    out.mkdir(parents=True, exist_ok=True)
    P.export(net, enc.width, out / "predictor.onnx")
    learned = LearnedMeta(meta.engine, FEATURES_VERSION, enc.vocab, modules, tuple(float(s) for s in scale),
                          bug_share(defect_modules(rows, modules)), quality=quality)
    learned.write(out)  # the guide without policies: what the policies train against
    guide = Guide(out)
    policies = {}
    for fe in frontends:
        corpus = corpus_of(Config(out=out, frontend=fe), fe)
        policies[fe] = train_policy(corpus, guide, fe, out / f"policy-{fe}.onnx", steps, seed, log=say)
    learned = LearnedMeta(meta.engine, FEATURES_VERSION, enc.vocab, modules, learned.scale, learned.bug_share,
                          policies=policies, quality=quality)
    learned.write(out)
    return learned


def judge(net: P.CoverageNet, data: Sequence[P.Encoded], modules: Sequence[str], scale: np.ndarray,
          keys: Sequence[str]) -> dict[str, object]:
    """The predictor on models it never saw: R² per module, Spearman of the total, both also for
    the package models alone (``node:`` keys: not the generator's)."""
    pred = P.predict(net, data)
    true = np.stack([d.y for d in data])
    r2 = {m: round(_r2(true[:, k], pred[:, k]), 3) for k, m in enumerate(modules)}
    out: dict[str, object] = {"held_out": len(data), "r2": r2, "mean_r2": round(float(np.mean(list(r2.values()))), 3)}

    def totals(y: np.ndarray) -> np.ndarray:
        return np.expm1(y * scale).sum(1)

    out["total_spearman"] = round(_spearman(totals(true), totals(pred)), 3)
    pkg = [i for i, k in enumerate(keys) if k.startswith("node:")]
    if len(pkg) > 2:
        out["package_models"] = len(pkg)
        out["package_total_spearman"] = round(_spearman(totals(true[pkg]), totals(pred[pkg])), 3)
    return out


def _r2(y: np.ndarray, p: np.ndarray) -> float:
    ss = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - p) ** 2).sum()) / ss if ss > 0 else 0.0


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1]) if len(a) > 1 and ra.std() > 0 and rb.std() > 0 else 0.0


def defect_modules(rows: Sequence[DatasetRow], modules: Sequence[str]) -> dict[str, int]:
    """How many known defects each module holds: a defect's repro is in the modules where it ran
    at least half again the mean blocks of the data set's models of its front end (its own code
    there, not what every model of that format runs); a repro that ran nowhere above the mean
    counts for the module it ran most of."""
    mean: dict[tuple[str, str], float] = {}
    for fe in {r.frontend for r in rows}:
        plain = [r for r in rows if r.frontend == fe and not r.key.startswith(DEFECT)]
        for m in modules:
            mean[fe, m] = float(np.mean([r.modules.get(m, 0) for r in plain])) if plain else 0.0
    counts: dict[str, int] = {}
    for r in rows:
        if r.key.startswith(DEFECT) and r.modules:
            above = [m for m in modules if r.modules.get(m, 0) >= 1.5 * mean[r.frontend, m] + 1]
            for m in above or [max(r.modules, key=lambda k: r.modules[k])]:
                counts[m] = counts.get(m, 0) + 1
    return counts
