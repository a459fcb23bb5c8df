"""The pull request's verdict over two builds' records (issue 35): a confirmed regression fails
the check whatever its symptom class, but for the classes listed (list-only); a model both
builds fail alike is pre-existing wherever each build's localisation stopped; new models of a
known root cause fail it; the headline, the outputs and the exit code say the same.

The records are what a campaign writes for the two builds (pipeline -> store); the
campaign-level test with real engines is tests/test_triage.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbft_action.action.main import EXIT_FAILED, EXIT_OK, exit_code
from gbft_action.bugs.bundle import BugBook, Found
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.policy import fails_check, listed_line, parse_list_only
from gbft_action.bugs.triage import case_verdict, headline, tally
from gbft_action.summarize import SummaryInputs, TriageInputs, summarize
from gbft_action.records.config import Config
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.records import Policy, Stop, StopReason, Summary
from gbft_action.records.campaign import Session
from gbft_action.records.case import CaseRecord
from gbft_action.records.enums import Verdict
from gbft_action.records.bundle import EngineInfo

ENGINE = EngineInfo("mnn", "3.6.1", "x86_64")


def fp(op: str, status: str = "DCF", kind: str = "mismatch", code: str = "values") -> Fingerprint:
    stage = {"DCF": "compare", "MCF": "convert", "IF": "infer"}[status]
    return Fingerprint(stage, status, kind, code, op, "in-degree 1, input ranks [4]" if status == "DCF" else "")


def one(f: Fingerprint | None, symptom: str = "", direction: str = "", error: float | None = None) -> dict:
    d: dict = {"status": "DCP", "platform": "x86_64"}
    if f is not None:
        d.update(status=f.status, op=f.op, node="n0", stage=f.stage, message=f"{f.op}: {f.code}",
                 fingerprint=f.to_json(), key=f.id, symptom=symptom, direction=direction)
    return {**d, **({"error": error} if error is not None else {})}


class Run:
    """One campaign's records over two builds, built model by model."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.book, self.records = tmp, BugBook(tmp), []

    def model(self, pr: Fingerprint | None, base: Fingerprint | None, symptom: str = "wrong-result",
              direction: str = "", errors: tuple[float | None, float | None] = (None, None),
              alike: bool = False) -> None:
        i = len(self.records)
        v = case_verdict(pr, base, alike)
        rec = {**one(pr, symptom if pr else "", direction, errors[1]), "index": i, "hash": f"h{i}",
               "base": one(base, symptom if base else "", direction, errors[0]), "verdict": v.value if v else "",
               "case_dir": f"cases/{i:06d}" if pr or base else ""}
        self.records.append(CaseRecord.from_json(rec))
        if pr is not None:
            t = TensorType((1, 2, 3, 3))
            g = Graph({"in0": t}, [Node("n0", "Relu", ["in0"], {}, t, "Relu")], ["n0"], 1)  # the bundle's model
            self.book.observe(self.records[-1], rec["case_dir"], g, Found.of_engine(ENGINE, 1))

    def summary(self, list_only: tuple[str, ...] | None = None) -> Summary:
        """The summary, every candidate confirmed by its replays (what bugs.triage.confirm gives
        a deterministic difference)."""
        from gbft_action.bugs import triage

        cands = {k: (bv.verdict, "confirmed in 6 of 6 replays") for k, bv in triage.aggregate(self.records).items()
                 if bv.verdict in triage.CONFIRMED}
        cfg = Config(out=self.tmp, seed=1, **({"list_only": list_only} if list_only is not None else {}))
        return summarize(SummaryInputs(
            records=self.records, sessions=[Session(2.0, len(self.records), Stop(StopReason.BUDGET))], cfg=cfg,
            engine=ENGINE, platform_info={"x86_64": EngineInfo()}, book=self.book, new_ids=sorted(self.book.seen_this_run),
            run_id="r", minimized={}, bugs_dir=str(self.tmp / "bugs"),
            triage=TriageInputs(self.tmp, cands, EngineInfo("mnn", "3.5.0"))))


def red(s: Summary) -> bool:
    t = tally(s)
    return exit_code("new", t.failures, t.new) == EXIT_FAILED


def test_the_rule_is_one_function_over_class_and_newness():
    assert fails_check("nan-inf", True) and fails_check("precision", True) and fails_check("unsupported", True)
    assert not fails_check("reference-disagreement", True)  # no build can be judged
    assert not fails_check("tie", True, ())  # not a defect, listed or not
    assert not fails_check("crash", False)
    assert not fails_check("precision", True, ("precision",))
    # Without a base build nothing says the engine changed: only what the policy files (and a lost
    # operator) fails a run on what was not seen before.
    assert not fails_check("precision", True, against_base=False, policy=Policy.SUMMARY)
    assert fails_check("unsupported", True, against_base=False, policy=Policy.SUMMARY)
    assert fails_check("crash", True, against_base=False, policy=Policy.REPORT)
    assert parse_list_only("none") == () and parse_list_only("precision, nan-inf") == ("precision", "nan-inf")
    with pytest.raises(ValueError, match="unknown symptom class 'precison'"):
        parse_list_only("precison")


def test_the_cli_and_the_action_take_the_listed_classes_and_name_a_bad_one(capsys):
    from gbft_action.action.config import ActionConfig, ConfigError
    from gbft_action.cli import build_parser

    ap = build_parser()
    assert ap.parse_args(["fuzz"]).list_only == ("reference-disagreement",)
    assert ap.parse_args(["fuzz", "--list-only", "precision,nan-inf"]).list_only == ("precision", "nan-inf")
    assert ap.parse_args(["fuzz", "--list-only", "none"]).list_only == ()
    with pytest.raises(SystemExit):
        ap.parse_args(["fuzz", "--list-only", "precison"])
    assert "unknown symptom class 'precison'" in capsys.readouterr().err
    assert ActionConfig().validate().knob_values()["list_only"] == ("reference-disagreement",)
    with pytest.raises(ConfigError, match="input 'list-only': unknown symptom class 'nan'"):
        ActionConfig(knobs={"list-only": "nan"}).validate()


def test_an_infinity_turned_into_nan_only_by_the_pr_build_is_red_and_named(tmp_path):
    run = Run(tmp_path)
    run.model(fp("Realdiv"), None, "nan-inf", "Inf->NaN")
    run.model(None, None)
    s = run.summary()
    assert red(s) and tally(s).new == 1
    assert headline(s).startswith("**1 new failure introduced by this pull request**: "
                                  "Realdiv gives NaN where the result is infinite")


def test_precision_lost_only_on_the_pr_build_is_red_with_both_errors(tmp_path):
    run = Run(tmp_path)
    run.model(fp("Softmax"), None, "precision", errors=(0.0002, 0.004))
    run.model(fp("Softmax"), None, "precision", errors=(0.0001, 0.0031))
    s = run.summary()
    assert red(s)
    (rc,) = s.root_causes
    assert rc.errors == (0.0002, 0.004) and rc.new_models == 2
    assert "Softmax: precision beyond 0.1% (error against the reference: base build 0.02%, this build 0.4%)" \
        in headline(s)
    # Listed by the workflow's choice: green, listed, and the summary says which classes and why.
    s = run.summary(("precision",))
    assert not red(s) and tally(s).by_verdict["new-listed"] == 1
    assert "1 new of a class listed, not failing (precision" in headline(s)
    assert s.list_only == ("precision",) and Summary.from_json(s.to_json()).list_only == ("precision",)
    assert "precision (chosen by this workflow: input list-only)" in listed_line(s.list_only)


def test_a_reference_disagreement_is_listed_not_failing_by_default(tmp_path):
    run = Run(tmp_path)
    run.model(fp("Rsqrt"), None, "reference-disagreement")
    s = run.summary()
    assert not red(s) and s.blamed == () and tally(s).by_verdict["new-listed"] == 1
    assert headline(s).startswith("**No new failures**; 1 new of a class listed, not failing "
                                  "(reference-disagreement")
    assert "references disagree among themselves" in listed_line(s.list_only)
    assert red(run.summary(()))  # a team that lists nothing fails it too


def test_an_operator_newly_unsupported_is_red(tmp_path):
    run = Run(tmp_path)
    run.model(fp("Mish", "MCF", "unsupported", "Mish"), None, "unsupported")
    assert red(run.summary())


def test_new_models_under_a_known_root_cause_are_red_and_counted(tmp_path):
    """Seven models the base build passes now fail; one fails on both: one old case no longer
    outvotes seven new ones."""
    run = Run(tmp_path)
    ln = fp("LayerNormalization")
    for _ in range(7):
        run.model(ln, None)
    run.model(ln, ln)
    run.model(fp("Conv"), fp("Conv"))  # another, wholly pre-existing defect
    s = run.summary()
    assert red(s)
    rc = next(rc for rc in s.root_causes if rc.ops == ("LayerNormalization",))
    assert rc.verdict is Verdict.NEW and rc.new_models == 7 and rc.known
    assert headline(s).startswith("**1 new failure introduced by this pull request**: 7 models that pass on the "
                                  "base build now fail, under the known root cause LayerNormalization: wrong results")
    assert tally(s).by_verdict["pre-existing"] == 1  # Conv


def test_a_model_both_builds_fail_alike_is_pre_existing_whatever_the_localisation(tmp_path):
    run = Run(tmp_path)
    run.model(fp("LRN"), fp("GatherElements"), alike=True)  # the same outputs, localised apart
    s = run.summary()
    assert not red(s) and tally(s).by_verdict["pre-existing"] == 1
    assert headline(s).startswith("**No new failures**; 1 pre-existing")


def test_identical_builds_are_green_with_nothing_new(tmp_path):
    run = Run(tmp_path)
    for op in ("Tanh", "Conv", "Tanh"):
        run.model(fp(op), fp(op))
    run.model(None, None)
    s = run.summary()
    assert not red(s) and tally(s).new == 0 and exit_code("new", 2, tally(s).new) == EXIT_OK
    assert s.triage is not None and s.triage.counts["new"] == 0 and s.triage.counts["changed"] == 0
