"""The minimiser on toy predicates (no engine): it must find small failing programs."""

from __future__ import annotations

import json
import random

import pytest

from gbft_action.bugs.bundle import BugBook
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.bugs.minimize import GRAPH_INPUT, Program, Shrinker, Step, minimize, remove_steps
from gbft_action.corpus import load_corpus
from gbft_action.rerun.replay import CALL_MIN_S, CALL_SLACK_S, bundle_key, minimize_bug, replay, run_graph
from gbft_action.graph.generate import GenOptions, generate
from gbft_action.records import Status
from gbft_action.pipeline import CaseResult

from .conftest import case_meta, relu_sigmoid

CORPUS = load_corpus()


def big_graph(seed: int = 3, n: int = 20):
    return generate(random.Random(seed), CORPUS, GenOptions(blocks=(n, n)), seed)


def ops(g):
    return [n.op for n in g.block_nodes()]


def test_finds_the_single_culprit_operator():
    g = big_graph()
    culprit = ops(g)[len(ops(g)) // 2]
    small, res, stats = minimize(g, lambda h: culprit in ops(h), time_limit=30)
    assert ops(small) == [culprit]
    assert res is True and stats.calls > 0 and stats.sizes_to < stats.sizes_from


def test_keeps_a_pair_when_the_bug_needs_an_edge():
    # "fails" when an Add reads a Conv2d: needs both operators and the edge between them.
    steps = (Step("Relu", (GRAPH_INPUT,), "{}", "Relu"), Step("Conv2d", (0,), "{}", "Conv2d"),
             Step("Tanh", (1,), "{}", "Tanh"), Step("Add", (2, 1), "{}", "Add"), Step("Exp", (3,), "{}", "Exp"))
    prog = Program((1, 8, 8, 3), steps, 1)

    def pred(h):
        by = {n.id: n for n in h.nodes}

        def src_ops(n):
            out = []
            for i in n.inputs:
                while i in by and by[i].role == "adapter":
                    i = by[i].inputs[0]
                out.append(by[i].op if i in by else "input")
            return out

        return any(n.op == "Add" and "Conv2d" in src_ops(n) for n in h.block_nodes())

    s = Shrinker(prog, pred, time_limit=20)
    best = s.run()
    assert sorted(st.op for st in best.steps) == ["Add", "Conv2d"]
    assert best.key() < prog.key()


def test_shrinks_the_input_and_parameters():
    g = big_graph(5, 6)
    small, _, _ = minimize(g, lambda h: any(n.op == "Conv2d" for n in h.block_nodes()) or
                           any(n.op != "Reshape" for n in h.block_nodes()), time_limit=20)
    assert len(small.block_nodes()) == 1
    assert next(iter(small.inputs.values())).size == 1  # 1x1x1x1


def test_never_returns_something_larger_or_unrelated():
    g = big_graph(7, 10)
    calls = []

    def never(h):
        calls.append(h)
        return False

    small, res, stats = minimize(g, never, time_limit=5, stall_limit=10)
    assert small is g and res is None and 1 <= len(calls) <= 4 + 10  # 4 adapter draws of the start, 10 stalls


def test_stall_limit_stops_a_hopeless_search():
    g = big_graph(8, 12)
    small, _, stats = minimize(g, lambda h: False, time_limit=60, stall_limit=5)
    assert stats.calls == 4 + 5 and small is g  # 4 starting draws, then 5 stalls


def test_remove_steps_reconnects_consumers():
    steps = (Step("Relu", (GRAPH_INPUT,), "{}", "Relu"), Step("Tanh", (0,), "{}", "Tanh"),
             Step("Add", (1, 0), "{}", "Add"))
    p = remove_steps(Program((1, 2, 2, 1), steps, 0), {1})
    assert [s.op for s in p.steps] == ["Relu", "Add"] and p.steps[1].inputs == (0, 0)


class _ClockLane:
    """A lane that only records the budget of each call it is given (every model passes): what
    the minimiser of a live bundle asks of the engine, without one."""

    def __init__(self) -> None:
        self.budgets: list[float] = []
        self.platforms: dict[str, object] = {}

    def run(self, index, g, budget, platforms=None, base=False, inputs=None):  # noqa: ANN001
        self.budgets.append(budget)
        return CaseResult(index, g, Status.DCP)


def test_a_bundles_minimiser_never_gives_a_call_more_than_its_time_left(tmp_path):
    """A candidate that hangs the engine costs its call's budget: the budget must end near the
    minimiser's own limit (plus a little slack), never a stage timeout past it, or a diagnosis
    started near the campaign's deadline overruns it by that timeout."""
    g = big_graph(5, 8)
    fp = Fingerprint("compare", "DCF", "mismatch", "values", g.block_nodes()[-1].op)
    d = tmp_path / "bugs" / fp.id
    d.mkdir(parents=True)
    (d / "graph.json").write_text(g.to_json())
    (d / "meta.json").write_text(json.dumps({
        "id": fp.id, "fingerprint": fp.to_json(), "symptom": "wrong-result", "node": g.block_nodes()[-1].id,
        "title": fp.title, "status": "DCF", "engine": {"engine": "mnn", "version": "3.6.1"},
        "tolerance": {"rtol": 1e-3, "atol": 1e-5, "min_ratio": 0.999}, "tool_version": "0.1.0"}))
    lane = _ClockLane()
    minimize_bug(lane, BugBook(tmp_path), fp.id, 1.0, check_flaky=False)  # type: ignore[arg-type]
    assert lane.budgets and max(lane.budgets) <= max(CALL_MIN_S, 1.0 + CALL_SLACK_S)


@pytest.mark.slow
def test_a_minimised_model_replays_as_the_same_bug_by_the_key_its_minimiser_kept(nan_lane):
    """The minimiser keeps a bug's local key (symptom, operator, direction), not its whole
    fingerprint: replaying the minimised model, whose structure changed (a two-input Minimum
    became a one-input one in a CI run), is the same bug; a key naming another operator is not."""
    from dataclasses import replace as changed

    g = relu_sigmoid()
    res = run_graph(nan_lane, g)
    assert res.fingerprint is not None and res.symptom
    recorded = changed(res.fingerprint, structure="in-degree 2, input ranks [5,5]")  # the unminimised model's
    meta = case_meta(recorded, res.symptom, res.direction)
    assert replay(nan_lane, g, recorded).outcome == "different"
    assert replay(nan_lane, g, recorded, key=bundle_key(meta)).outcome == "same"
    other = meta.with_(fingerprint=changed(recorded, op="Tanh"))
    assert replay(nan_lane, g, recorded, key=bundle_key(other)).outcome == "different"
