"""Guidance learned from the engine's own code (issue 38): features, the test value, the policy's
draw, per-model module counts, and the pipeline end to end on a tiny instrumented engine (data
set, predictor, policy, a learned campaign)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gbft_action.engines.coverage import Blocks, ModulePlacer
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.records import RecordError
from gbft_action.records.learned import DatasetRow, LearnedMeta
from gbft_action.search.features import OTHER, RELATIONS, Encoder, FeatureGraph, attr_buckets, of_graph, of_onnx
from gbft_action.search.learned import TestValue, bug_share, draw

COVERED = Path(__file__).parent / "data" / "covered_engine"


def _graph() -> Graph:
    t = TensorType((1, 3, 4, 4))
    conv = Node("n0", "Conv", ["in0"], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, t)
    add = Node("n1", "Add", ["n0", "in0"], {}, t)
    return Graph({"in0": t}, [conv, add], ["n1"])


def test_a_model_becomes_nodes_with_tokens_and_edges_with_the_slot_they_feed():
    fg = of_graph(_graph(), "onnx")
    assert [n.op for n in fg.nodes] == ["<input>", "onnx:Conv", "onnx:Add"]
    assert [n.rank for n in fg.nodes] == [4, 4, 4] and fg.nodes[1].dtype == "float32"
    assert fg.edges == ((0, 1, 0), (1, 2, 0), (0, 2, 1))  # Add's second operand is slot 1
    assert FeatureGraph.from_json(json.loads(json.dumps(fg.to_json()))) == fg
    # The same attribute value of the same operator lands in the same bucket; another value moves.
    assert attr_buckets("onnx:Conv", {"pads": [1, 1, 1, 1]}) == attr_buckets("onnx:Conv", {"pads": [1, 1, 1, 1]})
    assert len({attr_buckets("onnx:Conv", {"pads": [p] * 4}) for p in range(8)}) > 1

    enc = Encoder.of([fg])
    assert enc.vocab[0] == OTHER and "onnx:Conv" in enc.vocab
    x = enc.nodes(FeatureGraph((fg.nodes[1], fg.nodes[1].__class__("tf:Never", "int64", 9))))
    assert x.shape == (2, enc.width) and x[1, 0] == 1.0  # a token it never saw is <other>
    rel = enc.relations(fg)
    assert len(rel) == len(RELATIONS) and rel[0].shape == (2, 2) and rel[1].shape == (2, 1)
    assert rel[RELATIONS.index("rev")].shape == (2, 3)  # every edge reversed


def test_an_onnx_file_becomes_the_same_kind_of_features():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Add", ["y", "w"], ["z"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])])
    fg = of_onnx(helper.make_model(g))
    assert [n.op for n in fg.nodes] == ["<const>", "<input>", "onnx:Relu", "onnx:Add"]
    assert (1, 2, 0) in fg.edges and (2, 3, 0) in fg.edges and (0, 3, 1) in fg.edges
    assert fg.nodes[3].rank == 2 and fg.nodes[3].dtype == "float32"  # the output's, from value info
    del onnx


def test_the_test_value_is_positive_only_above_the_campaigns_mean_and_leans_on_the_bug_share():
    tv = TestValue(("converter", "kernels"), {"kernels": 1.0})
    assert tv(np.array([1.0, 1.0])) == 1.0  # the first model is always worth running
    tv.ran(np.array([100.0, 100.0]))
    tv.ran(np.array([300.0, 300.0]))
    assert tv(np.array([250.0, 250.0])) > 0 > tv(np.array([150.0, 150.0]))
    # More in the module of the defects beats the same gain in the other one.
    assert tv(np.array([150.0, 300.0])) > 0 > tv(np.array([300.0, 150.0]))
    assert bug_share({"a": 3, "b": 1}) == {"a": 0.75, "b": 0.25} and bug_share({}) == {}


def test_the_policys_draw_is_the_campaigns_and_follows_its_scores():
    scores = np.array([0.0, 5.0, 0.0])
    assert draw(scores, 0.5) == 1 and draw(scores, 0.0) == 0 and draw(scores, 0.999999) == 2
    picks = [draw(scores, u) for u in np.linspace(0, 0.9999, 1000)]
    assert picks.count(1) > 950


def test_module_counts_place_each_address_once():
    asked: list[list[int]] = []

    def lines(obj: str, offsets: list[int]) -> list[str]:
        asked.append(list(offsets))
        return ["/src/tools/converter/source/onnx/x.cpp" if o < 100 else "/src/source/core/y.cpp" for o in offsets]

    from gbft_action.knowledge.mnn import MNNKnowledge

    placer = ModulePlacer(MNNKnowledge().module_of, lines)
    assert placer.counts(Blocks({"lib.so": {1, 2, 200}})) == {"converter: onnx": 2, "core": 1}
    assert placer.counts(Blocks({"lib.so": {2, 200, 300}})) == {"converter: onnx": 1, "core": 2}
    assert asked == [[1, 2, 200], [300]]  # addr2line only on what it had not placed


def test_data_set_rows_and_the_guides_record_are_read_strictly(tmp_path):
    row = DatasetRow("generated:onnx:1:0", "onnx", "DCP", of_graph(_graph(), "onnx").to_json(), {"core": 5})
    row.append(tmp_path)
    with (tmp_path / "rows.jsonl").open("a") as f:
        f.write('{"key": "cut short')  # a crash mid-line: the row is collected again, never misread
    assert list(DatasetRow.read_all(tmp_path)) == [row]
    DatasetRow.mend(tmp_path)  # before the next append: glued to the half line, it would be lost
    crashed = DatasetRow("generated:onnx:1:1", "onnx", "MCF", row.features, {"core": 2}, complete=False)
    crashed.append(tmp_path)
    assert list(DatasetRow.read_all(tmp_path)) == [row, crashed]
    (tmp_path / "rows.jsonl").write_text(json.dumps({**json.loads(row.line()), "modules": {"core": "5"}}) + "\n")
    with pytest.raises(RecordError, match="modules: expected module -> blocks"):
        list(DatasetRow.read_all(tmp_path))
    (tmp_path / "learned.json").write_text(json.dumps({"version": 99}))
    with pytest.raises(RecordError, match="learned guide version 99"):
        LearnedMeta.read(tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("addr2line") is None, reason="needs gcc and binutils")
def test_collect_train_and_a_learned_campaign_on_a_tiny_instrumented_engine(tmp_path, monkeypatch, fake_engines_path,
                                                                             capsys):
    pytest.importorskip("torch_geometric")
    pytest.importorskip("sb3_contrib")
    from gbft_action.campaign import Campaign
    from gbft_action.records.config import Config
    from gbft_action.cli import main
    from gbft_action.learn.collect import CollectConfig, collect
    from gbft_action.learn.train import train_guide
    from gbft_action.search.learned import Guide

    lib = tmp_path / "libcovered.so"
    subprocess.run(["gcc", "-O1", "-g", "-shared", "-fPIC", "-fsanitize-coverage=trace-pc", "-o", str(lib),
                    *(str(COVERED / f) for f in ("tools/converter/source/onnx/front.c",
                                                 "source/backend/cpu/kernel.c"))], check=True)
    monkeypatch.setenv("GBFT_TEST_COVERED_LIB", str(lib))
    engine, data, guide = "fake_engines:CoveredMNN", tmp_path / "data", tmp_path / "guide"
    cfg = CollectConfig(data, engine, None, ("onnx",), models=30, seed=3, node_tests=True, node_test_limit=8)
    assert collect(cfg) >= 36
    rows = list(DatasetRow.read_all(data))
    assert {r.key.split(":")[0] for r in rows} == {"generated", "node"}
    ran = [r for r in rows if r.status == "DCP"]
    assert ran and all(r.modules.get("converter: onnx", 0) > 0 and r.modules.get("CPU compute", 0) > 0 for r in ran)
    assert collect(cfg) == 0  # resumed: every model is there already

    meta = train_guide(data, guide, ("onnx",), steps=256, epochs=3)
    assert meta.modules == tuple(sorted({m for r in rows for m in r.modules}))
    assert set(meta.quality) >= {"r2", "total_spearman", "held_out"} and "onnx" in meta.policies
    assert LearnedMeta.read(guide) == meta
    g = Guide.load(guide)
    assert g.predict(of_graph(_graph(), "onnx")).shape == (len(meta.modules),)

    out = tmp_path / "fuzz"
    corpus = str(Path(__file__).parents[1] / "gbft_action" / "corpora" / "onnx-mnn.yaml")
    summary = Campaign(Config(out=out, engine=engine, budget=120, max_models=12, seed=5, blocks=(2, 4), jobs=1,
                                  minimize_share=0.0, frontend="onnx", corpus=corpus, chooser="learned",
                                  guide=str(guide), engine_coverage=True, opsets=(17,))).run()
    assert summary.models == 12
    learned = (summary.coverage or {})["learned"]
    assert learned["ran"] == 12 and learned["skipped_negative"] >= 0
    assert main(["fuzz", "--engine", engine, "--frontend", "tf", "--chooser", "learned", "--guide", str(guide),
                 "--budget", "5", "--out", str(tmp_path / "tf")]) == 2
    assert "no policy for the tf front end (it has: onnx)" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="needs a C compiler")
def test_the_coverage_runtime_an_instrumented_build_links_against_is_built_on_request(tmp_path, capsys):
    from gbft_action.cli import main

    assert main(["coverage", "--runtime", str(tmp_path / "rt")]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_absolute() and path.exists() and path.parent == (tmp_path / "rt").resolve()
    assert main(["coverage"]) == 2 and "give one or more fuzz outputs" in capsys.readouterr().err


def test_a_guide_that_cannot_serve_is_one_line_before_any_model(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    from gbft_action.cli import main
    from gbft_action.search.learned import SHIPPED, Guide, GuideError

    guide = tmp_path / "guide"
    shutil.copytree(SHIPPED, guide)
    assert Guide.digest(guide) == Guide.digest(SHIPPED) != Guide.digest(tmp_path / "none") == ""
    shutil.copy(guide / "policy-tf.onnx", guide / "policy-onnx.onnx")  # another front end's file
    with pytest.raises(GuideError, match="a file of another guide"):
        Guide.load(guide).policy("onnx")
    assert Guide.digest(guide) != Guide.digest(SHIPPED)  # a resumed campaign would see the change
    (guide / "predictor.onnx").write_text("version https://git-lfs.github.com/spec/v1\n")  # an LFS pointer
    with pytest.raises(GuideError, match="ONNX Runtime cannot load it"):
        Guide.load(guide)
    assert main(["fuzz", "--chooser", "learned", "--guide", str(guide), "--budget", "5",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "predictor.onnx: ONNX Runtime cannot load it" in err[0]
    assert main(["fuzz", "--guide", str(guide), "--budget", "5", "--out", str(tmp_path / "p")]) == 2
    assert "--guide is the learned chooser's" in capsys.readouterr().err



def test_the_learned_chooser_draws_the_same_models_from_the_same_seed_and_skips_by_value():
    pytest.importorskip("onnxruntime")
    from gbft_action.corpus import load_corpus
    from gbft_action.graph.generate import GenOptions
    from gbft_action.search.guided import MAX_SKIPS, GuidedSource
    from gbft_action.search.learned import Guide, Learned

    corpus = load_corpus(Path(__file__).parents[1] / "gbft_action" / "corpora" / "onnx-mnn.yaml", 17)
    guide = Guide.load("")  # the shipped one

    def run(seed: int) -> tuple[list[str], GuidedSource]:
        src = GuidedSource(corpus, GenOptions(blocks=(2, 6)), seed, "learned", learned=Learned.of(guide, "onnx"))
        return [src.next_graph(i).to_json() for i in range(25)], src

    a, src = run(4)
    assert run(4)[0] == a and run(5)[0] != a
    learned = src.summary()["learned"]
    assert learned["ran"] == 25 and 0 < learned["skipped_negative"] <= 25 * MAX_SKIPS
    assert src.generated == 25 + learned["skipped_negative"] + src.discarded
