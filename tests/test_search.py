"""Guided generation: MCTS, mutations, the Algorithm 1 loop, state."""

from __future__ import annotations

import json
import math
import random
import subprocess

import pytest

from gbft_action.corpus import load_corpus, subgraph_problem
from gbft_action.graph.generate import GenOptions, draw_edges, realise
from gbft_action.graph.mutations import BNA, BNR, GEA, GER, PM, TSM, duplicate_op, remove_op
from gbft_action.ops.specs import SPECS
from gbft_action.search.guided import GraphArms, GuidedSource
from gbft_action.search.mcts import E, MCTSChooser, TreeNode

from .conftest import ROOT, gbft_cmd

CORPUS = load_corpus()


def skeleton(seed: int, n: int = 8):
    rng = random.Random(seed)
    sk = draw_edges(rng, CORPUS, GenOptions(blocks=(n, n)))
    sk.blocks = ["Relu"] * sk.n
    return rng, sk


# --------------------------------------------------------------------------- MCTS

def test_uct_potential_is_the_papers_formula():
    node = TreeNode("Relu", 1, n=4, v=3)
    assert node.potential(16) == pytest.approx(3 / 4 + (1 / math.sqrt(2)) * math.sqrt(math.log(16) / 4))
    assert E == pytest.approx(1 / math.sqrt(2))
    assert TreeNode("Relu", 1).potential(5) == math.inf  # unvisited children first


def test_mcts_respects_depth_children_and_path_uniqueness():
    src = GuidedSource(CORPUS, GenOptions(blocks=(4, 4)), seed=1, mutations=False)
    for i in range(150):
        src.next_graph(i)
    tree = src.mcts
    assert tree is not None
    stack = [tree.root]
    while stack:
        node = stack.pop()
        assert len(node.children) <= 3 and node.depth <= 10
        stack.extend(node.children)
    assert tree.root.n == 150 + src.discarded and len(tree.root.children) == 3
    blocks, path = tree.choose(random.Random(0), src.coverage)
    ops = [op for b in blocks for op in b.ops if not b.is_subgraph]
    assert len(ops) == len(set(ops)), "an operator appears twice on one path"
    assert [p.depth for p in path] == list(range(len(path)))


def test_expansion_picks_the_lowest_coverage_operator():
    src = GuidedSource(CORPUS, GenOptions(blocks=(3, 3)), seed=2, mutations=False)
    for i in range(30):
        src.next_graph(i)
    per = src.coverage.per_op()
    chooser = MCTSChooser(CORPUS)
    blocks, _ = chooser.choose(random.Random(3), src.coverage)
    low = min(v["OLC"] for v in per.values())
    assert any(per[op]["OLC"] == low for op in blocks[0].ops)


def test_backpropagation_updates_the_whole_path():
    a, b = TreeNode("", 0), TreeNode("Relu", 1)
    MCTSChooser.backpropagate([a, b], 1.0)
    MCTSChooser.backpropagate([a, b], 1.0, visit=False)
    assert (a.n, a.v, b.n, b.v) == (1, 2.0, 1, 2.0)


# --------------------------------------------------------------------------- mutations

def test_gea_and_ger_change_edge_counts_by_the_papers_amounts():
    rng, sk = skeleton(4, 12)
    n_edges = len(sk.edges)
    assert GEA().apply(rng, sk, CORPUS, 0.2)
    assert len(sk.edges) == n_edges + math.ceil(n_edges * 0.2)
    m = len(sk.edges)
    assert GER().apply(rng, sk, CORPUS, 0.2)
    assert len(sk.edges) == m - math.floor(m * 0.2)
    assert all(a < b for a, b in sk.edges)
    assert not GER().apply(rng, sk, CORPUS, 0.0)


def test_bna_bnr_keep_subgraphs_well_formed():
    for name in ("SSDFeatureConcat", "TFHoistCommonFactor", "MNNConvBiasRelu"):
        b = CORPUS.block(name)
        for i in range(len(b.ops)):
            dup = duplicate_op(b, i)
            assert len(dup.ops) == len(b.ops) + 1 and subgraph_problem(dup) is None
            rem = remove_op(b, i)
            if rem is not None and subgraph_problem(rem) is None:
                assert len(rem.ops) == len(b.ops) - 1


def test_subgraph_mutants_realise_into_valid_graphs():
    rng, sk = skeleton(5, 6)
    sk.blocks = ["SSDFeatureConcat"] * sk.n
    assert BNA().apply(rng, sk, CORPUS, 1.0)
    g = realise(rng, CORPUS, sk, 7)
    assert sum(1 for n in g.nodes if n.op == "Conv2d" and n.role == "block") > 2 * sk.n
    rng, sk = skeleton(6, 6)
    sk.blocks = ["SSDFeatureConcat"] * sk.n
    assert BNR().apply(rng, sk, CORPUS, 1.0)
    g = realise(rng, CORPUS, sk, 7)
    assert sum(1 for n in g.nodes if n.role == "block") < 5 * sk.n
    assert "mutant_blocks" in g.meta


def test_tsm_and_pm_change_the_source():
    rng, sk = skeleton(7)
    old = sk.input_shape
    changed = [TSM().apply(random.Random(i), sk, CORPUS, 0) for i in range(5)]
    assert any(changed) and sk.input_shape != old and sk.input_shape[0] == 1
    sk.edges = [(i, i + 1) for i in range(sk.n - 1)]  # a chain: Conv2d takes one input
    sk.blocks = ["Conv2d"] * sk.n
    assert PM().apply(rng, sk, CORPUS, 0)
    (key, fixed), = sk.fixed_params.items()
    (pname, value), = fixed.items()
    assert SPECS["Conv2d"].domains[pname].contains(value)
    g = realise(rng, CORPUS, sk, 3)
    node = next(n for n in g.nodes if n.gnode == int(key.split("#")[0]) and n.role == "block")
    if pname not in ("kh", "kw", "stride", "dilation", "padding"):  # repaired against shapes otherwise
        assert node.params[pname] == value


# --------------------------------------------------------------------------- the loop

def test_guided_generation_is_deterministic_and_learns():
    def run(seed: int) -> tuple[list[str], dict]:
        src = GuidedSource(CORPUS, GenOptions(blocks=(5, 5)), seed)
        return [src.next_graph(i).to_json() for i in range(40)], src.state()

    a, sa = run(3)
    b, sb = run(3)
    assert a == b and sa == sb
    assert run(4)[0] != a
    assert sa["mcts"]["root"]["n"] >= 40


def test_only_new_coverage_is_kept_and_the_rest_counted():
    src = GuidedSource(CORPUS, GenOptions(blocks=(1, 1)), seed=1, chooser="random", mutations=False,
                       n_maxspc=1, max_attempts=3)
    for i in range(200):
        src.next_graph(i)
    assert src.discarded > 0 and src.generated == 200 + src.discarded


def test_state_round_trip_continues_where_it_left_off():
    src = GuidedSource(CORPUS, GenOptions(blocks=(5, 5)), seed=9)
    for i in range(30):
        src.next_graph(i)
    st = json.loads(json.dumps(src.state()))
    fresh = GuidedSource(CORPUS, GenOptions(blocks=(5, 5)), seed=10)
    fresh.load_state(st)
    assert fresh.coverage.metrics() == src.coverage.metrics()
    assert fresh.mcts.to_json() == src.mcts.to_json()
    before = fresh.coverage.metrics()["OLC"]
    fresh.next_graph(0)
    assert fresh.coverage.metrics()["OLC"] >= before


def test_graph_arms_follow_the_reward():
    arms = GraphArms([("rn", 2), ("rn", 6)])
    rng = random.Random(0)
    for _ in range(200):
        a = arms.pick(rng)
        arms.update(*a, 1.0 if a == ("rn", 2) else 0.1)
    assert arms.n[("rn", 2)] > 3 * arms.n[("rn", 6)]


@pytest.mark.slow
def test_cli_mcts_beats_random_on_olc(tmp_path):
    olc = {}
    for name, extra in (("mcts", []), ("random", ["--chooser", "random", "--mutations", "off"])):
        out = tmp_path / name
        subprocess.run([*gbft_cmd(), "fuzz", "--engine", "mnn", "--max-models", "400", "--blocks", "10-10",
                        "--seed", "5", "--out", str(out), "--budget", "300", "--quiet", "--minimize-share", "0",
                        *extra],
                       cwd=ROOT, check=True, capture_output=True)
        s = json.loads((out / "summary.json").read_text())
        assert s["models"] == 400
        cov = s["coverage"]
        assert all(0.0 <= cov[k] <= 1.0 for k in ("OTC", "IDC", "ODC", "SEC", "DEC", "SPC", "OLC"))
        assert set(cov["graph"]) == {"NOO", "NOT", "NOP", "NTR", "NSA"}
        olc[name] = cov["OLC"]
        assert json.loads((out / "state.json").read_text())["coverage"]
    assert olc["mcts"] >= 0.85
    assert olc["random"] < olc["mcts"]


def test_an_attempt_the_solver_fails_on_is_lost_not_the_campaign(monkeypatch):
    """s3l: a GenError from one case's generation ended a 10-minute campaign with no summary.
    Now the attempt is counted (coverage's solver_errors) and the next one stands in."""
    from gbft_action.graph.solver import GenError

    src = GuidedSource(CORPUS, GenOptions(blocks=(3, 3)), seed=2, mutations=False)
    real, calls = src._attempt, []

    def flaky(rng, index, steer=False):
        calls.append(index)
        if len(calls) == 1:
            raise GenError("ConvTranspose would produce shape (1, 15, 2553, 0)")
        return real(rng, index, steer)

    monkeypatch.setattr(src, "_attempt", flaky)
    g = src.next_graph(0)
    assert g.block_nodes() and g.meta["attempt"] >= 1 and src.summary()["solver_errors"] == 1
    monkeypatch.setattr(src, "_attempt", lambda *a: (_ for _ in ()).throw(GenError("always")))
    with pytest.raises(GenError):  # every attempt failing is a bug to see, not a model to make up
        src.next_graph(1)
