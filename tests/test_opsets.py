"""The ONNX front end at a chosen opset (issue 36, item 1): records per opset, graphs that name
their opset, the forms that changed between opsets, and old bundles that keep their meaning."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from gbft_action.campaign import identity_of  # noqa: E402
from gbft_action.records.config import Config, configure  # noqa: E402
from gbft_action.corpus import load_corpus  # noqa: E402
from gbft_action.frontends import FRONTENDS  # noqa: E402
from gbft_action.graph.generate import GenOptions, generate  # noqa: E402
from gbft_action.graph.ir import Graph, Node, TensorType  # noqa: E402
from gbft_action.frontends import LEGACY_OPSET, NEWEST_OPSET, parse_opsets  # noqa: E402
from gbft_action.ops.recorded import RecordedSpec, RecordsError, records_file, schemas, specs_at  # noqa: E402
from gbft_action.ops.registry import opset_of, registry  # noqa: E402
from gbft_action.records.campaign import CampaignIdentity  # noqa: E402
from gbft_action.search.guided import GuidedSource  # noqa: E402
from gbft_action.search.opsets import OLDER_EVERY, OpsetSource  # noqa: E402
from gbft_action.reference import onnx_emit  # noqa: E402
from gbft_action.reference.onnx_code import model_source  # noqa: E402

NEW_AT_18_OR_LATER = {"AffineGrid", "Attention", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Col2Im",
                      "CenterCropPad", "CumProd", "Gelu", "Mish", "RMSNormalization", "RotaryEmbedding",
                      "TensorScatter", "CausalConvWithState", "LinearAttention", "DeformConv"}


def _run(model: onnx.ModelProto) -> list[np.ndarray]:
    """ONNX Runtime with its optimisations off, as the reference runs (graph inputs ~ U[-1, 1])."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(0).uniform(-1, 1, [d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)) for i in model.graph.input}
    return sess.run(None, feeds)


def _alone(op: str, params: dict, shape: tuple[int, ...] | TensorType, opset: int) -> Graph:
    """Operator ``op`` alone on a graph input of ``shape`` (float32) or type, its params as given
    (the output type as its spec infers it)."""
    x = shape if isinstance(shape, TensorType) else TensorType(shape)
    out = registry("onnx", opset).specs[op].infer([x], params)
    meta = {"frontend": "onnx", **({"opset": opset} if opset != LEGACY_OPSET else {})}
    return Graph({"in0": x}, [Node("n0", op, ["in0"], params, out, block=op, gnode=0)], ["n0"], meta=meta)


def test_the_newest_records_place_the_operators_of_opsets_18_and_later():
    newest = specs_at(NEWEST_OPSET)
    assert NEW_AT_18_OR_LATER <= set(newest)
    assert not NEW_AT_18_OR_LATER & set(specs_at(LEGACY_OPSET))  # none of them exists at 17
    since = {op: int(schemas(NEWEST_OPSET)[op]["since"]) for op in NEW_AT_18_OR_LATER}
    assert min(since.values()) >= 18 and since["Attention"] == 25  # the version in force at 27
    reduce_l1 = newest["ReduceL1"].instances  # at 27 the axes are an input, never the attribute
    assert reduce_l1 and not any("axes" in i.attrs for i in reduce_l1)
    assert any(len(i.inputs) == 2 and i.inputs[1] is not None for i in reduce_l1)


def test_an_opset_without_a_file_of_its_own_takes_the_newest_operators_already_in_force():
    """At 22: the operators whose newest schema is 22 or older, with the newest file's instances
    (so its indices); Attention (23) and TensorScatter (24) are not there yet, Gelu (20) is."""
    at22, newest = specs_at(22), specs_at(NEWEST_OPSET)
    assert not records_file(22).exists()
    assert "Gelu" in at22 and "Mish" in at22 and "Attention" not in at22 and "TensorScatter" not in at22
    assert all(at22[op].instances == newest[op].instances for op in at22)
    assert all(int(schemas(22)[op]["since"]) <= 22 for op in at22)
    with pytest.raises(RecordsError, match="opset must be from 17 to 27, got '16'"):
        specs_at(16)


def test_each_new_operator_is_written_at_the_graphs_opset_and_runs_on_onnx_runtime():
    for op in sorted(NEW_AT_18_OR_LATER):
        spec = registry("onnx", NEWEST_OPSET).specs[op]
        assert isinstance(spec, RecordedSpec)
        g = _alone(op, {"instance": 0}, spec.instances[0].fed_type, NEWEST_OPSET)
        m = onnx_emit.check(onnx_emit.build(g))
        assert m.opset_import[0].version == NEWEST_OPSET and m.ir_version == 13, op
        assert op in {n.op_type for n in m.graph.node}
        assert _run(m)[0].shape == g.node(g.outputs[0]).out.shape, op


@pytest.mark.parametrize("opset", [LEGACY_OPSET, 18, NEWEST_OPSET])
def test_reduce_axes_are_an_attribute_at_17_and_an_input_from_18(opset):
    g = _alone("ReduceMean", {"axes": [1], "keepdims": 1}, (2, 3, 4), opset)
    m = onnx_emit.check(onnx_emit.build(g))
    node = next(n for n in m.graph.node if n.op_type == "ReduceMean")
    attrs = {a.name for a in node.attribute}
    assert ("axes" in attrs) == (opset == LEGACY_OPSET) and (len(node.input) == 2) == (opset >= 18)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    assert np.allclose(_run(m)[0], x.mean(axis=1, keepdims=True), atol=1e-6)


def test_grid_sample_modes_take_opset_20s_names():
    for opset, want in ((19, "bilinear"), (20, "linear"), (NEWEST_OPSET, "linear")):
        g = _alone("GridSample", {"mode": "bilinear", "padding_mode": "zeros", "align_corners": 0, "out_h": 3,
                                  "out_w": 3}, (1, 2, 4, 4), opset)
        m = onnx_emit.check(onnx_emit.build(g))
        node = next(n for n in m.graph.node if n.op_type == "GridSample")
        assert onnx.helper.get_attribute_value(next(a for a in node.attribute if a.name == "mode")).decode() == want
        assert _run(m)[0].shape == (1, 2, 3, 3)


def test_split_of_equal_parts_is_written_in_both_forms_from_18():
    """Split-18 takes num_outputs in place of the sizes input: both forms appear, chosen by the
    graph's weights stream (the same model each time), and both compute the same parts."""
    forms = set()
    for seed in range(12):
        g = _alone("Split", {"axis": 1, "split": [2, 2], "take": 1}, (1, 4, 3), NEWEST_OPSET)
        g.seed = seed
        m = onnx_emit.check(onnx_emit.build(g))
        node = next(n for n in m.graph.node if n.op_type == "Split")
        forms.add("num_outputs" if any(a.name == "num_outputs" for a in node.attribute) else "input")
        assert onnx_emit.build(g).SerializeToString() == onnx_emit.build(g).SerializeToString()
        x = np.random.default_rng(0).uniform(-1, 1, (1, 4, 3)).astype(np.float32)
        assert np.array_equal(_run(m)[0], x[:, 2:4])
    assert forms == {"num_outputs", "input"}


def test_a_graph_without_an_opset_is_an_old_bundles_and_reads_at_17():
    """Bundles made before opsets were chosen name none: their instance indices keep meaning
    opset 17's records, and their models are written at 17 as they were."""
    old = _alone("CumSum", {"instance": 0}, specs_at(LEGACY_OPSET)["CumSum"].instances[0].fed_type,
                 LEGACY_OPSET)
    assert "opset" not in old.meta and opset_of(old) == LEGACY_OPSET
    m = onnx_emit.build(old)
    assert m.opset_import[0].version == 17 and m.ir_version == 8
    src = model_source(old)
    assert (src.opset, src.ir_version) == (17, 8)  # the repro declares what the bot compared
    for bad in (16, 99, "27", None):
        with pytest.raises(ValueError, match="graph: its opset must be from 17 to 27"):
            opset_of(Graph(old.inputs, old.nodes, old.outputs, meta={**old.meta, "opset": bad}))


def test_a_bundle_naming_an_operator_of_another_opset_is_refused_in_one_line():
    """A pull request's artifact can name Gelu in a graph of opset 17: no such operator there."""
    g = _alone("Gelu", {"instance": 0}, specs_at(NEWEST_OPSET)["Gelu"].instances[0].fed_type, NEWEST_OPSET)
    old = Graph(g.inputs, g.nodes, g.outputs, meta={"frontend": "onnx"})
    with pytest.raises(ValueError, match="unknown operator 'Gelu'"):
        model_source(old)


def test_campaign_models_carry_their_opset_and_are_deterministic(tmp_path):
    corpus = load_corpus(FRONTENDS["onnx"].default_corpus, NEWEST_OPSET)
    graphs = [generate(random.Random(s), corpus, GenOptions(blocks=(2, 6)), s) for s in range(6)]
    assert all(g.meta["opset"] == NEWEST_OPSET for g in graphs)
    again = [generate(random.Random(s), corpus, GenOptions(blocks=(2, 6)), s) for s in range(6)]
    assert [onnx_emit.build(a).SerializeToString() for a in graphs] == [onnx_emit.build(b).SerializeToString()
                                                                         for b in again]
    assert Config(out=tmp_path).opset == NEWEST_OPSET


def test_the_opsets_are_validated_and_part_of_the_campaigns_identity(tmp_path):
    with pytest.raises(ValueError, match="--opset must be from 17 to 27, got '30'"):
        Config(out=tmp_path, frontend="onnx", opsets=(30,)).validate()
    with pytest.raises(ValueError, match="lists an opset twice"):
        Config(out=tmp_path, frontend="onnx", opsets=(27, 27)).validate()
    mixed = identity_of(Config(out=tmp_path, frontend="onnx"))
    at27 = identity_of(Config(out=tmp_path, frontend="onnx", opsets=(27,)))
    at17 = identity_of(Config(out=tmp_path, frontend="onnx", opsets=(17,)))
    assert (mixed.opset, mixed.older_opsets) == (27, (17,))
    assert at27.opset == 27 and at27.older_opsets is None and at17.opset is None  # as written before opsets
    assert at27.differs(at17) == ["opset"] and mixed.differs(at27) == ["older_opsets"]
    assert identity_of(Config(out=tmp_path, frontend="tf", opsets=(20,))).opset is None  # no ONNX written


@pytest.mark.parametrize("text, want", [("27", (27,)), ("27,17", (27, 17)), (" 20 , 18", (20, 18))])
def test_opsets_are_read_from_text(text, want):
    assert parse_opsets(text) == want


@pytest.mark.parametrize("text, words", [("", "a comma list"), ("27;17", "a comma list"), ("16", "from 17 to 27"),
                                          ("27,99", "got '99'"), ("17,17", "twice")])
def test_a_bad_opset_list_is_a_one_line_error(text, words):
    with pytest.raises(ValueError, match=words) as e:
        parse_opsets(text)
    assert "\n" not in str(e.value)


def test_records_of_an_opset_are_rebuilt_as_shipped():
    """The opset-27 file is generated, never edited: a few operators rebuilt are what ships."""
    from gbft_action.reference.onnx_records import build_records

    shipped = json.loads(Path(records_file(NEWEST_OPSET)).read_text())
    if shipped["onnx"] != onnx.__version__:
        pytest.skip(f"records written with onnx {shipped['onnx']}, this venv has {onnx.__version__}")
    few = frozenset({"Gelu", "RMSNormalization", "ReduceL1"})
    assert build_records(NEWEST_OPSET, only=few)["ops"] == {op: shipped["ops"][op] for op in few}


def test_a_resumed_campaign_keeps_its_opset_and_an_old_output_resumes_at_17(tmp_path):
    """--resume takes the opset from the output, whatever the command line says; an output made
    before opsets were chosen has none in its config and resumes at 17 (its identity holds)."""
    from gbft_action.campaign import Campaign
    from gbft_action.cli import _resumed

    def resumed() -> Config:
        return configure({"out": out}, resume=_resumed(out))

    out = tmp_path / "o"
    Campaign(Config(out=out, engine="mnn", budget=30, max_models=2, seed=1, frontend="onnx", opsets=(22, 18),
                        minimize_share=0.0).validate()).run()
    assert resumed().opsets == (22, 18)
    record = json.loads((out / "campaign.json").read_text())
    assert record["identity"]["opset"] == 22 and record["config"]["opsets"] == [22, 18]
    # As written before opsets were mixed: one opset, and its identity has no others.
    del record["config"]["opsets"], record["identity"]["older_opsets"]
    record["config"]["opset"] = 22
    (out / "campaign.json").write_text(json.dumps(record))
    cfg = resumed()
    assert cfg.opsets == (22,) and identity_of(cfg).differs(CampaignIdentity.from_json(record["identity"])) == []
    for bad in (None, [], [27, "x"]):  # a hand-edited record: one line, never a traceback
        record["config"]["opsets"] = bad
        (out / "campaign.json").write_text(json.dumps(record))
        with pytest.raises(ValueError, match="campaign.json.*opsets"):
            resumed()
    del record["config"]["opsets"]
    del record["config"]["opset"], record["identity"]["opset"]  # as written before opsets were chosen
    (out / "campaign.json").write_text(json.dumps(record))
    cfg = resumed()
    assert cfg.opsets == (LEGACY_OPSET,) and identity_of(cfg).opset is None


def _opset_source(seed: int = 5) -> OpsetSource:
    path = FRONTENDS["onnx"].default_corpus
    main, old = load_corpus(path, NEWEST_OPSET), load_corpus(path, LEGACY_OPSET)
    opts = GenOptions(blocks=(1, 4))
    return OpsetSource({NEWEST_OPSET: GuidedSource(main, opts, seed),
                        LEGACY_OPSET: GuidedSource(old, opts, seed, probe_only=frozenset(old.specs) - frozenset(main.specs))})


def test_a_campaign_of_two_opsets_writes_each_case_at_the_opset_its_index_gives():
    """One case in OLDER_EVERY at 17, by the index alone; the older source probes only the
    operators 27 does not place (RoiAlign, the random operators...), so its first cases are those."""
    src = _opset_source()
    at = [src.opset_of(i) for i in range(2000)]
    assert abs(at.count(LEGACY_OPSET) / len(at) - 1 / OLDER_EVERY) < 0.03
    other = _opset_source(seed=9)
    assert at == [other.opset_of(i) for i in range(2000)]  # not the seed's, the index's
    older = [i for i in range(400) if at[i] == LEGACY_OPSET][:6]
    graphs = {i: src.next_graph(i) for i in older}
    assert all(opset_of(g) == LEGACY_OPSET for g in graphs.values())
    probed = {g.meta["probe"][0] for g in graphs.values()}
    assert probed and probed <= {"Bernoulli", "GlobalLpPool", "MaxRoiPool", "Multinomial", "RandomNormal",
                                 "RandomNormalLike", "RandomUniform", "RandomUniformLike", "RoiAlign"}
    assert opset_of(src.next_graph(next(i for i in range(400) if at[i] == NEWEST_OPSET))) == NEWEST_OPSET


def test_an_opset_sources_state_and_summary_keep_each_opset():
    src = _opset_source()
    for i in range(40):
        src.next_graph(i)
    st = json.loads(json.dumps(src.state()))
    assert set(st["opsets"]) == {"27", "17"}
    again = _opset_source()
    again.load_state(st)
    assert again.sources[LEGACY_OPSET].coverage.operators == src.sources[LEGACY_OPSET].coverage.operators
    single = _opset_source()
    single.load_state(st["opsets"]["27"])  # a pinned run's state: the main opset's
    assert single.sources[NEWEST_OPSET].coverage.operators == src.sources[NEWEST_OPSET].coverage.operators
    assert not single.sources[LEGACY_OPSET].coverage.operators
    at17 = _opset_source()
    at17.load_state(st["opsets"]["17"])  # a run pinned at 17: its state names its opset
    assert at17.sources[LEGACY_OPSET].coverage.operators == src.sources[LEGACY_OPSET].coverage.operators
    assert not at17.sources[NEWEST_OPSET].coverage.operators
    s = src.summary()
    ops = {o: set(x.coverage.operators) for o, x in src.sources.items()}
    assert set(s["operators"]) == ops[27] | ops[17] and ops[17] - ops[27]
    assert {o: d["models"] for o, d in s["opsets"].items()} == {"27": 40 - len([i for i in range(40) if src.opset_of(i) == 17]),
                                                               "17": len([i for i in range(40) if src.opset_of(i) == 17])}


def test_the_actions_onnx_opset_input_takes_one_opset_or_a_list(tmp_path):
    from gbft_action.action.config import ActionConfig, ConfigError

    assert ActionConfig(frontend="onnx", workspace=str(tmp_path)).validate().opsets == (NEWEST_OPSET, LEGACY_OPSET)
    assert ActionConfig(frontend="onnx", onnx_opset="21", workspace=str(tmp_path)).validate().opsets == (21,)
    assert ActionConfig(frontend="onnx", onnx_opset="27,18", workspace=str(tmp_path)).validate().opsets == (27, 18)
    with pytest.raises(ConfigError, match="input 'onnx-opset' must be from 17 to 27, got '99'"):
        ActionConfig(frontend="onnx", onnx_opset="27,99", workspace=str(tmp_path)).validate()


def test_a_pinned_campaign_starts_from_its_opsets_share_of_a_mixed_state(tmp_path):
    from gbft_action.campaign import Campaign

    src = _opset_source()
    for i in range(40):
        src.next_graph(i)
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "state.json").write_text(json.dumps(src.state()))
    at17 = Campaign(Config(out=tmp_path / "o", frontend="onnx", opsets=(17,), state=str(tmp_path / "st"))).source
    assert isinstance(at17, GuidedSource)
    assert at17.coverage.to_json() == src.sources[LEGACY_OPSET].coverage.to_json()
    at20 = Campaign(Config(out=tmp_path / "p", frontend="onnx", opsets=(20,), state=str(tmp_path / "st"))).source
    assert not at20.coverage.operators  # an opset the state has none of starts fresh


def test_a_corpus_of_later_operators_runs_at_the_default_opsets(tmp_path):
    """Gelu exists from opset 20: a user's corpus naming it loads at 27, and the campaign's
    opset-17 share leaves that block out instead of refusing the corpus."""
    from gbft_action.campaign import Campaign

    corpus = tmp_path / "c.yaml"
    corpus.write_text("frontend: onnx\nblocks:\n  - {name: Gelu, in_degree: [1], out_degree: [1]}\n"
                      "  - {name: Relu, in_degree: [1], out_degree: [1]}\n")
    with pytest.raises(Exception, match="unknown operator 'Gelu'"):
        load_corpus(corpus, LEGACY_OPSET)
    src = Campaign(Config(out=tmp_path / "o", frontend="onnx", corpus=str(corpus))).source
    assert isinstance(src, OpsetSource)
    assert [b.name for b in src.sources[LEGACY_OPSET].corpus.blocks] == ["Relu"]
    assert {b.name for b in src.sources[NEWEST_OPSET].corpus.blocks} == {"Gelu", "Relu"}
