"""Patterns: small ONNX graphs, written by hand, for the operators no single-node instance can
place (issue 26).  A node test case gives an instance only when one of its inputs is a tensor a
generated graph could feed; these operators take none:

- sources: all inputs constant or scalar (Constant, Range, the window functions);
- sequences, optionals and control flow: their values are no tensors (SequenceAt, Optional,
  If, Loop, Scan, SequenceMap);
- random operators, made deterministic by their parameters (a uniform draw rounded to one number,
  Bernoulli of probabilities 0 and 1): the reference has a value to compare with;
- outputs whose shape the values decide (NonZero, Unique, Compress), reduced to a shape the
  graph knows.

Each pattern takes one float32 tensor ``X`` and gives one ``Y``, in ONNX's text syntax
(``onnx.parser``), at the models' opset.  ``gbft onnx-records`` runs each through the same
validity oracle as the test cases' instances (checker, strict shape inference, ONNX Runtime
twice) and infers its shape rule by running it; the records then hold each as an instance of
its operator, and the emitter inlines it with its names prefixed by the node's id.  The
engine sees what a converter meets in exported models: a window feeding a multiply, a loop
over a state, a sequence split and concatenated again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import onnx
import onnx.parser


@dataclass(frozen=True)
class Pattern:
    """One pattern: the operator it places (its node's ``op``), a name, and its graph."""

    op: str
    name: str
    text: str


R4 = "float[2,3,4,5]"  # the recorded shape of a pattern any rank-4 tensor can feed
S4 = "float[N,C,H,W]"  # a body's tensors: symbolic, so the pattern follows its input's shape
LAST = "s = Shape(X) i = Constant<value = int64 {-1}>() n = Gather<axis=0>(s, i)"  # X's last dimension
CHANNELS = ("h = Shape(X) a = Constant<value = int64[1] {1}>() b = Constant<value = int64[1] {2}>() "
            "c = Slice(h, a, b)")  # X's dimension 1, as a shape
TEXT = "s = Cast<to=8>(X)"  # X's numbers as strings


def _g(body: str, x: str = R4, y: str = R4) -> str:
    return f"pattern ({x} X) => ({y} Y) {{ {body} }}"


PATTERNS: tuple[Pattern, ...] = (
    Pattern("Constant", "constant-add", _g("c = Constant<value = float[1] {0.5}>() Y = Add(X, c)")),
    Pattern("ConstantOfShape", "filled-like-input",
            _g("s = Shape(X) c = ConstantOfShape<value = float[1] {2.0}>(s) Y = Mul(X, c)")),
    Pattern("Range", "range-over-last-axis",
            _g(f"{LAST} z = Constant<value = int64 {{0}}>() o = Constant<value = int64 {{1}}>() "
               "r = Range(z, n, o) f = Cast<to=1>(r) Y = Add(X, f)")),
    Pattern("Size", "divide-by-size", _g("s = Size(X) f = Cast<to=1>(s) Y = Div(X, f)")),
    Pattern("CastLike", "truncate-like-input", _g("i = Cast<to=7>(X) Y = CastLike(i, X)")),
    Pattern("Compress", "compress-columns",
            _g("c = Constant<value = bool[6] {1,0,1,1,0,1}>() Y = Compress<axis=1>(X, c)", "float[2,6]", "float[2,4]")),
    # Means, not sums: a sum of 120 indices (thousands) fed a Softmax after it into overflow.
    Pattern("NonZero", "mean-of-nonzero-indices",
            _g("nz = NonZero(X) f = Cast<to=1>(nz) m = ReduceMean<keepdims=0>(f) Y = Add(X, m)")),
    Pattern("Unique", "mean-of-unique-values", _g("u = Unique<sorted=1>(X) m = ReduceMean<keepdims=0>(u) Y = Sub(X, m)")),
    Pattern("NonMaxSuppression", "six-boxes",
            _g("b = Constant<value = float[1,6,4] {0,0,1,1, 0,0.1,1,1.1, 0,-0.1,1,0.9, 0,10,1,11, 0,10.1,1,11.1, "
               "0,100,1,101}>() k = Constant<value = int64[1] {3}>() t = Constant<value = float[1] {0.5}>() "
               "m = Constant<value = float[1] {0.0}>() sel = NonMaxSuppression(b, X, k, t, m) "
               "s = ReduceSum<keepdims=0>(sel) f = Cast<to=1>(s) Y = Add(X, f)", "float[1,1,6]", "float[1,1,6]")),
    Pattern("GlobalLpPool", "add-global-l2", _g("p = GlobalLpPool<p=2>(X) Y = Add(X, p)")),
    Pattern("GlobalLpPool", "add-global-l1", _g("p = GlobalLpPool<p=1>(X) Y = Add(X, p)")),
    Pattern("MeanVarianceNormalization", "mvn-nhw", _g("Y = MeanVarianceNormalization<axes=[0,2,3]>(X)")),
    Pattern("MeanVarianceNormalization", "mvn-channels", _g("Y = MeanVarianceNormalization<axes=[1]>(X)")),
    Pattern("MaxRoiPool", "two-rois",
            _g("r = Constant<value = float[2,5] {0,0,0,4,4, 0,2,2,7,7}>() Y = MaxRoiPool<pooled_shape=[2,2]>(X, r)",
               "float[1,3,8,8]", "float[2,3,2,2]")),
    Pattern("HannWindow", "hann-symmetric", _g(f"{LAST} w = HannWindow<periodic=0>(n) Y = Mul(X, w)")),
    Pattern("HannWindow", "hann-periodic", _g(f"{LAST} w = HannWindow(n) Y = Mul(X, w)")),
    Pattern("HammingWindow", "hamming", _g(f"{LAST} w = HammingWindow(n) Y = Mul(X, w)")),
    Pattern("BlackmanWindow", "blackman", _g(f"{LAST} w = BlackmanWindow<periodic=0>(n) Y = Mul(X, w)")),
    Pattern("MelWeightMatrix", "mel-8-bins",
            _g("a = Constant<value = int64 {8}>() b = Constant<value = int64 {16}>() c = Constant<value = int64 {8000}>() "
               "d = Constant<value = float {0.0}>() e = Constant<value = float {4000.0}>() "
               "m = MelWeightMatrix(a, b, c, d, e) Y = MatMul(X, m)", "float[2,9]", "float[2,8]")),
    Pattern("STFT", "hann-frames",
            _g("st = Constant<value = int64 {8}>() n = Constant<value = int64 {16}>() w = HannWindow(n) "
               "Y = STFT<onesided=0>(X, st, w, n)", "float[1,64,1]", "float[1,7,16,2]")),
    # Random operators whose every value is one number once rounded: the reference has
    # something to compare with.  Not degenerate: a scale of 0 aborts ONNX Runtime
    # (std::normal_distribution wants a positive one), and MNN refuses low = high
    # ("RandomUniform requires low < high"), which the spec's [low, high) leaves empty.  A
    # uniform draw in [1, 1.25) is rounded to exactly 1 (an engine that ignores low and high
    # still shows): a narrow range added as it was left a few ulps of noise that a
    # MeanVarianceNormalization of a padded region, or a Less of two draws, blew up to O(1),
    # and ONNX Runtime against itself reported them as nondeterministic (seed 47).  A normal
    # draw of scale 1e-20 is its mean exactly in float32.
    Pattern("RandomNormal", "normal-scale-tiny",
            _g("r = RandomNormal<shape=[1], mean=0.5, scale=1e-20>() Y = Add(X, r)")),
    Pattern("RandomUniform", "uniform-rounded",
            _g("r = RandomUniform<shape=[5], low=1.0, high=1.25>() q = Round(r) Y = Mul(X, q)")),
    Pattern("RandomNormalLike", "normal-like-scale-tiny", _g("r = RandomNormalLike<mean=1.0, scale=1e-20>(X) Y = Mul(X, r)")),
    Pattern("RandomUniformLike", "uniform-like-rounded",
            _g("r = RandomUniformLike<low=1.0, high=1.25>(X) q = Round(r) Y = Mul(X, q)")),
    Pattern("Bernoulli", "bernoulli-of-0-and-1",
            _g("z = Constant<value = float {0.0}>() g = Greater(X, z) p = Cast<to=1>(g) b = Bernoulli(p) Y = Mul(X, b)")),
    Pattern("Multinomial", "multinomial-one-likely-class",
            _g("l = Constant<value = float[2,3] {0, -100, -100, -100, 0, -100}>() m = Multinomial<sample_size=4>(l) "
               "s = ReduceSum<keepdims=0>(m) f = Cast<to=1>(s) Y = Add(X, f)")),
    Pattern("OptionalGetElement", "wrap-unwrap", _g("o = Optional(X) Y = OptionalGetElement(o)")),
    Pattern("OptionalHasElement", "has-element", _g("o = Optional(X) h = OptionalHasElement(o) f = Cast<to=1>(h) Y = Mul(X, f)")),
    Pattern("SequenceAt", "construct-at",
            _g("n = Neg(X) s = SequenceConstruct(X, n) i = Constant<value = int64 {1}>() Y = SequenceAt(s, i)")),
    Pattern("ConcatFromSequence", "split-concat", _g("s = SplitToSequence<axis=1>(X) Y = ConcatFromSequence<axis=1>(s)")),
    Pattern("ConcatFromSequence", "split-stack",
            _g("s = SplitToSequence<axis=2, keepdims=0>(X) Y = ConcatFromSequence<axis=2, new_axis=1>(s)")),
    Pattern("SequenceLength", "insert-erase-length",
            _g("e = SequenceEmpty<dtype=1>() s1 = SequenceInsert(e, X) n = Neg(X) s2 = SequenceInsert(s1, n) "
               "z = Constant<value = int64 {0}>() s3 = SequenceErase(s2, z) k = SequenceLength(s3) a = SequenceAt(s3, z) "
               "f = Cast<to=1>(k) Y = Add(a, f)")),
    Pattern("SequenceMap", "relu-each",
            _g(f"s = SplitToSequence<axis=0>(X) m = SequenceMap<body = b ({S4} x) => ({S4} y) {{ y = Relu(x) }}>(s) "
               "Y = ConcatFromSequence<axis=0>(m)")),
    # GroupNormalization-21 (scale and bias per channel): its node test cases are written at
    # opset 18, where they were per group, so no case of them runs at 21 and later.
    Pattern("GroupNormalization", "one-group",
            _g(f"{CHANNELS} sc = ConstantOfShape<value = float[1] {{1.5}}>(c) "
               "bi = ConstantOfShape<value = float[1] {0.25}>(c) Y = GroupNormalization<num_groups=1, epsilon=1e-5>(X, sc, bi)")),
    Pattern("GroupNormalization", "three-groups-of-two",
            _g("sc = Constant<value = float[6] {1, 0.5, 2, 1, -1, 0.25}>() bi = Constant<value = float[6] "
               "{0, 0.1, -0.2, 0.3, 0, 1}>() Y = GroupNormalization<num_groups=3, epsilon=1e-3>(X, sc, bi)",
               "float[1,6,4,4]", "float[1,6,4,4]")),
    # The string operators of text pipelines (sklearn-onnx, tokenisers), on the numbers as text.
    # Each asks only whether the text has a minus sign: how an engine prints a float ("1.5",
    # "1.50000", "1e-05") is its own choice, and must not make a difference.
    Pattern("RegexFullMatch", "is-negative",
            _g(f"{TEXT} m = RegexFullMatch<pattern=\"-.*\">(s) f = Cast<to=1>(m) Y = Mul(X, f)")),
    Pattern("StringConcat", "prefix-then-match",
            _g(f"{TEXT} p = Constant<value = string[1] {{\"x\"}}>() t = StringConcat(p, s) "
               "m = RegexFullMatch<pattern=\"x-.*\">(t) f = Cast<to=1>(m) Y = Add(X, f)")),
    Pattern("StringSplit", "split-at-minus",
            _g(f"{TEXT} p, n = StringSplit<delimiter=\"-\", maxsplit=1>(s) f = Cast<to=1>(n) Y = Add(X, f)")),
    Pattern("StringNormalizer", "upper-then-match",
            _g(f"{TEXT} r = Constant<value = int64[2] {{1, -1}}>() q = Reshape(s, r) "
               "u = StringNormalizer<case_change_action=\"UPPER\", locale=\"C\">(q) m = RegexFullMatch<pattern=\"-.*\">(u) "
               "f = Cast<to=1>(m) sh = Shape(X) z = Reshape(f, sh) Y = Add(X, z)")),
    Pattern("If", "relu-or-neg",
            _g(f"m = ReduceMean<keepdims=0>(X) z = Constant<value = float {{0.0}}>() c = Greater(m, z) "
               f"Y = If(c) <then_branch = t () => ({S4} a) {{ a = Relu(X) }}, "
               f"else_branch = e () => ({S4} b) {{ b = Neg(X) }}>")),
    Pattern("Loop", "halve-three-times",
            _g(f"n = Constant<value = int64 {{3}}>() c = Constant<value = bool {{1}}>() "
               f"Y = Loop(n, c, X) <body = b (int64 i, bool ci, {S4} v) => (bool co, {S4} w) "
               "{ co = Identity(ci) h = Constant<value = float {0.5}>() w = Mul(v, h) }>")),
    Pattern("Scan", "cumulative-sum",
            _g("z = Constant<value = float[3] {0,0,0}>() "
               "f, Y = Scan<num_scan_inputs=1, body = b (float[3] s, float[3] x) => (float[3] t, float[3] o) "
               "{ t = Add(s, x) o = Identity(t) }>(z, X)", "float[4,3]", "float[4,3]")),
)


@lru_cache(maxsize=256)
def parsed(text: str) -> onnx.GraphProto:
    """A pattern's graph (parsed once per process: the emitter inlines it in every model)."""
    return onnx.parser.parse_graph(text)


def op_types(g: onnx.GraphProto) -> set[str]:
    """Every operator a graph holds, its subgraphs' too."""
    out = set()
    for n in g.node:
        out.add(n.op_type)
        for a in n.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                out |= op_types(sub)
    return out
