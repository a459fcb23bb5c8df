"""Known failures steer generation (issue 24 item 5): once failures settle on a trigger (an
operator, or an operator with one parameter value), models carrying it become rare, and the
same seed with the same engine behaviour still gives the same models."""

from __future__ import annotations

import collections
import random

import pytest

from gbft_action.corpus import ONNX_CORPUS, load_corpus
from gbft_action.graph.generate import GenOptions
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.graph.solver import Builder
from gbft_action.ops.registry import registry
from gbft_action.search.guided import GuidedSource
from gbft_action.search.known import SETTLE, KnownFailures, triggers
from gbft_action.records.case import CaseRecord

CORPUS = load_corpus(ONNX_CORPUS)
N = 300
LONG = 2000  # models: about 1,700 cover every operator pair (SEC) of the corpus


def _engine(g: Graph, op: str) -> CaseRecord:
    """A toy engine's record: wrong at the first node of type ``op`` (localised), else a pass."""
    bad = next((n for n in g.block_nodes() if n.op == op), None)
    return _rec("DCF", node=bad.id, op=op) if bad else PASS


def _rec(status: str, **kw: str) -> CaseRecord:
    return CaseRecord.from_json({"status": status, **kw})


PASS = _rec("DCP")


def _campaign(seed: int, defect: str | None, n: int = N) -> list[Graph]:
    src = GuidedSource(CORPUS, GenOptions(blocks=(2, 12)), seed)
    out = []
    for i in range(n):
        g = src.next_graph(i)
        out.append(g)
        src.feedback(i, g, _engine(g, defect) if defect else PASS)
    return out


def _share(graphs: list[Graph], op: str) -> float:
    return sum(any(n.op == op for n in g.block_nodes()) for g in graphs) / len(graphs)


def test_a_settled_failures_trigger_becomes_rarer():
    plain, steered = _campaign(4, None, LONG), _campaign(4, "Softmax", LONG)
    # The first models are the same: nothing has failed yet, nothing steers.
    assert [g.to_json() for g in plain[:5]] == [g.to_json() for g in steered[:5]]
    # Once types, degrees and edges are covered (a model bringing new ones always runs),
    # models holding the failing Softmax are drawn again.
    late = slice(LONG - 1000, LONG)
    before, after = _share(plain[late], "Softmax"), _share(steered[late], "Softmax")
    assert before > 0.1 and after < before / 3, (before, after)
    assert after > 0  # rarer, never banned: a change to the operator can still show
    # Operators that do not fail keep their place (but those of a subgraph block holding a
    # Softmax, attention's MatMul, Transpose and Mul, go with it), and every operator still shows.
    others = {n.op for g in plain for n in g.block_nodes()} - {"Softmax", "MatMul", "Transpose", "Mul"}
    assert sum(_share(steered[late], op) for op in others) > 0.85 * sum(_share(plain[late], op) for op in others)
    ops = [{n.op for g in gs[late] for n in g.block_nodes()} for gs in (plain, steered)]
    assert len(ops[1]) >= len(ops[0]) - 2


def test_steering_is_deterministic_and_travels_in_state():
    a, b = _campaign(9, "Where"), _campaign(9, "Where")
    assert [g.to_json() for g in a] == [g.to_json() for g in b]
    src = GuidedSource(CORPUS, GenOptions(blocks=(2, 8)), 9)
    for i, g in enumerate(a):
        src.known.observe(g, _engine(g, "Where"))
    again = GuidedSource(CORPUS, GenOptions(blocks=(2, 8)), 9)
    again.load_state(src.state())  # --state: the next run starts from what this one learned
    assert again.known.settled() == src.known.settled() and "Where" in again.known.settled()


def test_a_parameter_value_settles_apart_from_its_operator():
    k = KnownFailures()
    t = TensorType((1, 2, 3, 3))
    for i in range(20):
        mode = "reflection" if i % 2 else "zeros"
        g = Graph({"in0": t}, [Node("n0", "GridSample", ["in0"], {"padding_mode": mode, "align_corners": 0.5}, t,
                                   "GridSample")], ["n0"], seed=i)
        k.observe(g, _rec("DCF", node="n0") if mode == "reflection" else PASS)
    risky = k.settled()
    # Floats are no trigger; the failing value is the riskiest, the operator half as risky.
    assert "GridSample.align_corners=0.5" not in triggers(g.nodes[0])
    assert risky["GridSample.padding_mode=reflection"] > 0.8 > risky["GridSample"]
    assert "GridSample.padding_mode=zeros" not in risky
    assert k.failed["GridSample"] >= SETTLE
    never = random.Random(0)
    zeros = Graph({"in0": t}, [Node("n0", "GridSample", ["in0"], {"padding_mode": "zeros"}, t, "GridSample")],
                  ["n0"], seed=0)
    # A settled parameter value tells: the zeros GridSample is not steered, the reflection one is.
    assert k.risk(zeros.nodes[0]) == 0.0 and k.risk(g.nodes[0]) == 1.0
    assert all(k.keep(zeros, never) for _ in range(200)) and sum(k.keep(g, never) for _ in range(200)) < 40


def test_a_crash_no_operator_is_named_for_settles_on_the_operator_present_whenever_it_happens():
    """A converter crash names no operator: the operator in every crashing model (more often
    than in models at large) stands out, the operators that are merely common do not."""
    src = GuidedSource(CORPUS, GenOptions(blocks=(2, 12)), 5)
    # 2 N models: with the exported forms in the corpus a model holds fewer Softmax blocks, and
    # at N a merely common Concat's lift came within 2.5 times Softmax's by chance (0.31, 0.76).
    for i in range(2 * N):
        g = src.next_graph(i)
        crash = any(n.op == "Softmax" for n in g.block_nodes())
        src.feedback(i, g, _rec("MCF") if crash else PASS)
    k = src.known
    # (not attention's MatMul, Transpose and Mul: that block holds a Softmax, they crash with it)
    common = max(k.share(op) for op in ("Concat", "Less", "Add", "Conv", "Relu"))
    assert k.share("Softmax") > 0.6 and k.share("Softmax") > 2.5 * common, (k.share("Softmax"), common)


def test_new_coverage_of_the_risky_operator_itself_earns_no_pass():
    t = TensorType((1, 2, 3, 3))

    def conv(mode: str, seed: int) -> Graph:
        return Graph({"in0": t}, [Node("n0", "Conv", ["in0"], {"auto_pad": mode}, t, "Conv"),
                                  Node("n1", "Relu", ["n0"], {}, t, "Relu")], ["n1"], seed=seed)

    src = GuidedSource(CORPUS, GenOptions(blocks=(2, 8)), 1)
    for i in range(SETTLE + 2):
        g = conv("SAME_LOWER", i)
        src.known.observe(g, _rec("DCF", node="n0"))
    g = conv("SAME_LOWER", 99)
    young_conv = {("SPC", "Conv", ((1, 2, 3, 3), "SAME_LOWER"))}
    young_relu = {("SPC", "Relu", ((1, 2, 3, 3),))}
    steered = [src._steered_away(g, young_conv, random.Random(i)) for i in range(200)]
    # Conv is young in coverage, but it is where the model's risk lies: drawn again nearly always.
    assert sum(steered) > 150
    # New coverage of another operator (here Relu) still always runs.
    assert not any(src._steered_away(g, young_relu, random.Random(i)) for i in range(200))
    # A Conv without the settled parameter value carries no risk: never steered.
    assert not any(src._steered_away(conv("NOTSET", 7), young_conv, random.Random(i)) for i in range(200))


def _forms(narrow, n: int = 300) -> collections.Counter:
    """MatMul's form over ``n`` nodes the solver places on a rank-4 input (``narrow``: steering)."""
    reg, forms = registry("onnx"), collections.Counter()
    for i in range(n):
        b = Builder(random.Random(i), i, "normal", reg, narrow)
        b.add_op("MatMul", [b.add_input("in0", TensorType((1, 2, 3, 4)))])
        forms[next(x.params["form"] for x in b.g.nodes if x.op == "MatMul")] += 1
    return forms


def test_a_settled_parameter_value_is_left_out_of_the_draw_the_operator_stays():
    """MNN's MatMul by a 1-D operand gives no outputs (a failure named MatMul, no node): once
    it settled, the solver leaves "vector" out of most draws; MatMul itself is still placed."""
    k = KnownFailures()
    t = TensorType((1, 2, 3, 4))
    for i in range(40):
        form = ("vector", "weight", "batched", "left")[i % 4]
        g = Graph({"in0": t}, [Node("n0", "MatMul", ["in0"], {"form": form}, t, "MatMul")], ["n0"], seed=i)
        k.observe(g, _rec("IF", op="MatMul") if form == "vector" else PASS)
    plain, steered = _forms(None), _forms(k.narrow)
    assert plain["vector"] > 50  # a quarter of the draws
    assert 0 < steered["vector"] < plain["vector"] / 4, (plain, steered)  # rare, never banned
    assert sum(steered.values()) == sum(plain.values())  # every node still a MatMul
    assert min(steered[f] for f in ("weight", "batched", "left")) > 0.8 * min(plain[f] for f in ("weight", "batched", "left"))


def test_narrowing_leaves_other_operators_and_never_empties_a_choice():
    from gbft_action.ops.domains import Choice

    k = KnownFailures()
    t = TensorType((1, 2, 3, 3))
    for i in range(10):  # every value of MatMul.form fails
        for form in ("vector", "input"):
            g = Graph({"in0": t}, [Node("n0", "MatMul", ["in0"], {"form": form}, t, "MatMul")], ["n0"], seed=i)
            k.observe(g, _rec("DCF", node="n0"))
    doms = {"form": Choice(("vector", "input")), "mode": Choice(("a", "b"))}
    rng = random.Random(0)
    assert all(k.narrow("MatMul", doms, rng)["form"].values for _ in range(100))  # never empty
    assert k.narrow("Relu", doms, rng) is doms  # nothing settled on its parameters
