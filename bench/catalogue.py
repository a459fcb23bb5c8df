"""A catalogue of single-operator models whose MNN behaviour is known, checked on the real engine.

    .venv/bin/python bench/catalogue.py                      # list the entries
    .venv/bin/python bench/catalogue.py --verify [--only ID,ID] [--repeat N]
    .venv/bin/python bench/catalogue.py --show ID            # inputs, the reference's and MNN's outputs
    .venv/bin/python bench/catalogue.py --try Lrn --params '{"depth_radius": 5, ...}' --shape 1,4,7,8
    .venv/bin/python bench/catalogue.py --catalogue bench/catalogue/mnn-3.6.1-onnx.yaml --verify

``--verify`` runs every entry of ``bench/catalogue/mnn-3.6.1.yaml`` through a real ``Lane``
on MNN (x86, natively, a fresh engine worker per entry) and checks that the behaviour
recorded for it still holds: the status (DCP, DCF, MCF, IF), the kind of mismatch
(values, shape, nan, inf) or failure (unsupported, signal, missing-output, error) and,
where recorded, the operator, the signal and words of the message.  It prints one line
per entry, counts the control entries the oracle flags (false positives) and exits 1
when any entry disagrees.

Entries with ``values: random`` get the campaign's inputs (U[-1, 1] from the entry's
seed).  Entries with ``values: special`` need NaN, Inf, zero or denormal inputs: they
run on their own ``feed`` (each listed value cycled over the input tensor, given to
``Lane.run`` as its inputs), so they do not depend on where a campaign's special-value
generator happens to put its NaNs.

A few entries are small patterns (``model: {nodes: [...]}``): defects that show only
when one operator feeds another (a Concat fed through a Reshape by a Pad, a
FusedBatchNorm of a constant).  ``expect: {differs: true}`` checks the arrays
themselves (an output differs from TensorFlow's beyond the tolerance) whatever the
oracle's status: the oracle excuses some real differences (see the catalogue's
artefacts).

A catalogue whose header says ``frontend: onnx`` (``bench/catalogue/mnn-3.6.1-onnx.yaml``)
holds ONNX models: operators and parameters of ``ops.onnx_specs`` as the IR has them, NCHW,
converted by MNN's ONNX converter and judged against ONNX Runtime; ``--catalogue`` picks it
(``--try`` then runs ONNX operators too, unless ``--frontend`` says otherwise).

``--try`` runs one ad-hoc single-operator model and prints what happened; ``--show``
prints an entry's arrays (how the behaviours were read by hand).  The catalogue's
``defects`` and ``artefacts`` sections (the matching rules) are read by
``bench/triage.py``: a defect is a real MNN bug, an artefact a difference the harness
reports that is not one (the reference's own behaviour, an undefined case).
"""

from __future__ import annotations

import argparse
import json
import random
import signal as _signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from gbft_action.frontends import FRONTENDS
from gbft_action.graph.ir import Graph, TensorType
from gbft_action.graph.solver import Builder, GenError
from gbft_action.frontends import LEGACY_OPSET
from gbft_action.ops.registry import registry
from gbft_action.ops.shapes import MAX_ELEMS

CATALOGUE = Path(__file__).resolve().parent / "catalogue" / "mnn-3.6.1.yaml"
ONNX_CATALOGUE = CATALOGUE.with_name("mnn-3.6.1-onnx.yaml")  # the same engine through its ONNX converter
SYMPTOMS = ("wrong-result", "nan-inf", "precision", "crash", "unsupported", "conversion-error", "api-error",
            "timeout", "nondeterministic", "heap-damage", "tie")
VALUES = ("random", "special", "feed")  # feed: explicit finite inputs (a normal graph)
EXPECT_KEYS = {"status", "mismatch", "kind", "op", "signal", "message", "runs", "some_status", "differs"}


# --------------------------------------------------------------------------- the catalogue


RULE_FIELDS = ("symptom", "ops", "all_ops", "only_ops", "mismatch", "text", "model_ops", "all_model_ops",
               "model_text", "op_text")


@dataclass(frozen=True)
class Model:
    """What rules may read of a key's minimised model (its canonical bundle's minimized.json):
    each node's operator and parameters (compact JSON, keys sorted)."""

    nodes: tuple[tuple[str, str], ...] = ()  # (op, params as JSON)

    @staticmethod
    def of(graph: dict[str, Any] | None) -> "Model":
        if not graph:
            return Model()
        return Model(tuple((str(n.get("op", "")), json.dumps(n.get("params") or {}, sort_keys=True))
                           for n in graph.get("nodes", [])))

    def ops(self) -> set[str]:
        return {op.lower() for op, _ in self.nodes}

    def text(self, ops: set[str] | None = None) -> str:
        """The nodes as lines "op {params}" (those of ``ops`` only, when given), lower case."""
        return "\n".join(f"{op} {params}" for op, params in self.nodes
                         if ops is None or op.lower() in ops).lower()


@dataclass(frozen=True)
class Rule:
    """One way a reported key can belong to a defect (``bench/triage.py`` applies it).

    Every field given must hold: ``symptom``, the key's symptom class is one of these;
    ``ops``, the key names at least one of these operators (``all_ops``: all of them);
    ``only_ops``, every operator the key names is one of these; ``mismatch``, the key's
    mismatch kind is one of these (only fingerprints have one); ``text``, one of these
    words is in the key's title, detail or message (case-insensitive).  On the key's
    minimised model (its canonical bundle): ``model_ops``, it has at least one of these
    operators (``all_model_ops``: all of them); ``model_text``, one of these strings is in
    a node's line ``op {"param": value, ...}`` (JSON, keys sorted); ``op_text``, the same
    but only in the lines of nodes whose operator the key names.  A key without a model
    fails every model field."""

    symptom: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    all_ops: tuple[str, ...] = ()
    only_ops: tuple[str, ...] = ()
    mismatch: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    model_ops: tuple[str, ...] = ()
    all_model_ops: tuple[str, ...] = ()
    model_text: tuple[str, ...] = ()
    op_text: tuple[str, ...] = ()

    def matches(self, symptom: str, ops: list[str], text: str, mismatch: str = "", model: Model | None = None) -> bool:
        have = {o.lower() for o in ops if o}
        low = text.lower()
        m = model or Model()
        mops = m.ops()
        return ((not self.symptom or symptom in self.symptom)
                and (not self.ops or any(o.lower() in have for o in self.ops))
                and all(o.lower() in have for o in self.all_ops)
                and (not self.only_ops or (bool(have) and have <= {o.lower() for o in self.only_ops}))
                and (not self.mismatch or mismatch in self.mismatch)
                and (not self.text or any(t.lower() in low for t in self.text))
                and (not self.model_ops or any(o.lower() in mops for o in self.model_ops))
                and all(o.lower() in mops for o in self.all_model_ops)
                and (not self.model_text or any(t.lower() in m.text() for t in self.model_text))
                and (not self.op_text or any(t.lower() in m.text(have) for t in self.op_text)))


@dataclass(frozen=True)
class Defect:
    id: str
    title: str
    control: bool = False  # not a defect: the operators MNN gets right (a match is suspect)
    rules: tuple[Rule, ...] = ()
    notes: str = ""
    artefact: bool = False  # not an MNN defect: what the harness reports wrongly (the catalogue's artefacts)
    harness: str = ""  # artefacts: what the harness should do instead

    @property
    def real(self) -> bool:
        return not self.control and not self.artefact

    def matches(self, symptom: str, ops: list[str], text: str, mismatch: str = "", model: Model | None = None) -> bool:
        return any(r.matches(symptom, ops, text, mismatch, model) for r in self.rules)


@dataclass(frozen=True)
class Entry:
    id: str
    defect: str  # a defect's or an artefact's id
    op: str  # the operator (a pattern: its last node's)
    params: dict[str, Any]
    inputs: tuple[tuple[int, ...], ...]  # one shape per graph input (in0, in1, ...)
    expect: dict[str, Any]
    behaviour: str
    verified: str
    seed: int = 1
    values: str = "random"  # random: U[-1, 1] from the seed; special: ``feed`` (NaN, Inf, 0); feed: ``feed``
    feed: dict[str, list[float]] = field(default_factory=dict)  # input name -> values, cycled
    # A pattern: nodes n0, n1, ... as (op, input names, params); () for one operator.
    nodes: tuple[tuple[str, tuple[str, ...], dict[str, Any]], ...] = ()
    outputs: tuple[str, ...] = ()  # a pattern's outputs (default: the nodes nothing reads)
    frontend: str = "tf"  # the catalogue's: which operator table and converter the model goes through
    # The engine's settings (--engine-settings: transformer_fuse, threads, precision); {} = defaults.
    settings: dict[str, str] = field(default_factory=dict)
    opset: int = LEGACY_OPSET  # an ONNX entry's opset (``opset:`` in its model; 17 when absent)


@dataclass(frozen=True)
class Catalogue:
    engine: str
    version: str
    platform: str
    defects: tuple[Defect, ...]  # real defects and the controls
    entries: tuple[Entry, ...]
    artefacts: tuple[Defect, ...] = ()  # not MNN defects: the harness's or the reference's doing
    frontend: str = "tf"  # tf: TensorFlow models (reference TensorFlow); onnx: ONNX models (ONNX Runtime)

    def defect(self, did: str) -> Defect:
        return next(d for d in (*self.defects, *self.artefacts) if d.id == did)

    def matching_order(self) -> tuple[Defect, ...]:
        """Real defects, then artefacts, then the controls: a key goes to the first that matches
        (an artefact before a control: a denormal through RealDiv is TensorFlow's flush, not a
        misattribution)."""
        return (*[d for d in self.defects if not d.control], *self.artefacts,
                *[d for d in self.defects if d.control])


def _tuple(x: Any) -> tuple[str, ...]:
    if x is None:
        return ()
    return (str(x),) if isinstance(x, str) else tuple(str(v) for v in x)


def load(path: Path = CATALOGUE) -> Catalogue:
    """Read and check a catalogue file (ValueError naming the entry on anything malformed)."""
    d = yaml.safe_load(Path(path).read_text())
    frontend = str(d.get("frontend", "tf"))
    if frontend not in FRONTENDS or frontend == "tflite":  # tflite models are TF graphs: no catalogue of their own
        raise ValueError(f"{path}: frontend must be tf or onnx, not {frontend!r}")

    def one(x: dict[str, Any], artefact: bool) -> Defect:
        rules = []
        for r in x.get("match", []):
            unknown = set(r) - set(RULE_FIELDS)
            if unknown:
                raise ValueError(f"defect {x['id']}: unknown rule fields {sorted(unknown)}")
            rule = Rule(*(_tuple(r.get(k)) for k in RULE_FIELDS))
            bad = set(rule.symptom) - set(SYMPTOMS)
            if bad:
                raise ValueError(f"defect {x['id']}: unknown symptoms {sorted(bad)}")
            rules.append(rule)
        if artefact and not str(x.get("harness", "")).strip():
            raise ValueError(f"artefact {x['id']}: says nothing of what the harness should do (harness:)")
        return Defect(str(x["id"]), str(x["title"]), bool(x.get("control", False)) and not artefact, tuple(rules),
                      " ".join(str(x.get("notes", "")).split()), artefact, " ".join(str(x.get("harness", "")).split()))

    defects = [one(x, False) for x in d["defects"]]
    artefacts = [one(x, True) for x in d.get("artefacts") or []]
    ids = [x.id for x in (*defects, *artefacts)]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate defect ids")
    entries = []
    for x in d["entries"]:
        m = x["model"]
        shapes = m["inputs"] if "inputs" in m else [m["input"]]
        nodes = tuple((str(n["op"]), tuple(str(i) for i in n["in"]), dict(n.get("params") or {}))
                      for n in m.get("nodes") or [])
        if nodes and "op" in m:
            raise ValueError(f"entry {x['id']}: a model has an op or nodes, not both")
        e = Entry(id=str(x["id"]), defect=str(x["defect"]), op=str(m["op"]) if not nodes else nodes[-1][0],
                  params=dict(m.get("params") or {}) if not nodes else dict(nodes[-1][2]),
                  inputs=tuple(tuple(int(v) for v in s) for s in shapes), expect=dict(x["expect"]),
                  behaviour=" ".join(str(x["behaviour"]).split()), verified=str(x["verified"]).strip(),
                  seed=int(m.get("seed", 1)), values=str(x.get("values", "random")),
                  feed={k: [float(v) for v in vs] for k, vs in (x.get("feed") or {}).items()},
                  nodes=nodes, outputs=tuple(str(o) for o in m.get("outputs") or ()), frontend=frontend,
                  settings=_settings(x), opset=int(m.get("opset", LEGACY_OPSET)))
        if e.defect not in ids:
            raise ValueError(f"entry {e.id}: unknown defect {e.defect!r}")
        if e.values not in VALUES:
            raise ValueError(f"entry {e.id}: values must be one of {VALUES}")
        if e.values in ("special", "feed") and not e.feed:
            raise ValueError(f"entry {e.id}: values: {e.values} needs a feed")
        if set(e.expect) - EXPECT_KEYS or "status" not in e.expect:
            raise ValueError(f"entry {e.id}: expect needs a status, knows only {sorted(EXPECT_KEYS)}")
        entries.append(e)
    eids = [e.id for e in entries]
    if len(set(eids)) != len(eids):
        raise ValueError("duplicate entry ids")
    return Catalogue(str(d["engine"]), str(d["version"]), str(d.get("platform", "x86_64")), tuple(defects),
                     tuple(entries), tuple(artefacts), frontend)


# --------------------------------------------------------------------------- the models


def build_graph(e: Entry) -> Graph:
    """The entry's model: its operator on graph inputs of the given shapes, parameters exactly
    as written (the solver's draws are not used: the spec checks them and infers the output).
    A pattern (``nodes``): each node n0, n1, ... the same way, on graph inputs or earlier nodes.

    Raises GenError when the spec would not accept the model as it stands (another rank,
    an input the operator would need an adapter for, an empty or oversized output).
    An ONNX entry's operators are ONNX ones (``ops.onnx_specs``), and its graph says so
    (``meta.frontend``: the emitter and ONNX Runtime read it)."""
    reg = registry(e.frontend, e.opset)
    b = Builder(random.Random(0), e.seed, reg=reg)
    types = {f"in{i}": TensorType(s) for i, s in enumerate(e.inputs)}
    for name, t in types.items():
        b.add_input(name, t)
    nodes = e.nodes or ((e.op, tuple(types), e.params),)
    for k, (op, srcs, params) in enumerate(nodes):
        what = f"{e.id}: {op}" + (f" (n{k})" if e.nodes else "")
        spec = reg.specs.get(op)
        if spec is None:
            raise GenError(f"{what}: unknown operator")
        unknown = [x for x in srcs if x not in types]
        if unknown:
            raise GenError(f"{what}: unknown inputs {unknown}")
        if len(srcs) not in spec.arity:
            raise GenError(f"{what}: cannot take {len(srcs)} inputs")
        ins = [types[x] for x in srcs]
        if "case" in params:  # a recorded instance, by the test case or pattern it comes from
            params = {"instance": _instance_of(spec, str(params["case"]), str(params.get("dtype", "")), what)}
        lo, hi = spec.ranks
        if any(not lo <= t.rank <= hi for t in ins):
            raise GenError(f"{what}: takes ranks {lo}-{hi}")
        missing = set(spec.domains) - set(params)
        if len(ins) == 1 and missing:
            raise GenError(f"{what}: parameters missing: {sorted(missing)}")
        if spec.align(ins, dict(params)) != ins:
            raise GenError(f"{what}: would need adapters on these inputs")
        out = spec.infer(ins, dict(params))
        if out.size > MAX_ELEMS:
            raise GenError(f"{what}: output {out.shape} is larger than {MAX_ELEMS} elements")
        types[b._emit(op, list(srcs), dict(params), out, block=op, gnode=k)] = out
    meta = {"catalogue": e.id, "blocks": [n[0] for n in nodes]}
    g = b.finish({**meta, **reg.meta()})
    if e.outputs:
        unknown = [o for o in e.outputs if o not in {n.id for n in g.nodes}]
        if unknown:
            raise GenError(f"{e.id}: outputs name unknown nodes {unknown}")
        g.outputs = list(e.outputs)
        g.check()
    if e.values == "special" and hasattr(g, "values"):  # the graph flag: no guards, special values on purpose
        g.values = "special"
    if e.values in ("special", "feed"):
        unknown = set(e.feed) - set(g.inputs)
        if unknown:
            raise GenError(f"{e.id}: feed names unknown inputs {sorted(unknown)}")
    return g


def _instance_of(spec: Any, case: str, dtype: str, what: str) -> int:
    """The index of a recorded operator's instance from ``case`` ("pattern compress-columns",
    "test_pow_types_float32_int64") and, given, the ``dtype`` its fed input takes (one test case
    gives an instance per element type): indices change when the records are rebuilt, names not."""
    found = [i for i, inst in enumerate(getattr(spec, "instances", ()))
             if inst.case == case and (not dtype or inst.fed_type.dtype == dtype)]
    if not found:
        raise GenError(f"{what}: no recorded instance of case {case!r}")
    return found[0]


def special_inputs(e: Entry, g: Graph) -> dict[str, np.ndarray]:
    """The inputs of a special-values (or fed) entry: each fed input is its value list cycled over
    the tensor; an input without a feed is U[-1, 1] from the entry's seed."""
    rng = np.random.default_rng(e.seed)
    out = {}
    for name, t in sorted(g.inputs.items()):
        if name in e.feed:
            out[name] = np.resize(np.array(e.feed[name], np.float32), t.shape).astype(np.float32)
        else:
            out[name] = rng.uniform(-1.0, 1.0, size=t.shape).astype(np.float32)
    return out


# --------------------------------------------------------------------------- running them


@dataclass
class Outcome:
    status: str
    mismatch: str = ""
    kind: str = ""  # the fingerprint's kind
    op: str = ""
    signal: str = ""
    message: str = ""
    worst: list[dict[str, Any]] = field(default_factory=list)
    log: str = ""  # the engine's log tail (what it printed: heap-damage messages, converter errors)
    differs: bool | None = None  # an output differs from the reference's beyond the tolerance (None: no outputs)
    arrays: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)  # inputs/expected/actual

    def brief(self) -> str:
        what = self.mismatch or self.kind
        bits = [self.status + (f"/{what}" if what and what != "mismatch" else "")
                + ("+differs" if self.status == "DCP" and self.differs else "")]
        if self.signal:
            bits.append(self.signal)
        if self.op:
            bits.append(self.op)
        return " ".join(bits)


def from_result(res: Any) -> Outcome:
    """The outcome of a Lane run (the first platform's result)."""
    fp = res.fingerprint
    sig = _signal.Signals(res.signal).name if res.signal in _signal.Signals._value2member_map_ else ""
    worst = []
    for d in res.diffs:
        if not d.get("ok", True):
            worst = d.get("worst", [])[:3]
            break
    return Outcome(str(res.status), res.mismatch, fp.kind if fp else "", res.op or (fp.op if fp else ""), sig,
                   res.message, worst, res.log[-2000:], differs(res.arrays), dict(res.arrays))


def differs(arrays: dict[str, dict[str, np.ndarray]], rtol: float = 1e-3, atol: float = 1e-5,
            min_ratio: float = 0.999) -> bool | None:
    """Whether some output differs from the reference's (TensorFlow, ONNX Runtime), read from the
    arrays alone (the campaign's tolerance; NaN equals NaN; another shape differs), whatever
    the oracle concluded."""
    exp, act = arrays.get("expected") or {}, arrays.get("actual") or {}
    if not exp or not act:
        return None
    for k, e in exp.items():
        a = act.get(k)
        if a is None or np.shape(a) != np.shape(e):
            return True
        e64, a64 = np.asarray(e, np.float64), np.asarray(a, np.float64)
        if e64.size and np.isclose(a64, e64, rtol, atol, equal_nan=True).mean() < min_ratio:
            return True
    return False


def agrees(expect: dict[str, Any], o: Outcome) -> tuple[bool, str]:
    """Whether an outcome shows the recorded behaviour; the reason when it does not.  The
    mismatch is checked only for a mismatch, the signal only for a crash, the failure kind
    only for a conversion or inference failure (an entry may allow several statuses)."""
    def one_of(key: str, have: str) -> bool:
        want = expect.get(key)
        return want is None or have in ([want] if isinstance(want, str) else list(want))

    checks = [("status", o.status), ("op", o.op)]
    if o.status in ("DCF", "XPF", "XBF"):
        checks.append(("mismatch", o.mismatch))
    if o.status in ("MCF", "IF"):
        checks.append(("kind", o.kind))
    if o.kind == "signal":
        checks.append(("signal", o.signal))
    for key, have in checks:
        if not one_of(key, have):
            return False, f"{key} {have or '-'} (recorded {expect[key]})"
    words = expect.get("message")
    if words and str(words).lower() not in (o.message + "\n" + o.log).lower():
        return False, f"message lacks {words!r}: {o.message[:80]}"
    if "differs" in expect and o.differs is not None and o.differs != bool(expect["differs"]):
        return False, f"outputs {'differ' if o.differs else 'agree'} (recorded differs={expect['differs']})"
    return True, ""


def _settings(x: dict[str, Any]) -> dict[str, str]:
    """An entry's engine settings, checked as --engine-settings checks them (names the entry)."""
    from gbft_action.knowledge.registry import knowledge_of

    text = ",".join(f"{k}={v}" for k, v in (x.get("settings") or {}).items())
    try:
        return knowledge_of("mnn").parse_settings(text)
    except ValueError as err:
        raise ValueError(f"entry {x.get('id')}: settings: {err}") from None


def run_entry(lane: Any, e: Entry, budget: float = 120.0) -> Outcome:
    """One entry through a real Lane, on a fresh engine worker (no heap damage carried over);
    a special-values entry on its own feed (``Lane.run``'s ``inputs``)."""
    from gbft_action.rerun.replay import run_graph

    g = build_graph(e)
    inputs = special_inputs(e, g) if e.values in ("special", "feed") else None
    return from_result(run_graph(lane, g, budget, fresh=True, inputs=inputs))


def verify(cat: Catalogue, only: set[str] | None = None, repeat: int = 1) -> list[tuple[Entry, list[Outcome]]]:
    """Every (selected) entry on MNN, ``repeat`` times its ``runs`` (1 unless recorded: entries
    whose outcome varies from run to run), each run on a fresh engine worker."""
    from gbft_action.pipeline import Lane, LaneConfig

    from gbft_action.knowledge.registry import knowledge_of

    chosen = [e for e in cat.entries if not only or e.id in only]
    results: dict[str, list[Outcome]] = {e.id: [] for e in chosen}
    groups: dict[tuple[tuple[str, str], ...], list[Entry]] = {}
    for e in chosen:  # one lane per setting: the engine worker reads its settings at start
        groups.setdefault(tuple(sorted(e.settings.items())), []).append(e)
    with tempfile.TemporaryDirectory(prefix="gbft-catalogue-") as tmp:
        for k, (settings, entries) in enumerate(sorted(groups.items())):
            env = knowledge_of("mnn").env_for(dict(settings))
            lane = Lane(LaneConfig("mnn", Path(tmp) / f"lane{k}", frontend=FRONTENDS[cat.frontend], engine_env=env), 0)
            lane.start()
            try:
                for e in entries:
                    for _ in range(repeat * int(e.expect.get("runs", 1))):
                        results[e.id].append(run_entry(lane, e))
            finally:
                lane.stop()
    return [(e, results[e.id]) for e in chosen]


def _expect_text(x: dict[str, Any]) -> str:
    return " ".join(f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in x.items()
                    if k not in ("runs", "op", "some_status", "message"))


def agrees_all(expect: dict[str, Any], outs: list[Outcome]) -> list[str]:
    """Why the runs of one entry disagree with the catalogue ([] when they agree): every run
    must agree, and ``some_status`` must be the status of at least one run."""
    why = [w for ok, w in (agrees(expect, o) for o in outs) if not ok]
    some = expect.get("some_status")
    if some and outs and not any(o.status == some for o in outs):
        why.append(f"no run of {len(outs)} gave {some}")
    return why


def report(cat: Catalogue, rows: list[tuple[Entry, list[Outcome]]]) -> int:
    """Print the table; the number of entries that disagree with the catalogue."""
    used = {e.defect for e, _ in rows}
    n_art = len(used & {a.id for a in cat.artefacts})
    print(f"catalogue: MNN {cat.version} on {cat.platform}, {len(rows)} entries, "
          f"{len(used) - n_art} defects (controls included), {n_art} artefacts")
    print(f"{'entry':26s} {'defect / artefact':29s} {'values':7s} {'recorded':44s} {'seen':34s} ok")
    bad = 0
    for e, outs in rows:
        why = agrees_all(e.expect, outs)
        ok = not why
        bad += not ok
        seen = "; ".join(dict.fromkeys(o.brief() for o in outs))
        print(f"{e.id:26s} {e.defect:29s} {e.values:7s} {_expect_text(e.expect)[:44]:44s} {seen[:34]:34s} "
              f"{'yes' if ok else 'NO'}")
        for w in dict.fromkeys(why):
            print(f"    disagrees: {w}")
    controls = [e for e, _ in rows if cat.defect(e.defect).control]
    flagged = [e.id for e, outs in rows if cat.defect(e.defect).control
               and any(o.status != "DCP" or o.differs for o in outs)]
    print(f"controls: {len(controls)}, flagged by the oracle (false positives): {len(flagged)}"
          + (f" ({', '.join(flagged)})" if flagged else ""))
    print(f"entries disagreeing with the catalogue: {bad}")
    return bad


def show(o: Outcome, limit: int = 24) -> None:
    """An outcome with its arrays (flattened, the first ``limit`` elements of each)."""
    print(json.dumps({"status": o.status, "mismatch": o.mismatch, "kind": o.kind, "op": o.op, "signal": o.signal,
                      "message": o.message[:200], "worst": o.worst}))
    with np.printoptions(precision=4, linewidth=150, suppress=False):
        for kind in ("inputs", "expected", "actual"):
            for name, x in sorted(o.arrays.get(kind, {}).items()):
                print(f"  {kind:8s} {name:4s} {list(x.shape)} {x.reshape(-1)[:limit]}")
    if o.status in ("MCF", "IF"):
        print("  engine log: " + o.log[-600:].replace("\n", "\n    "))


def adhoc(op: str, params: dict[str, Any], shapes: list[tuple[int, ...]], seed: int,
          feed: dict[str, list[float]] | None, frontend: str = "tf", opset: int = LEGACY_OPSET) -> Catalogue:
    e = Entry("try", "try", op, params, tuple(shapes), {"status": "DCP"}, "", "", seed,
              "special" if feed else "random", feed or {}, frontend=frontend, opset=opset)
    return Catalogue("mnn", "?", "x86_64", (Defect("try", "try"),), (e,), frontend=frontend)


def catalogue_frontend(path: Path) -> str:
    """The front end a catalogue file names (its header's ``frontend:``, tf when absent)."""
    return str((yaml.safe_load(Path(path).read_text()) or {}).get("frontend", "tf"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--catalogue", type=Path, default=CATALOGUE,
                    help=f"the catalogue file (default {CATALOGUE.name}; {ONNX_CATALOGUE.name} for ONNX models)")
    ap.add_argument("--frontend", default="", help="--try: tf or onnx (default: the catalogue's)")
    ap.add_argument("--verify", action="store_true", help="run every entry on MNN and check it")
    ap.add_argument("--only", default="", help="comma-separated entry ids")
    ap.add_argument("--repeat", type=int, default=1, help="runs per entry (fresh worker each)")
    ap.add_argument("--try", dest="try_op", default="", help="run one single-operator model")
    ap.add_argument("--params", default="{}")
    ap.add_argument("--shape", action="append", default=[], help="input shape, e.g. 1,4,7,8 (repeat per input)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--opset", type=int, default=LEGACY_OPSET, help="--try: the ONNX opset (default 17)")
    ap.add_argument("--feed", default="", help='special values, e.g. \'{"in0": ["nan", 0, 1]}\'')
    ap.add_argument("--show", default="", help="run these entries (comma-separated) and print their arrays")
    a = ap.parse_args()
    if a.try_op:
        shapes = [tuple(int(v) for v in s.split(",")) for s in a.shape] or [(1, 4, 4, 3)]
        feed = {k: [float(x) for x in v] for k, v in json.loads(a.feed).items()} if a.feed else None
        fe = a.frontend or catalogue_frontend(a.catalogue)
        for _, outs in verify(adhoc(a.try_op, json.loads(a.params), shapes, a.seed, feed, fe, a.opset), repeat=a.repeat):
            for o in outs:
                show(o)
        return 0
    cat = load(a.catalogue)
    if a.show:
        for e, outs in verify(cat, set(a.show.split(",")), a.repeat):
            print(f"{e.id}: {e.op} {json.dumps(e.params)} on {[list(s) for s in e.inputs]} ({e.values})")
            for o in outs:
                show(o)
        return 0
    if not a.verify:
        for e in cat.entries:
            print(f"{e.id:26s} {e.defect:29s} {e.op:22s} {_expect_text(e.expect)}")
        return 0
    only = {x for x in a.only.split(",") if x} or None
    rows = verify(cat, only, a.repeat)
    return 1 if report(cat, rows) else 0


if __name__ == "__main__":
    sys.exit(main())
