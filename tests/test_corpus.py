"""The block corpus: the shipped file, the loader's validation, ``gbft corpus check``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gbft_action.cli import main
from gbft_action.corpus import DEFAULT_CORPUS, Block, CorpusError, load_corpus, parse_corpus
from gbft_action.ops.domains import Choice, IntRange
from gbft_action.ops.specs import ADAPTERS, SPECS

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "gbft_action" / "corpora" / "tensorflow-mnn.yaml"

# The 50 TensorFlow operators of the GBFT paper (ICSE-SEIP'21, section IV-B),
# as the corpus names them.
PAPER_OPS = {
    "Add", "Argmax", "Avgpooling", "Batchtospacend", "Biasadd", "Cast", "Ceil", "Concat", "Conv2d",
    "Cropandresize", "Deconv2d", "Depthwise", "Exp", "Expanddims", "Fill", "Fusedbatchnorm", "GatherV2",
    "Greater", "Lrn", "Maximum", "Maxpooling", "Minimum", "Mul", "Realdiv", "Reducemax", "Reducemean",
    "Reduceprod", "Reducesum", "Relu", "Relu6", "Reshape", "Resizebilinear", "Resizenearestneighbor",
    "Rsqrt", "Selu", "Shape", "Sigmoid", "Resize", "Slice", "Softmax", "Spacetobatchnd", "Sqrt", "Square",
    "Squeeze", "Stridedslice", "Sub", "Tanh", "Tile", "TopKV2", "Transpose",
}
SUBGRAPHS = {"SSDFeatureConcat", "TFHoistCommonFactor", "MNNConvBiasRelu"}


# --------------------------------------------------------------------------- the shipped corpus


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(SHIPPED)


def test_default_corpus_is_the_shipped_file():
    assert Path(DEFAULT_CORPUS).resolve() == SHIPPED
    assert len(load_corpus().blocks) == 53  # load_corpus() with no argument reads it


def test_shipped_corpus_has_53_blocks(corpus):
    assert corpus.name == "tensorflow-mnn"
    assert corpus.n_maxspc == 200
    assert len(PAPER_OPS) == 50
    assert len(corpus.blocks) == 53
    names = [b.name for b in corpus.blocks]
    assert len(set(names)) == 53
    assert set(names) == PAPER_OPS | SUBGRAPHS


def test_operator_blocks_are_the_50_paper_operators(corpus):
    op_blocks = [b for b in corpus.blocks if not b.is_subgraph]
    assert len(op_blocks) == 50
    assert {b.name for b in op_blocks} == PAPER_OPS
    for b in op_blocks:
        assert b.ops == (b.name,)
        assert b.inner_edges == ()
        assert b.name in SPECS
    # The corpus covers exactly the 50 paper operator types (Pad is adapter-only).
    assert corpus.op_types == sorted(PAPER_OPS)
    assert "Pad" not in corpus.op_types
    assert "Pad" in ADAPTERS


def test_three_subgraphs_with_inner_edges(corpus):
    subs = [b for b in corpus.blocks if b.is_subgraph]
    assert {b.name for b in subs} == SUBGRAPHS
    for b in subs:
        assert len(b.ops) >= 2
        assert b.inner_edges, f"{b.name} has no inner edges"
        for s, d in b.inner_edges:
            assert 0 <= s < d < len(b.ops)
        assert all(op in SPECS for op in b.ops)
        # Exactly one exit (sink) operator and at least one entry operator.
        srcs = {s for s, _ in b.inner_edges}
        assert [i for i in range(len(b.ops)) if i not in srcs] == [b.exit]
        assert b.entries
        assert max(b.in_degree) <= len(b.entries)
    ssd = corpus.block("SSDFeatureConcat")
    assert ssd.ops == ("Conv2d", "Conv2d", "Reshape", "Reshape", "Concat")
    assert ssd.inner_edges == ((0, 2), (1, 3), (2, 4), (3, 4))
    assert ssd.entries == (0, 1) and ssd.exit == 4
    assert ssd.inner_preds(4) == [2, 3]
    assert ssd.params[2] == {"rank": IntRange(3, 3)}
    assert ssd.params[4] == {"axis": IntRange(1, 1)}
    hoist = corpus.block("TFHoistCommonFactor")
    assert hoist.params[0] == {"operand": Choice(("same", "scalar"))}
    relu = corpus.block("MNNConvBiasRelu")
    assert relu.ops == ("Conv2d", "Biasadd", "Relu") and relu.entries == (0,) and relu.exit == 2


def test_degrees(corpus):
    for b in corpus.blocks:
        assert b.out_degree == frozenset(range(6)), b.name  # the paper: 0..5
        assert b.in_degree and min(b.in_degree) >= 1
        if not b.is_subgraph:
            assert b.in_degree <= SPECS[b.ops[0]].arity, b.name
    assert corpus.block("Concat").in_degree == frozenset({2, 3, 4, 5})
    assert corpus.block("Add").in_degree == frozenset({1, 2})
    assert corpus.block("Relu").in_degree == frozenset({1})


def test_blocks_with_op(corpus):
    conv = {b.name for b in corpus.blocks_with_op("Conv2d")}
    assert conv == {"Conv2d", "SSDFeatureConcat", "MNNConvBiasRelu"}
    assert {b.name for b in corpus.blocks_with_op("Mul")} == {"Mul", "TFHoistCommonFactor"}
    with pytest.raises(KeyError):
        corpus.block("NoSuchBlock")


def test_json_corpus_loads_too(tmp_path, corpus):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(corpus.raw))
    c = load_corpus(p)
    assert [b.name for b in c.blocks] == [b.name for b in corpus.blocks]
    assert c.blocks == corpus.blocks


# --------------------------------------------------------------------------- `gbft corpus check` (good)


def test_cli_check_good_corpus(capsys):
    rc = main(["corpus", "check", str(SHIPPED)])
    out, err = capsys.readouterr()
    assert rc == 0
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 54  # one per block and a summary
    for name in PAPER_OPS | SUBGRAPHS:
        assert any(line.split()[0] == name for line in lines[:-1]), name
    ssd = next(line for line in lines if line.startswith("SSDFeatureConcat"))
    assert "subgraph" in ssd and "Conv2d+Conv2d+Reshape+Reshape+Concat" in ssd
    assert "in=[1, 2]" in ssd and "out=[0, 1, 2, 3, 4, 5]" in ssd
    relu = next(line for line in lines if line.split()[0] == "Relu")
    assert "operator" in relu and "in=[1]" in relu
    assert lines[-1] == f"{SHIPPED}: 53 blocks, 50 operator types: OK"


# --------------------------------------------------------------------------- bad corpora


GOOD_BLOCK = "  - {name: Relu, in_degree: [1], out_degree: [0, 1]}\n"


def write(tmp_path: Path, body: str, name: str = "bad.yaml") -> Path:
    p = tmp_path / name
    p.write_text("name: bad\nblocks:\n" + GOOD_BLOCK + textwrap.indent(textwrap.dedent(body), "  "))
    return p


def rejected(path: Path, block: str, fld: str) -> CorpusError:
    with pytest.raises(CorpusError) as ei:
        load_corpus(path)
    e = ei.value
    msg = str(e)
    assert e.file == str(path)
    assert e.block == block
    assert e.field == fld
    assert str(path) in msg, msg
    assert repr(block) in msg, msg
    assert repr(fld) in msg, msg
    return e


def test_good_fixture_loads(tmp_path):
    # The other cases differ from this one only in the bad block.
    c = load_corpus(write(tmp_path, "  - {name: Add, in_degree: [1, 2], out_degree: [0]}\n"))
    assert [b.name for b in c.blocks] == ["Relu", "Add"]
    assert c.name == "bad"


def test_unknown_operator(tmp_path):
    p = write(tmp_path, "  - {name: Frobnicate, in_degree: [1], out_degree: [0]}\n")
    e = rejected(p, "Frobnicate", "ops")
    assert "unknown operator 'Frobnicate'" in str(e)


def test_unknown_operator_inside_subgraph(tmp_path):
    p = write(tmp_path, """\
      - name: Sub1
        ops: [Relu, Frobnicate]
        inner_edges: [[0, 1]]
        in_degree: [1]
        out_degree: [0]
    """)
    e = rejected(p, "Sub1", "ops")
    assert "Frobnicate" in str(e)


@pytest.mark.parametrize("fld", ["in_degree", "out_degree"])
def test_empty_degree_set(tmp_path, fld):
    other = "out_degree" if fld == "in_degree" else "in_degree"
    p = write(tmp_path, f"  - {{name: Tanh, {fld}: [], {other}: [1]}}\n")
    e = rejected(p, "Tanh", fld)
    assert "non-empty" in str(e)


@pytest.mark.parametrize("fld", ["in_degree", "out_degree"])
def test_missing_degree_set(tmp_path, fld):
    other = "out_degree" if fld == "in_degree" else "in_degree"
    p = write(tmp_path, f"  - {{name: Tanh, {other}: [1]}}\n")
    rejected(p, "Tanh", fld)


@pytest.mark.parametrize("fld,vals", [("in_degree", "[0]"), ("out_degree", "[-1]"), ("out_degree", "[9]")])
def test_degree_out_of_range(tmp_path, fld, vals):
    other = "out_degree" if fld == "in_degree" else "in_degree"
    p = write(tmp_path, f"  - {{name: Tanh, {fld}: {vals}, {other}: [1]}}\n")
    rejected(p, "Tanh", fld)


def test_in_degree_beyond_operator_arity(tmp_path):
    p = write(tmp_path, "  - {name: Sigmoid, in_degree: [1, 2], out_degree: [0]}\n")
    e = rejected(p, "Sigmoid", "in_degree")
    assert "[2]" in str(e)


@pytest.mark.parametrize("edge", ["[0, 2]", "[-1, 1]", "[0, 5]"])
def test_inner_edge_out_of_range(tmp_path, edge):
    p = write(tmp_path, f"""\
      - name: Chain
        ops: [Relu, Tanh]
        inner_edges: [{edge}]
        in_degree: [1]
        out_degree: [0, 1]
    """)
    e = rejected(p, "Chain", "inner_edges")
    assert "out of range" in str(e)


def test_inner_edge_backwards(tmp_path):
    p = write(tmp_path, """\
      - name: Chain
        ops: [Relu, Tanh]
        inner_edges: [[1, 0]]
        in_degree: [1]
        out_degree: [0]
    """)
    rejected(p, "Chain", "inner_edges")


def test_subgraph_with_two_exits(tmp_path):
    p = write(tmp_path, """\
      - name: Fork
        ops: [Relu, Tanh, Exp]
        inner_edges: [[0, 1], [0, 2]]
        in_degree: [1]
        out_degree: [0]
    """)
    rejected(p, "Fork", "inner_edges")


@pytest.mark.parametrize("body,fld,words", [
    # a range wider than the spec's IntRange(1, 5)
    ("params: {kh: {range: [0, 3]}}", "params.kh", ["outside", "[1, 5]"]),
    ("params: {kh: {range: [2, 9]}}", "params.kh", ["outside", "[1, 5]"]),
    # an empty range
    ("params: {kh: {range: [4, 2]}}", "params.kh", ["empty"]),
    # non-integer bounds for an integer parameter
    ("params: {kh: {range: [1.5, 3]}}", "params.kh", ["integer"]),
    # a choice value the spec does not allow
    ("params: {padding: {choice: [SAME, REFLECT]}}", "params.padding", ["REFLECT"]),
    # an empty choice
    ("params: {padding: {choice: []}}", "params.padding", ["non-empty"]),
    # a range for a choice parameter and a choice for a range parameter
    ("params: {padding: {range: [1, 2]}}", "params.padding", ["choice"]),
    ("params: {stride: {choice: [1, 2]}}", "params.stride", ["range"]),
    # an unknown domain kind
    ("params: {stride: {between: [1, 2]}}", "params.stride", ["between"]),
    # an unknown parameter name
    ("params: {kernel_size: {range: [1, 3]}}", "params.kernel_size", ["kernel_size"]),
])
def test_bad_parameter_domain(tmp_path, body, fld, words):
    p = write(tmp_path, f"  - {{name: Conv2d, in_degree: [1], out_degree: [0], {body}}}\n")
    e = rejected(p, "Conv2d", fld)
    for w in words:
        assert w in str(e), (w, str(e))


def test_float_range_outside_spec(tmp_path):
    p = write(tmp_path, "  - {name: Fill, in_degree: [1], out_degree: [0], params: {value: {range: [-2.0, 0.5]}}}\n")
    rejected(p, "Fill", "params.value")


CONV_RELU = """\
      - name: ConvRelu
        ops: [Conv2d, Relu]
        inner_edges: [[0, 1]]
        in_degree: [1]
        out_degree: [0]
        params:
          {params}
    """


@pytest.mark.parametrize("params,field", [
    ("0: {dilation: {range: [1, 7]}}", "params.dilation"),  # a bad domain of an inner op
    ("5: {kh: {range: [1, 3]}}", "params"),  # an inner-op index out of range
])
def test_bad_params_in_subgraph(tmp_path, params, field):
    rejected(write(tmp_path, CONV_RELU.format(params=params)), "ConvRelu", field)


def test_good_narrowed_domains_are_kept(tmp_path):
    p = write(tmp_path, """\
      - name: Conv2d
        in_degree: [1]
        out_degree: [0]
        params: {kh: {range: [3, 3]}, padding: {choice: [EXPLICIT]}, out_ch: {range: [2, 4]}}
    """)
    b = load_corpus(p).block("Conv2d")
    assert b.params == ({"kh": IntRange(3, 3), "padding": Choice(("EXPLICIT",)), "out_ch": IntRange(2, 4)},)


def test_duplicate_block(tmp_path):
    p = write(tmp_path, "  - {name: Relu, in_degree: [1], out_degree: [2]}\n")
    e = rejected(p, "Relu", "name")
    assert "duplicate" in str(e)


def test_block_without_name(tmp_path):
    p = write(tmp_path, "  - {in_degree: [1], out_degree: [2]}\n")
    rejected(p, "#1", "name")


def test_empty_and_malformed_files(tmp_path):
    p = tmp_path / "empty.yaml"
    p.write_text("name: x\nblocks: []\n")
    rejected(p, "-", "blocks")
    p = tmp_path / "broken.yaml"
    p.write_text("blocks: [ {name: Relu\n")
    e = rejected(p, "-", "-")
    assert "YAML" in str(e)
    missing = tmp_path / "nope.yaml"
    rejected(missing, "-", "-")


def test_bad_n_maxspc(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("n_maxspc: 0\nblocks:\n" + GOOD_BLOCK)
    rejected(p, "-", "n_maxspc")


def test_parse_corpus_names_given_file():
    with pytest.raises(CorpusError) as ei:
        parse_corpus({"blocks": [{"name": "Nope", "in_degree": [1], "out_degree": [0]}]}, "mem.yaml")
    assert ei.value.file == "mem.yaml" and str(ei.value).startswith("mem.yaml: ")


def test_corpus_error_is_a_value_error():
    assert issubclass(CorpusError, ValueError)
    assert isinstance(Block, type)


# --------------------------------------------------------------------------- `gbft corpus check` (bad)


@pytest.mark.parametrize("body,block,fld", [
    ("  - {name: Frobnicate, in_degree: [1], out_degree: [0]}\n", "Frobnicate", "ops"),
    ("  - {name: Tanh, in_degree: [], out_degree: [0]}\n", "Tanh", "in_degree"),
    ("  - {name: Conv2d, in_degree: [1], out_degree: [0], params: {kh: {range: [1, 9]}}}\n", "Conv2d", "params.kh"),
    ("  - {name: Relu, in_degree: [1], out_degree: [0]}\n", "Relu", "name"),
])
def test_cli_check_bad_corpus(tmp_path, capsys, body, block, fld):
    p = write(tmp_path, body)
    rc = main(["corpus", "check", str(p)])
    out, err = capsys.readouterr()
    assert rc != 0
    assert "OK" not in out
    assert err.startswith("error: ")
    assert str(p) in err and repr(block) in err and repr(fld) in err


def test_cli_check_missing_file(tmp_path, capsys):
    p = tmp_path / "absent.yaml"
    rc = main(["corpus", "check", str(p)])
    out, err = capsys.readouterr()
    assert rc != 0
    assert out == ""
    assert str(p) in err and "cannot read" in err


def test_a_corpus_extending_another_drops_and_replaces_blocks(tmp_path):
    from gbft_action.corpus import CorpusError, DEFAULT_CORPUS, load_corpus
    from gbft_action.frontends import FRONTENDS
    tfl = load_corpus(FRONTENDS["tflite"].default_corpus)
    full = load_corpus(DEFAULT_CORPUS)
    assert {b.name for b in full.blocks} - {b.name for b in tfl.blocks} == {"Cropandresize"}
    assert set(tfl.block("Resize").params[0]["method"].values) == {"bilinear", "nearest"}
    assert tfl.block("Lrn") == full.block("Lrn")  # the rest as in the base corpus
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: {DEFAULT_CORPUS}\ndrop: [NoSuchBlock]\nblocks: []\n")
    with pytest.raises(CorpusError, match="NoSuchBlock.*drop"):
        load_corpus(bad)
