"""The output oracle: ``compare`` and ``judge_outputs`` on the edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from gbft_action.oracle import ENGINE_FAILURES, OutputDiff, compare, judge_outputs

from gbft_action.records import Status, Tolerance

TOL = Tolerance()
NAN, INF = np.nan, np.inf


def f32(*xs):
    return np.array(xs, np.float32)


def test_default_tolerance_is_the_papers():
    assert TOL.rtol == 1e-3 and TOL.atol == 1e-5 and TOL.min_ratio == 0.999


# --------------------------------------------------------------------------- exact, NaN, Inf


def test_exact_match_passes():
    x = np.random.default_rng(0).uniform(-5, 5, size=(2, 3, 4)).astype(np.float32)
    d = compare(x, x.copy(), "out")
    assert d.ok and d.ratio == 1.0 and d.reason == "" and d.worst == [] and d.name == "out"


def test_clearly_different_fails():
    d = compare(f32(1, 2, 3), f32(1, 2, 4))
    assert not d.ok
    assert d.ratio == pytest.approx(2 / 3)
    assert "1 of 3 elements differ" in d.reason


def test_nan_vs_nan_passes():
    d = compare(f32(NAN, 1.0, NAN), f32(NAN, 1.0, NAN))
    assert d.ok and d.ratio == 1.0


@pytest.mark.parametrize("e,a", [(NAN, 1.0), (1.0, NAN), (NAN, 0.0), (0.0, NAN), (NAN, INF), (INF, NAN)])
def test_nan_on_one_side_fails(e, a):
    d = compare(f32(e), f32(a))
    assert not d.ok and d.ratio == 0.0
    assert len(d.worst) == 1 and d.worst[0]["index"] == [0]


def test_nan_on_one_side_is_shown_as_text():
    d = compare(f32(1.0, NAN), f32(1.0, 2.0))
    assert d.worst == [{"index": [1], "expected": "nan", "actual": 2.0}]


@pytest.mark.parametrize("v", [INF, -INF])
def test_same_infinity_passes(v):
    d = compare(f32(v, 1.0), f32(v, 1.0))
    assert d.ok and d.ratio == 1.0


# Regression: with e = +-Inf the bound atol + rtol*|e| is +Inf, so a plain
# |a - e| <= bound once let any non-NaN actual value pass against an expected Inf.
@pytest.mark.parametrize("e,a", [
    (INF, -INF),
    (-INF, INF),
    (INF, 3.0), 
    (-INF, 0.0),
    (INF, 3.4e38),  # the largest float32 is still not Inf
    (3.0, INF),
    (0.0, -INF),
])
def test_infinity_mismatch_fails(e, a):
    d = compare(f32(e), f32(a))
    assert not d.ok, f"expected {e} vs actual {a} passed"
    assert d.ratio == 0.0
    assert d.worst and d.worst[0]["index"] == [0]


def test_inf_vs_finite_does_not_hide_in_a_large_tensor():
    """An engine returning finite values where TensorFlow returns +Inf (x/0) fails."""
    e = np.full((10, 10), INF, np.float32)
    a = np.zeros((10, 10), np.float32)
    d = judge_outputs({"y": e}, {"y": a}, ["y"])[0]
    assert not d.ok


# --------------------------------------------------------------------------- atol, rtol, the ratio


def test_zeros_vs_tiny_values_within_atol_pass():
    e = np.zeros(100, np.float32)
    a = np.full(100, 9e-6, np.float32)
    assert compare(e, a).ok
    assert compare(e, -a).ok
    # A sum of cancelling terms: exact zero vs float rounding noise.
    assert compare(f32(0.0, 0.0), f32(1e-7, -3e-6)).ok


def test_zeros_vs_values_beyond_atol_fail():
    e = np.zeros(10, np.float64)
    a = np.full(10, 2e-5, np.float64)
    d = compare(e, a)
    assert not d.ok and d.ratio == 0.0


def test_atol_boundary_near_zero():
    e = np.zeros(1, np.float64)
    assert compare(e, np.array([0.99e-5])).ok
    assert not compare(e, np.array([1.01e-5])).ok


@pytest.mark.parametrize("scale", [1.0, 1000.0, -250.0, 1e6])
def test_relative_error_just_under_and_over_rtol(scale):
    e = np.array([scale], np.float64)
    bound = TOL.atol + TOL.rtol * abs(scale)
    assert compare(e, e + 0.99 * bound).ok
    assert compare(e, e - 0.99 * bound).ok
    assert not compare(e, e + 1.01 * bound).ok
    assert not compare(e, e - 1.01 * bound).ok


def test_relative_error_in_float32_large_values():
    # 1000 vs 1000.9 is 0.09% off: pass; 1000 vs 1001.1 is 0.11% off: fail.
    assert compare(f32(1000.0), f32(1000.9)).ok
    assert not compare(f32(1000.0), f32(1001.1)).ok


def test_tolerance_is_relative_to_expected_not_actual():
    # |a - e| = 1.0005: over rtol * 1000 + atol, under rtol * 1001.0005 + atol.
    assert not compare(np.array([1000.0]), np.array([1001.0005])).ok
    assert compare(np.array([1001.0005]), np.array([1000.0])).ok


@pytest.mark.parametrize("n", [1000, 2000])
def test_ratio_boundary_exactly_999_per_mille_passes(n):
    e = np.linspace(-1, 1, n).astype(np.float32)
    a = e.copy()
    n_bad = n // 1000  # exactly 0.1% of the elements
    a[:n_bad] += 1.0
    d = compare(e, a)
    assert d.ok, d.reason
    assert d.ratio == pytest.approx(0.999)
    assert d.worst == []  # a pass lists no worst elements
    a[n_bad] += 1.0  # one more bad element
    d = compare(e, a)
    assert not d.ok
    assert d.ratio == pytest.approx((n - n_bad - 1) / n)
    assert f"{n_bad + 1} of {n} elements differ" in d.reason
    assert len(d.worst) == min(5, n_bad + 1)


def test_ratio_boundary_with_nans():
    e = np.ones(1000, np.float32)
    a = e.copy()
    a[7] = NAN
    assert compare(e, a).ok  # 999/1000
    a[8] = NAN
    assert not compare(e, a).ok


def test_custom_tolerance():
    e, a = f32(1.0, 1.0), f32(1.0, 1.05)
    assert not compare(e, a).ok
    assert compare(e, a, tol=Tolerance(rtol=0.1)).ok
    assert compare(e, a, tol=Tolerance(min_ratio=0.5)).ok
    assert not compare(e, a, tol=Tolerance(min_ratio=0.6)).ok
    assert not judge_outputs({"y": e}, {"y": a}, ["y"])[0].ok
    assert judge_outputs({"y": e}, {"y": a}, ["y"], Tolerance(rtol=0.1))[0].ok


# --------------------------------------------------------------------------- shape, missing outputs


@pytest.mark.parametrize("es,as_", [((3,), (1, 3)), ((2, 3), (3, 2)), ((4,), (5,)), ((1,), ()), ((0,), (1,))])
def test_shape_mismatch_fails(es, as_):
    d = compare(np.zeros(es, np.float32), np.zeros(as_, np.float32), "y")
    assert not d.ok and d.ratio == 0.0
    assert "shape" in d.reason and str(list(as_)) in d.reason and str(list(es)) in d.reason


def test_empty_outputs_match():
    d = compare(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert d.ok


def test_scalar_outputs():
    assert compare(np.float32(2.0), np.float32(2.0)).ok
    d = compare(np.float32(2.0), np.float32(3.0))
    assert not d.ok and d.worst == [{"index": [], "expected": 2.0, "actual": 3.0}]


def test_judge_outputs_missing_output_fails():
    e = {"a": f32(1, 2), "b": f32(3)}
    diffs = judge_outputs(e, {"a": f32(1, 2)}, ["a", "b"])
    assert [d.name for d in diffs] == ["a", "b"]
    assert diffs[0].ok
    assert not diffs[1].ok and diffs[1].ratio == 0.0 and "missing" in diffs[1].reason


def test_judge_outputs_follows_names_and_ignores_extras():
    e = {"a": f32(1), "b": f32(2)}
    a = {"b": f32(2), "a": f32(1), "extra": f32(99)}
    diffs = judge_outputs(e, a, ["b", "a"])
    assert [d.name for d in diffs] == ["b", "a"] and all(d.ok for d in diffs)
    assert judge_outputs(e, a, []) == []


def test_judge_outputs_reports_each_output():
    e = {"a": f32(1), "b": f32(2), "c": f32(3)}
    a = {"a": f32(1), "b": f32(5), "c": f32(3, 3)}
    diffs = judge_outputs(e, a, ["a", "b", "c"])
    assert [d.ok for d in diffs] == [True, False, False]
    assert "shape" in diffs[2].reason
    j = diffs[1].to_json()
    assert j == {"name": "b", "ok": False, "ratio": 0.0, "reason": diffs[1].reason,
                 "worst": [{"index": [0], "expected": 2.0, "actual": 5.0}]}


# --------------------------------------------------------------------------- worst


def test_worst_lists_the_worst_elements_with_indices():
    e = np.zeros((4, 5), np.float64)
    a = e.copy()
    errs = {(0, 1): 0.5, (1, 2): 3.0, (2, 3): -7.0, (3, 4): 1.0, (0, 0): 2.0, (3, 0): 0.25, (2, 2): 0.1}
    for idx, v in errs.items():
        a[idx] = v
    d = compare(e, a)
    assert not d.ok
    assert len(d.worst) == 5  # n_worst
    got = [(tuple(w["index"]), w["actual"]) for w in d.worst]
    assert got == [((2, 3), -7.0), ((1, 2), 3.0), ((0, 0), 2.0), ((3, 4), 1.0), ((0, 1), 0.5)]
    assert all(w["expected"] == 0.0 for w in d.worst)
    d = compare(e, a, n_worst=10)
    assert len(d.worst) == len(errs)  # only the failing elements, never the good ones
    assert [tuple(w["index"]) for w in d.worst][-1] == (2, 2)


def test_worst_puts_nan_first():
    e = np.zeros(6, np.float32)
    a = e.copy()
    a[1], a[4] = 100.0, NAN
    d = compare(e, a)
    assert [w["index"] for w in d.worst] == [[4], [1]]
    assert d.worst[0]["actual"] == "nan"


def test_worst_values_are_json_friendly():
    d = compare(f32(1.0, 2.0), f32(5.0, -INF))
    for w in d.worst:
        assert all(isinstance(i, int) for i in w["index"])
        for k in ("expected", "actual"):
            assert isinstance(w[k], (float, str))
    assert {"index": [1], "expected": 2.0, "actual": "-inf"} in d.worst


# --------------------------------------------------------------------------- dtypes


def test_ints_vs_floats_compare_numerically():
    assert compare(np.array([1, 2, 3], np.int32), np.array([1.0, 2.0, 3.0], np.float32)).ok
    assert compare(np.array([1.0, 2.0, 3.0], np.float32), np.array([1, 2, 3], np.int64)).ok
    assert compare(np.array([1, 2, 3], np.int64), np.array([1, 2, 3], np.int32)).ok  # ArgMax int64 vs int32
    d = compare(np.array([1, 2, 3], np.int32), np.array([1.0, 2.5, 3.0], np.float32))
    assert not d.ok and d.worst == [{"index": [1], "expected": 2.0, "actual": 2.5}]
    assert not compare(np.array([7], np.int32), np.array([8], np.int32)).ok


def test_large_ints_within_rtol():
    # 100000 vs 100050: 0.05% off, a pass under the relative rule.
    assert compare(np.array([100000], np.int32), np.array([100050], np.int32)).ok
    assert not compare(np.array([100000], np.int32), np.array([100200], np.int32)).ok


def test_bool_outputs():
    e = np.array([True, False, True, False])
    assert compare(e, e.copy()).ok
    d = compare(e, ~e)
    assert not d.ok and d.ratio == 0.0
    d = compare(e, np.array([True, False, False, False]))
    assert not d.ok and d.ratio == 0.75
    assert d.worst == [{"index": [2], "expected": 1.0, "actual": 0.0}]


def test_bool_ratio_boundary():
    e = np.zeros(1000, bool)
    a = e.copy()
    a[0] = True
    assert compare(e, a).ok  # 999/1000 elements agree
    a[1] = True
    assert not compare(e, a).ok


# --------------------------------------------------------------------------- statuses


def test_statuses():
    assert str(Status.DCF) == "DCF" and Status("MCF") is Status.MCF
    assert set(ENGINE_FAILURES) == {Status.MCF, Status.IF, Status.DCF, Status.XPF, Status.XBF, Status.XTF}
    assert Status.REF not in ENGINE_FAILURES and Status.GEN not in ENGINE_FAILURES
    assert OutputDiff("x", True, 1.0).to_json()["worst"] == []
