"""Mixed campaigns (issue 14): ``--frontend tf,onnx`` deals case i to front end i mod k, each
front end with its own corpus, generator, coverage and search state."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gbft_action.action.config import ActionConfig, ConfigError
from gbft_action.campaign import Campaign, identity_of
from gbft_action.records.config import Config
from gbft_action.cli import main
from gbft_action.records import Summary
from gbft_action.corpus import load_corpus
from gbft_action.frontends import FRONTENDS, parse_frontends
from gbft_action.frontends import NEWEST_OPSET
from gbft_action.graph.generate import GenOptions
from gbft_action.search.guided import GuidedSource
from gbft_action.search.mixed import MixedSource

pytest.importorskip("onnx")


def test_front_end_lists_parse_in_order_and_bad_ones_name_the_value(capsys):
    assert [fe.name for fe in parse_frontends(" TF, onnx ")] == ["tf", "onnx"]
    assert parse_frontends("") == (FRONTENDS["tf"],)
    for text, msg in (("tf,onnx,tf", "front end 'tf' given twice in 'tf,onnx,tf'"),
                      ("tf,caffe", "unknown front end 'caffe'"), ("tf,", "empty front end in 'tf,'")):
        with pytest.raises(ValueError, match=msg):
            parse_frontends(text)
        with pytest.raises(SystemExit) as e:  # argparse: a one-line usage error, exit 2
            main(["fuzz", "--frontend", text, "--out", "/nonexistent/never"])
        assert e.value.code == 2 and msg in capsys.readouterr().err


def test_a_corpus_with_several_front_ends_is_a_usage_error(tmp_path, capsys):
    onnx_corpus = str(FRONTENDS["onnx"].default_corpus)
    assert main(["fuzz", "--frontend", "tf,onnx", "--corpus", onnx_corpus, "--out", str(tmp_path / "o")]) == 2
    assert "a corpus is one front end's blocks" in capsys.readouterr().err
    assert not (tmp_path / "o" / "cases.jsonl").exists()


def test_action_input_takes_a_list_and_rejects_what_the_cli_rejects(tmp_path):
    cfg = ActionConfig(frontend="tf, ONNX", workspace=str(tmp_path)).validate()
    assert cfg.frontends == "tf,onnx" and cfg.corpus_file == ""  # each front end its default corpus
    assert ActionConfig(frontend="onnx").validate().corpus_file == str(FRONTENDS["onnx"].default_corpus)
    with pytest.raises(ConfigError, match="input 'frontend': front end 'onnx' given twice"):
        ActionConfig(frontend="onnx,onnx").validate()
    with pytest.raises(ConfigError, match="input 'frontend': unknown front end 'caffe'"):
        ActionConfig(frontend="tf,caffe").validate()
    from gbft_action.action.main import _campaign, _olc
    camp = _campaign(cfg, tmp_path / "out", time.monotonic())
    assert isinstance(camp.source, MixedSource) and list(camp.corpora) == ["tf", "onnx"]
    # The coverage output: one figure per front end (one over both corpora would measure neither).
    # Built as summary.json is read back (records.summary.Outcomes), not from dicts: dicts hid a
    # crash of every mixed action run (issue 39).
    per = Summary.from_json({"models": 0, "frontends": {"tf": {"models": 1, "coverage": {"OLC": 0.5}},
                                                        "onnx": {"models": 1, "coverage": {"OLC": 0.25}}}}).frontends
    assert _olc(Summary(0, frontends=per)) == "tf=0.5000 onnx=0.2500" and _olc(Summary(0, coverage={"OLC": 0.5})) == "0.5000"
    (tmp_path / "c.yaml").write_text("blocks: []\n")
    with pytest.raises(ConfigError, match="input 'corpus' is one front end's blocks"):
        ActionConfig(frontend="tf,onnx", corpus="c.yaml", workspace=str(tmp_path)).validate()


ONE = (NEWEST_OPSET,)

def _hashes(src: MixedSource | GuidedSource, indices: range | list[int]) -> list[str]:
    return [src.next_graph(i).structure_hash() for i in indices]


def test_the_split_is_by_index_deterministic_and_each_front_end_keeps_its_own_coverage(tmp_path):
    # One opset: the ONNX front end's source is one guided source (search.opsets mixes opsets).
    mixed = Campaign(Config(out=tmp_path / "a", frontend="tf,onnx", seed=4, opsets=ONE)).source
    again = Campaign(Config(out=tmp_path / "b", frontend="tf,onnx", seed=4, opsets=ONE)).source
    assert isinstance(mixed, MixedSource)
    graphs = [mixed.next_graph(i) for i in range(10)]
    assert [g.structure_hash() for g in graphs] == _hashes(again, range(10))  # same seed, same models
    # Even cases are TensorFlow graphs (no front end in their meta, as before mixing), odd ones ONNX.
    assert [g.meta.get("frontend", "tf") for g in graphs] == ["tf", "onnx"] * 5
    # Each front end's generator is what it would be alone on its own cases: the other front
    # end's models never touch its coverage or MCTS tree.
    opts = GenOptions()
    for fe, first in (("tf", 0), ("onnx", 1)):
        alone = GuidedSource(load_corpus(FRONTENDS[fe].default_corpus, Config(out=tmp_path).opset), opts, 4)
        assert _hashes(alone, range(first, 10, 2)) == [g.structure_hash() for g in graphs[first::2]]
        assert mixed.sources[fe].coverage.to_json() == alone.coverage.to_json()
    tf_ops, onnx_ops = (set(mixed.sources[fe].coverage.op_types) for fe in ("tf", "onnx"))
    assert "Conv2d" in tf_ops and "Conv" in onnx_ops and "Conv" not in tf_ops


def test_single_front_end_runs_generate_and_identify_as_before(tmp_path):
    src = Campaign(Config(out=tmp_path / "a", seed=4)).source
    alone = GuidedSource(load_corpus(FRONTENDS["tf"].default_corpus), GenOptions(), 4)
    assert isinstance(src, GuidedSource) and _hashes(src, range(4)) == _hashes(alone, range(4))
    ident = identity_of(Config(out=tmp_path / "a"))
    assert "frontend" not in ident.to_json() and ident.corpus_sha256 == identity_of(Config(
        out=tmp_path / "a", corpus=str(FRONTENDS["tf"].default_corpus))).corpus_sha256


def test_search_state_is_per_front_end_and_single_states_still_load(tmp_path):
    mixed = Campaign(Config(out=tmp_path / "a", frontend="tf,onnx", seed=1, opsets=ONE)).source
    _hashes(mixed, range(6))
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "state.json").write_text(json.dumps(mixed.state()))
    resumed = Campaign(Config(out=tmp_path / "b", frontend="onnx,tf", state=str(tmp_path / "mixed"), opsets=ONE)).source
    for fe in ("tf", "onnx"):  # each front end takes its own entry, whatever the order given
        assert resumed.sources[fe].coverage.to_json() == mixed.sources[fe].coverage.to_json()
    # One front end's run takes its entry of a mixed state; a front end the state lacks starts fresh.
    single = Campaign(Config(out=tmp_path / "c", frontend="onnx", state=str(tmp_path / "mixed"), opsets=ONE)).source
    assert single.coverage.to_json() == mixed.sources["onnx"].coverage.to_json()
    fresh = Campaign(Config(out=tmp_path / "d", frontend="tflite", state=str(tmp_path / "mixed"))).source
    assert fresh.coverage.metrics()["OTC"] == 0.0
    # A single front end's state (as written before mixing) loads into a single run as before,
    # and is a usage error for a mixed run, which could not tell whose it is.
    (tmp_path / "single").mkdir()
    (tmp_path / "single" / "state.json").write_text(json.dumps(mixed.sources["tf"].state()))
    tf = Campaign(Config(out=tmp_path / "e", state=str(tmp_path / "single"))).source
    assert tf.coverage.to_json() == mixed.sources["tf"].coverage.to_json()
    with pytest.raises(ValueError, match="holds the state of a single front end's run"):
        Campaign(Config(out=tmp_path / "f", frontend="tf,onnx", state=str(tmp_path / "single")))
    assert not (tmp_path / "single" / "state.json.corrupt").exists()  # not called corrupt


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_mixed_campaign_judges_both_front_ends_apart_and_resumes(tmp_path):
    out = tmp_path / "o"
    cfg = Config(out=out, engine="mnn", budget=60, max_models=10, seed=2, jobs=2, frontend="tf,onnx",
                     minimize_share=0.0)
    Campaign(cfg).run()
    cfg = replace(cfg, max_models=16)  # resumed: the first 10 cases must regenerate exactly (else it raises)
    s = Campaign(cfg).run().to_json()
    recs = _records(out)
    assert [r["frontend"] for r in recs] == ["tf", "onnx"] * 8 and s["models"] == 16 and s["sessions"] == 2
    per = s["frontends"]
    assert {n: f["models"] for n, f in per.items()} == {"tf": 8, "onnx": 8} and "coverage" not in s
    for n in ("tf", "onnx"):
        mine = [r for r in recs if r["frontend"] == n]
        assert sum(per[n]["by_status"].values()) == 8 and per[n]["by_status"]["DCP"] == \
            sum(r["status"] == "DCP" for r in mine)
        assert 0 < per[n]["coverage"]["OTC"] <= 1
        # A failure carries the front end of its case (ONNX ones are tagged, TF ones as before).
        assert all(r["fingerprint"].get("frontend", "tf") == n for r in mine if "fingerprint" in r)
    assert per["tf"]["coverage"] != per["onnx"]["coverage"]
    state = json.loads((out / "state.json").read_text())["frontends"]
    assert "Conv2d" in state["tf"]["coverage"]["op_types"] and "Conv" in state["onnx"]["opsets"]["27"]["coverage"]["op_types"]
    assert json.loads((out / "campaign.json").read_text())["identity"]["frontend"] == "tf,onnx"
    from gbft_action.report.render import Renderer
    md = Renderer().summary(Summary.from_json(s), "", [], [], [])
    assert "| tf | 8 |" in md and "| onnx | 8 |" in md
