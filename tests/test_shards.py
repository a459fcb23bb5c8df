"""Shards (``--shard I/N``) and ``gbft merge`` (issue 15, items 1, 2 and the dead shard of 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gbft_action.action.config import ActionConfig, ConfigError
from gbft_action.corpus import load_corpus
from gbft_action.graph.generate import GenOptions
from gbft_action.merge import MergeError, merge
from gbft_action.records.config import ShardError, parse_shard
from gbft_action.search import RandomSource, case_seed, shard_of_seed
from gbft_action.search.coverage import Coverage
from gbft_action.search.guided import GuidedSource
from gbft_action.search.mcts import combine_trees
from gbft_action.records.case import CaseRecord, read_cases

from .conftest import ROOT

CORPUS = load_corpus()


def gbft(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """This checkout's gbft (not an installed one), as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gbft_action.cli", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("text,want", [("1/1", (1, 1)), ("1/2", (1, 2)), ("2/2", (2, 2)), (" 3/8 ", (3, 8))])
def test_shard_parses(text, want):
    assert parse_shard(text) == want


@pytest.mark.parametrize("text", ["0/2", "3/2", "x/y", "2", "1/0", "-1/2", "1/2/3", ""])
def test_bad_shard_is_an_error_naming_it(text):
    with pytest.raises(ShardError, match="I/N"):
        parse_shard(text)
    with pytest.raises(ConfigError, match="input 'shard'"):
        ActionConfig(shard=text).validate()


@pytest.mark.parametrize("text", ["0/2", "3/2", "x/y"])
def test_bad_shard_on_the_command_line_is_one_line_exit_2(tmp_path, text):
    p = gbft("fuzz", "--shard", text, "--out", str(tmp_path / "out"), timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "--shard" in p.stderr and repr(text) in p.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- disjoint by construction

def test_unsharded_seeds_are_those_of_before_shards():
    import hashlib

    old = lambda s, i: int.from_bytes(hashlib.sha256(f"gbft:{s}:{i}".encode()).digest()[:4], "little") & 0x7FFFFFFF
    assert all(case_seed(5, i) == case_seed(5, i, (1, 1)) == old(5, i) for i in range(50))


def test_each_shard_draws_its_own_residue_class_of_seeds():
    for n in (2, 3, 7):
        for i in range(1, n + 1):
            seeds = [case_seed(11, k, (i, n)) for k in range(300)]
            assert all(shard_of_seed(s, n) == i and 0 <= s <= 0x7FFFFFFF for s in seeds)


def test_guided_shards_never_share_a_model_even_where_the_space_is_tiny():
    # One block per model and no mutations: structures repeat, within and across shards;
    # models (their graph hashes) never repeat across shards.
    opts = GenOptions(blocks=(1, 1))
    srcs = [GuidedSource(CORPUS, opts, 4, mutations=False, shard=(k, 2)) for k in (1, 2)]
    graphs = [[s.next_graph(i) for i in range(120)] for s in srcs]
    hashes = [{g.structure_hash() for g in gs} for gs in graphs]
    assert not hashes[0] & hashes[1]
    blocks = [{tuple(g.meta["blocks"]) for g in gs} for gs in graphs]
    assert blocks[0] & blocks[1]  # the same structures: what keeps them apart is the seed
    rs = [RandomSource(CORPUS, opts, 4, (k, 3)) for k in (1, 2, 3)]
    rh = [{r.next_graph(i).structure_hash() for i in range(60)} for r in rs]
    assert not (rh[0] & rh[1] or rh[0] & rh[2] or rh[1] & rh[2])


def test_a_shard_replays_itself():
    opts = GenOptions(blocks=(1, 8))
    runs = []
    for _ in range(2):
        src = GuidedSource(CORPUS, opts, 9, shard=(2, 3))
        out = []
        for i in range(30):
            g = src.next_graph(i)
            src.feedback(i, g, CaseRecord.from_json({"status": "MCF" if i % 5 == 0 else "DCP"}))
            out.append(g.to_json())
        runs.append(out)
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------- search state

def tree(n: int, v: float, kids: list[dict] | None = None, b: str = "", d: int = 0) -> dict:
    return {"b": b, "d": d, "n": n, "v": v, "c": kids or []}


def test_trees_combine_as_base_plus_each_shards_own_visits():
    base = {"tc1": 10, "tc2": 1, "max_children": 3, "root": tree(4, 2.0, [tree(4, 2.0, b="Relu", d=1)])}
    s1 = {**base, "root": tree(6, 3.0, [tree(5, 2.0, b="Relu", d=1), tree(1, 1.0, b="Exp", d=1)])}
    s2 = {**base, "root": tree(7, 2.0, [tree(7, 2.0, b="Relu", d=1)])}
    got = combine_trees(base, [s1, s2])["root"]
    assert (got["n"], got["v"]) == (4 + 2 + 3, 2.0 + 1.0 + 0.0)
    assert [(c["b"], c["n"], c["v"]) for c in got["c"]] == [("Relu", 4 + 1 + 3, 2.0), ("Exp", 1, 1.0)]
    assert combine_trees(base, [s1]) == s1  # one shard: its own tree
    assert combine_trees(None, [s1]) == s1


def items_of(items: list) -> set[str]:
    return {json.dumps(x) for x in items}


def test_coverage_union_holds_each():
    src = [GuidedSource(CORPUS, GenOptions(blocks=(2, 6)), 1, shard=(k, 2)) for k in (1, 2)]
    for s in src:
        for i in range(15):
            s.next_graph(i)
    u = src[0].coverage.union(src[1].coverage)
    for s in src:
        for kind, by_op in s.coverage.to_json()["seen"].items():
            for op, items in by_op.items():
                assert items_of(items) <= items_of(u.to_json()["seen"][kind][op])
    assert Coverage.from_json(u.to_json()).to_json() == u.to_json()


# --------------------------------------------------------------------------- two real shards

SHARD_ARGS = ["--budget", "25", "--max-models", "12", "--jobs", "1", "--seed", "3", "--blocks", "1-6", "--quiet"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shards")
    outs = {}
    for name, shard in (("a", "1/2"), ("b", "2/2"), ("a_again", "1/2")):
        outs[name] = root / name
        p = gbft("fuzz", *SHARD_ARGS, "--shard", shard, "--out", str(outs[name]))
        assert p.returncode == 0, p.stderr[-2000:]
    return outs


def cases(out: Path) -> list[dict]:
    """cases.jsonl's whole lines, as the JSON they are."""
    return [r.to_json() for r in read_cases(out / "cases.jsonl")[0]]


def seen(out: Path) -> dict:
    return json.loads((out / "state.json").read_text())["coverage"]["seen"]


@pytest.mark.slow
def test_real_shards_are_disjoint_and_each_reproducible(shards):
    a, b, again = (cases(shards[k]) for k in ("a", "b", "a_again"))
    assert a and b
    assert not {r["hash"] for r in a} & {r["hash"] for r in b}
    n = min(len(a), len(again))  # a time budget may cut the two runs at different cases
    assert n >= 4 and [r["hash"] for r in a[:n]] == [r["hash"] for r in again[:n]]
    campaign = json.loads((shards["b"] / "campaign.json").read_text())
    assert campaign["identity"]["shard"] == "2/2" and campaign["config"]["shard"] == "2/2"


@pytest.mark.slow
def test_merged_shards_are_one_campaign(shards, tmp_path):
    m = tmp_path / "m"
    p = gbft("merge", str(shards["a"]), str(shards["b"]), "--out", str(m))
    assert p.returncode == 0, p.stderr
    a, b, merged = cases(shards["a"]), cases(shards["b"]), cases(m)
    assert len(merged) == len(a) + len(b)
    assert [r["index"] for r in merged] == sorted(r["index"] for r in merged)
    assert {r["hash"] for r in merged} == {r["hash"] for r in a} | {r["hash"] for r in b}
    for r in merged:
        if "case_dir" in r:
            assert (m / r["case_dir"] / "graph.json").exists()
    # Coverage: at least that of either shard.
    for s in ("a", "b"):
        for kind, by_op in seen(shards[s]).items():
            for op, items in by_op.items():
                assert items_of(items) <= items_of(seen(m)[kind][op])
    summary = json.loads((m / "summary.json").read_text())
    for s in ("a", "b"):
        own = json.loads((shards[s] / "summary.json").read_text())
        assert summary["coverage"]["OLC"] >= own["coverage"]["OLC"]
    # Known bugs and bundles: the union, each fingerprint's occurrences those of the merged cases.
    known = json.loads((m / "known_bugs.json").read_text())
    own = [json.loads((shards[s] / "known_bugs.json").read_text()) for s in ("a", "b")]
    assert set(known) == set(own[0]) | set(own[1])
    for fid, entry in known.items():
        assert entry["count"] == sum(o.get(fid, {}).get("count", 0) for o in own)
        assert json.loads((m / "bugs" / fid / "meta.json").read_text())["occurrences"] == entry["count"]
    assert summary["models"] == len(merged) and summary["shards"] == {
        "1/2": {"models": len(a), "complete": True}, "2/2": {"models": len(b), "complete": True}}
    keys = [rc["key"] for rc in summary["root_causes"]]
    assert len(keys) == len(set(keys))
    # --state of the next run reads the merged state.
    state = json.loads((m / "state.json").read_text())
    assert set(state["shards"]) == {"1/2", "2/2"} and state["coverage"]["seen"] == seen(m)


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_merging_is_idempotent_and_associative(shards, tmp_path):
    m = tmp_path / "m"
    merge([shards["a"], shards["b"]], m)
    first = snapshot(m)
    merge([m, shards["a"]], m)  # with one of its inputs
    assert snapshot(m) == first
    merge([shards["b"], m, m], m)  # a shard twice, in another order
    assert snapshot(m) == first
    x = tmp_path / "x"
    merge([shards["a"]], x)
    merge([x, shards["b"]], m)  # (a) + b == a + b
    assert snapshot(m) == first


@pytest.mark.slow
def test_a_shard_that_died_half_way_merges_with_a_warning(shards, tmp_path):
    dead = tmp_path / "dead"
    shutil.copytree(shards["b"], dead)
    for name in ("summary.json", "state.json", "known_bugs.json"):
        (dead / name).unlink()
    raw = (dead / "cases.jsonl").read_bytes()
    (dead / "cases.jsonl").write_bytes(raw[:-30])  # killed mid-line
    complete = len(cases(shards["b"])) - 1
    m = tmp_path / "m"
    p = gbft("merge", str(shards["a"]), str(dead), "--out", str(m))
    assert p.returncode == 0, p.stderr
    warnings = [ln for ln in p.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and str(dead) in warnings[0] and "2/2" in warnings[0]
    assert len(cases(m)) == len(cases(shards["a"])) + complete
    summary = json.loads((m / "summary.json").read_text())
    assert summary["shards"]["2/2"] == {"models": complete, "complete": False}
    # Its fingerprints are known to the next run, though it died before writing its known bugs.
    known = json.loads((m / "known_bugs.json").read_text())
    assert {r["key"] for r in cases(m) if "key" in r} <= set(known)
    assert (dead / "cases.jsonl").read_bytes() == raw[:-30]  # the input is left as it was


@pytest.mark.slow
def test_report_of_the_merged_output_files_one_issue_per_root_cause(shards, tmp_path):
    from gbft_action.report.reporter import ReportConfig, report

    from .test_report import CTX, REPO, TOKEN, bot_issues, tracker
    from .github_fake import GitHubFake

    m = tmp_path / "m"
    merge([shards["a"], shards["b"]], m)
    from gbft_action.records import Summary
    from gbft_action.report.reporter import tracked

    # Reported one by one: policy report, less the wrong results no operator gives alone (tracked).
    reported = [rc for rc in Summary.read(m).root_causes if rc.policy == "report" and not tracked(rc)]
    assert reported
    with GitHubFake(token=TOKEN) as fake:
        fake.add_repo(REPO)
        res = report(ReportConfig(m, max_new_issues=50), tracker(fake), CTX)
        issues = bot_issues(fake)
        fake.assert_no_violations()
    # One issue per reported root cause, and a tracking issue per class summarised (NaN/Inf...).
    bugs = [x for x in res.filed if not x.root_cause.endswith("-tracking")]
    assert len(issues) == len(res.filed) and len(bugs) == res.bugs_filed == len(reported)
    assert sorted(x.root_cause for x in bugs) == sorted(rc.key for rc in reported)
    assert "One campaign merged from 2 shards." in (m / "summary.md").read_text()


def test_merge_refuses_another_campaign(tmp_path):
    for name, seed in (("a", 1), ("b", 2)):
        out = tmp_path / name
        out.mkdir()
        ident = {"seed": seed, "shard": f"{'ab'.index(name) + 1}/2", "platforms": []}
        (out / "campaign.json").write_text(json.dumps({"identity": ident, "config": {"shard": ident["shard"]}}))
    with pytest.raises(MergeError, match="another campaign.*seed"):
        merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    with pytest.raises(MergeError, match="no campaign.json"):
        merge([tmp_path], tmp_path / "m")
    warnings: list[str] = []
    with pytest.raises(MergeError, match="another campaign"):  # an empty input is skipped, not the error
        merge([tmp_path / "a", tmp_path, tmp_path / "b"], tmp_path / "m", warn=warnings.append)
    skipped = [w for w in warnings if "skipped" in w]
    assert len(skipped) == 1 and f"{tmp_path}: no campaign.json" in skipped[0]
    # --out is replaced as a whole: never a folder that is not an input or an earlier merge.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep")
    with pytest.raises(MergeError, match="--out"):
        merge([tmp_path / "a"], mine)
    with pytest.raises(MergeError, match="--out"):
        merge([tmp_path / "a"], tmp_path / "b")  # another shard's output
    assert (mine / "precious.txt").read_text() == "keep"


def test_the_action_input_reaches_the_campaign(tmp_path, monkeypatch):
    import time

    import gbft_action.campaign as campaign
    from gbft_action.campaign import identity_of
    from gbft_action.action.main import _campaign

    seen = []
    monkeypatch.setattr(campaign, "Campaign", lambda cfg: seen.append(cfg) or cfg)
    cfg = ActionConfig.from_env({"INPUT_SHARD": "2/3", "GITHUB_WORKSPACE": str(tmp_path)}).validate()
    assert cfg.shard_pair == (2, 3)
    _campaign(cfg, tmp_path / "out", time.monotonic())
    assert seen[0].shard == (2, 3) and identity_of(seen[0]).shard == "2/3"


@pytest.mark.slow
def test_merged_verdicts_are_aggregated_again_with_the_shards_confirmations(shards, tmp_path):
    """With a base build: a fingerprint with new models in one shard and seen on the base build
    in the other keeps its new models (they count wherever they sit, issue 35), but no shard
    confirmed it, so it is unchecked, never blamed; one confirmed new by its shard stays new."""
    from gbft_action.bugs import triage

    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        shutil.copytree(shards[name], out)
        record = json.loads((out / "campaign.json").read_text())
        record["identity"]["base"] = "dist/base"
        (out / "campaign.json").write_text(json.dumps(record))
        outs.append(out)
    recs = {o: cases(o) for o in outs}
    fids = [r["key"] for r in recs[outs[0]] if "key" in r]
    assert len(fids) >= 2
    new, old = fids[0], fids[1]
    for o, rs in recs.items():
        for r in rs:  # every case passes on the base build, but for one model of b that shows `old`
            r["base"] = {**{k: r[k] for k in ("index", "hash", "seed", "status")}, "status": "DCP"}
            r["verdict"] = "new" if "key" in r else ""
        if o == outs[1]:
            rs[0]["base"] = {**rs[0]["base"], "status": "DCF", "key": old, "fingerprint": {"id": old, "title": "t"}}
        (o / "cases.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rs))
    confirmed = triage.aggregate([CaseRecord.from_json(r) for r in recs[outs[0]]])
    confirmed[new].verdict, confirmed[new].confirmation = triage.Verdict.NEW, "6 of 6 rounds"
    triage.write_verdicts(outs[0], {new: confirmed[new]})
    m = tmp_path / "m"
    merge(outs, m)
    verdicts = triage.read_verdicts(m)
    assert verdicts[new].verdict is triage.Verdict.NEW and verdicts[new].confirmation == "6 of 6 rounds"
    assert verdicts[old].verdict is triage.Verdict.UNCHECKED and verdicts[old].new_models >= 1
    summary = json.loads((m / "summary.json").read_text())
    assert new in summary["new_failures"] and old not in summary["new_failures"]
    assert summary["triage"]["counts"]["unchecked"] >= 1


@pytest.mark.slow
def test_shards_of_a_campaign_of_two_opsets_merge_per_opset(tmp_path):
    """The ONNX front end writes at 27 and 17 by default (search.opsets): its state is one per
    opset, and merged so; the merged summary's operators are those of both opsets."""
    outs = [tmp_path / n for n in ("a", "b")]
    for out, shard in zip(outs, ("1/2", "2/2")):
        p = gbft("fuzz", *SHARD_ARGS, "--frontend", "onnx", "--shard", shard, "--out", str(out))
        assert p.returncode == 0, p.stderr[-2000:]
    merge(outs, tmp_path / "m")
    state = json.loads((tmp_path / "m" / "state.json").read_text())
    assert set(state["opsets"]) == {"27", "17"} and all("shards" in s for s in state["opsets"].values())
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    from gbft_action.merge import _coverage_summary

    at = {o: _coverage_summary(s)["OLC"] for o, s in state["opsets"].items()}
    assert at["27"] != at["17"] and summary["coverage"]["OLC"] == at["27"]  # the main opset's metrics
    ops = set().union(*(set(json.loads((o / "summary.json").read_text())["coverage"]["operators"]) for o in outs))
    assert set(summary["coverage"]["operators"]) == ops
