"""Operator-level coverage: the paper's Table II, incrementality, persistence, DEC."""

from __future__ import annotations

import json

import pytest

from gbft_action.corpus import parse_corpus
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.search.coverage import Coverage, corpus_degrees, graph_level, graph_metrics

# Table I of the paper: the block corpus of test set I.
TABLE_I = {
    "name": "table-i",
    "n_maxspc": 10,
    "blocks": [
        {"name": "Conv2d", "in_degree": [1], "out_degree": [0, 1, 2]},
        {"name": "Relu", "in_degree": [1], "out_degree": [0, 1, 2]},
        {"name": "Add", "in_degree": [2], "out_degree": [0, 1, 2]},
    ],
}

S = (1, 8, 8, 4)  # the feature map every Conv2d/Relu of Figure 3 produces
T = (1, 4, 4, 2)  # the Add-only network's tensors
ADD = {"operand": "same"}


def conv(nid: str, src: str, k: int) -> Node:
    params = {"kh": k, "kw": k, "stride": 1, "dilation": 1, "padding": "SAME", "out_ch": 4}
    return Node(nid, "Conv2d", [src], params, TensorType(S))


def relu(nid: str, src: str) -> Node:
    return Node(nid, "Relu", [src], {}, TensorType(S))


def add(nid: str, a: str, b: str, shape: tuple[int, ...]) -> Node:
    return Node(nid, "Add", [a, b], dict(ADD), TensorType(shape))


def graph(inputs: dict[str, tuple[int, ...]], nodes: list[Node]) -> Graph:
    consumed = {s for n in nodes for s in n.inputs}
    g = Graph({k: TensorType(v) for k, v in inputs.items()}, nodes,
              [n.id for n in nodes if n.id not in consumed])
    g.check()
    return g


# Figure 3's three networks are only pictures; these three are consistent with
# every cell of Table II (n_t = 3, n_maxspc = 10):
#   Conv2d: out-degrees {2 (NN1), 1 (NN2)} = 2/3; successors {Relu} = 1/3;
#           vectors {3x3 conv, 1x1 conv} on the same input = 2/10.
#   Relu:   always out-degree 1 = 1/3 (so never an output: a Relu successor set
#           of size 1 needs it consumed, and one out-degree means always);
#           successors {Add} = 1/3; every Relu maps S to S = 1/10.
#   Add:    always two inputs (IDC 1/1); out-degrees {0, 1 (NN3's first Add)} =
#           2/3; successors {Add} = 1/3; vectors {S+S, T+T, T+[1,1,1,2]
#           broadcast} = 3/10.  NN2's Add repeats NN1's vector S+S.
# Since Relu may not end a network and Conv2d only feeds Relu, every output is an
# Add, so NN3 is a network of Adds alone.
def nn1() -> Graph:  # x -> Conv2d(3x3) -> {Relu, Relu} -> Add
    return graph({"x": (1, 8, 8, 3)},
                 [conv("c", "x", 3), relu("r1", "c"), relu("r2", "c"), add("a", "r1", "r2", S)])


def nn2() -> Graph:  # x -> Conv2d(1x1) -> Relu -> Add(., y)
    return graph({"x": (1, 8, 8, 3), "y": S},
                 [conv("c", "x", 1), relu("r", "c"), add("a", "r", "y", S)])


def nn3() -> Graph:  # Add(p, q) -> Add(., z) with z broadcast along the channels
    return graph({"p": T, "q": T, "z": (1, 1, 1, 2)},
                 [add("a1", "p", "q", T), add("a2", "a1", "z", T)])


def table_ii_coverage() -> Coverage:
    cov = Coverage.from_corpus(parse_corpus(TABLE_I))
    for g in (nn1(), nn2(), nn3()):
        assert cov.add(g)  # each network of the test set brings something new
    return cov


def pct(x: float) -> float:
    return round(x * 100, 1)


TABLE_II = {  # OTC, IDC, ODC, SEC, SPC, OLC in percent
    "Conv2d": (100, 100, 66.7, 33.3, 20, 64),
    "Relu": (100, 100, 33.3, 33.3, 10, 55.3),
    "Add": (100, 100, 66.7, 33.3, 30, 66),
}
TABLE_II_SET = (100, 100, 55.6, 33.3, 20, 61.8)
COLS = ("OTC", "IDC", "ODC", "SEC", "SPC", "OLC")


def test_table_ii_exact() -> None:
    cov = table_ii_coverage()
    assert cov.n_maxspc == 10 and cov.op_types == ["Add", "Conv2d", "Relu"]
    per = cov.per_op()
    for op, row in TABLE_II.items():
        assert tuple(pct(per[op][c]) for c in COLS) == row, op
    m = cov.metrics()
    assert tuple(pct(m[c]) for c in COLS) == TABLE_II_SET


def test_graph_that_brings_nothing_new() -> None:
    cov = table_ii_coverage()
    before = cov.to_json()
    # NN2 again, with another seed and a 3x3 conv: every item is already covered.
    again = graph({"x": (1, 8, 8, 3), "y": S}, [conv("c", "x", 3), relu("r", "c"), add("a", "r", "y", S)])
    again.seed = 7
    assert not cov.would_add(again)
    assert cov.gain(again) == 0
    assert not cov.add(again)
    assert cov.to_json() == before


def test_would_add_does_not_mutate() -> None:
    cov = Coverage.from_corpus(parse_corpus(TABLE_I))
    assert cov.would_add(nn1()) and cov.gain(nn1()) > 0
    assert cov.metrics()["OLC"] == 0.0
    assert cov.add(nn1()) and not cov.add(nn1())


def test_disallowed_degrees_are_not_coverage() -> None:
    cov = Coverage.from_corpus(parse_corpus(TABLE_I))
    # Relu with out-degree 3: outside Table I's {0, 1, 2}, so ODC does not grow.
    g = graph({"x": S}, [relu("r", "x"), relu("s1", "r"), relu("s2", "r"), relu("s3", "r")])
    cov.add(g)
    assert cov.counts()["Relu"]["ODC"] == 1  # only the out-degree 0 of s1..s3
    assert pct(cov.per_op()["Relu"]["ODC"]) == 33.3


def test_json_round_trip() -> None:
    cov = table_ii_coverage()
    d = cov.to_json()
    back = Coverage.from_json(json.loads(json.dumps(d)))
    assert back.to_json() == d
    assert back.per_op() == cov.per_op() and back.metrics() == cov.metrics()
    assert Coverage.from_json(json.dumps(d)).metrics() == cov.metrics()
    assert not back.add(nn1())  # the loaded state still knows what was covered


def test_from_json_rejects_other_versions() -> None:
    d = table_ii_coverage().to_json()
    d["version"] = 99
    with pytest.raises(ValueError, match="version"):
        Coverage.from_json(d)


def test_dec_counts_operator_triples() -> None:
    cov = table_ii_coverage()
    # NN1 and NN2 both give Conv2d -> Relu -> Add; NN3's a1 -> a2 has no third
    # operator (a2 is an output).  One triple of n_t^2 = 9 for Conv2d, none else.
    assert cov.counts()["Conv2d"]["DEC"] == 1
    assert cov.per_op()["Conv2d"]["DEC"] == pytest.approx(1 / 9)
    assert cov.metrics()["DEC"] == pytest.approx(1 / 27)
    # Relu -> Add -> Add and Add -> Add -> Add are new triples (and nothing else is).
    g = graph({"x": S, "y": S},
              [relu("r", "x"), add("a1", "r", "y", S), add("a2", "a1", "y", S), add("a3", "a2", "y", S)])
    assert cov.gain(g) == 2
    assert cov.add(g)
    assert cov.counts()["Relu"]["DEC"] == 1 and cov.counts()["Add"]["DEC"] == 1
    assert cov.metrics()["DEC"] == pytest.approx(3 / 27)


def test_dec_is_out_of_olc_unless_weighted() -> None:
    cov = table_ii_coverage()
    olc = cov.metrics()["OLC"]
    weighted = Coverage.from_json({**cov.to_json(), "weights": {"DEC": 1.0}})
    m = weighted.metrics()
    assert m["OLC"] == pytest.approx((5 * olc + m["DEC"]) / 6)


def test_bad_weights() -> None:
    with pytest.raises(ValueError):
        Coverage(["Relu"], {"Relu": {1}}, {"Relu": {0}}, weights={"XYZ": 1.0})
    with pytest.raises(ValueError):
        Coverage(["Relu"], {"Relu": {1}}, {"Relu": {0}},
                 weights={k: 0.0 for k in ("OTC", "IDC", "ODC", "SEC", "SPC")})


def test_ops_outside_the_corpus_are_ignored() -> None:
    cov = Coverage.from_corpus(parse_corpus(TABLE_I))
    g = graph({"x": S}, [Node("t", "Tanh", ["x"], {}, TensorType(S)), relu("r", "t")])
    cov.add(g)
    assert cov.counts()["Relu"]["IDC"] == 1 and cov.counts()["Relu"]["SEC"] == 0
    assert "Tanh" not in cov.per_op()


def test_adapters_are_part_of_an_edge_not_vertices() -> None:
    # Adapters realise a data flow of the digraph: the edge Relu -> Relu goes
    # through a Reshape adapter, and the adapter itself is not covered.
    corpus = parse_corpus({"blocks": [{"name": "Relu", "in_degree": [1], "out_degree": [0, 1]},
                                      {"name": "Reshape", "in_degree": [1], "out_degree": [1]}]})
    cov = Coverage.from_corpus(corpus)
    reshape = Node("a0", "Reshape", ["r0"], {"shape": [64, 4], "rank": 2}, TensorType((64, 4)),
                   role="adapter")
    cov.add(graph({"x": S}, [Node("r0", "Relu", ["x"], {}, TensorType(S)), reshape,
                             Node("r", "Relu", ["a0"], {}, TensorType((64, 4)))]))
    per = cov.per_op()
    assert per["Reshape"]["OTC"] == 0.0 and per["Relu"]["SEC"] == 0.5


def test_corpus_degrees_for_subgraph_inner_ops() -> None:
    corpus = parse_corpus({"blocks": [
        {"name": "Relu", "in_degree": [1], "out_degree": [0, 2]},
        {"name": "Hoist", "ops": ["Mul", "Mul", "Add"], "inner_edges": [[0, 2], [1, 2]],
         "in_degree": [1, 2], "out_degree": [1]},
        {"name": "CBR", "ops": ["Conv2d", "Biasadd", "Relu"], "inner_edges": [[0, 1], [1, 2]],
         "in_degree": [1], "out_degree": [0, 1]},
    ]})
    ins, outs = corpus_degrees(corpus)
    assert ins["Relu"] == {1} and outs["Relu"] == {0, 2}  # its own block wins
    assert ins["Conv2d"] == {1} and outs["Conv2d"] == set(range(6))
    assert ins["Add"] == {2} and ins["Mul"] == {1}  # Add(Mul, Mul) takes two inputs
    cov = Coverage.from_corpus(corpus)
    assert cov.n_t == 5 and cov.n_maxspc == 200


def test_spc_saturates_at_n_maxspc() -> None:
    cov = Coverage(["Relu"], {"Relu": {1}}, {"Relu": {0}}, n_maxspc=2)
    for h in (2, 3, 4):
        cov.add(graph({"x": (1, h)}, [Node("r", "Relu", ["x"], {}, TensorType((1, h)))]))
    # Past the cap a new vector is not new coverage (it would not raise SPC).
    assert cov.counts()["Relu"]["SPC"] == 2 and cov.per_op()["Relu"]["SPC"] == 1.0


def test_graph_level_metrics() -> None:
    assert graph_level(nn1()) == {"NOO": 4, "NOT": 3, "NOP": 2, "NTR": 1, "NSA": 3}
    # NN2: Conv2d -> Relu -> Add; NN3: two Adds with different input shapes.
    assert graph_level(nn2()) == {"NOO": 3, "NOT": 3, "NOP": 2, "NTR": 1, "NSA": 3}
    assert graph_level(nn3()) == {"NOO": 2, "NOT": 1, "NOP": 1, "NTR": 0, "NSA": 2}
    m = graph_metrics([nn1(), nn2(), nn3()])
    assert m == pytest.approx({"NOO": 3.0, "NOT": 7 / 3, "NOP": 5 / 3, "NTR": 2 / 3, "NSA": 8 / 3})
    assert graph_metrics([]) == {"NOO": 0.0, "NOT": 0.0, "NOP": 0.0, "NTR": 0.0, "NSA": 0.0}
    assert graph_level(nn1(), op_types={"Relu", "Add"})["NOO"] == 3


def test_attribute_coverage_counts_each_choice_value_an_operator_took() -> None:
    """ATC (issue 26): of the values an operator's choice parameters may take (Pad's three
    modes, as a block narrows them), the share seen; floats and lists are not values of it.
    Out of OLC by default; a new value is still new coverage (the MCTS path is rewarded)."""
    corpus = parse_corpus({"frontend": "onnx", "blocks": [
        {"name": "Pad", "in_degree": [1], "out_degree": [0, 1]},
        {"name": "Relu", "in_degree": [1], "out_degree": [0, 1]}]})
    cov = Coverage.from_corpus(corpus)
    assert cov.allowed_attr["Pad"] == {'mode="constant"', 'mode="reflect"', 'mode="edge"'}
    t = TensorType((1, 2, 3, 3))

    def pad(mode: str) -> Graph:
        return Graph({"in0": t}, [Node("n0", "Pad", ["in0"], {"mode": mode, "pads": [[0, 0]] * 4, "value": 0.5}, t,
                                       "Pad", "block")], ["n0"], 1, {"frontend": "onnx"})

    assert cov.add(pad("edge"))
    assert cov.per_op()["Pad"]["ATC"] == pytest.approx(1 / 3) and cov.per_op()["Relu"]["ATC"] == 0.0
    assert ("ATC", "Pad", 'mode="reflect"') in cov.new_items(pad("reflect"))
    assert cov.add(pad("reflect")) and cov.per_op()["Pad"]["ATC"] == pytest.approx(2 / 3)
    m = cov.metrics()
    assert m["OLC"] == pytest.approx(sum(m[k] for k in ("OTC", "IDC", "ODC", "SEC", "SPC")) / 5)  # ATC not in it
    back = Coverage.from_json(json.loads(json.dumps(cov.to_json())))
    assert back.per_op()["Pad"]["ATC"] == pytest.approx(2 / 3)
    # A state file from before ATC reads, with no attribute values allowed.
    old = {k: v for k, v in cov.to_json().items() if k != "allowed_attr"}
    old["version"] = 1
    assert Coverage.from_json(old).allowed_attr["Pad"] == frozenset()
