"""summary.json is built once, by summarize.summarize over records (no Campaign needed): what
fails the step is only what the policy reports, and a second call on the same inputs gives
the same summary (nothing is patched in place)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from gbft_action.records.campaign import Session
from gbft_action.bugs.bundle import BugBook, Found
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.bugs.triage import tally
from gbft_action.summarize import SummaryInputs, summarize, summarize_all
from gbft_action.records.config import Config
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.records import HarnessErrors, Stop, StopReason, Summary
from gbft_action.records.case import CaseRecord, PlatformRecord
from gbft_action.records.summary import Diagnosis
from gbft_action.records.bundle import EngineInfo

ENGINE = EngineInfo("mnn", "3.6.1", "x86_64")


def _graph(op: str) -> Graph:
    t = TensorType((1, 2, 3, 3))
    return Graph({"in0": t}, [Node("n0", op, ["in0"], {}, t, op)], ["n0"], 1)


def _records(book: BugBook) -> list[CaseRecord]:
    """Three models: a wrong Tanh (twice), a reference disagreement on Rsqrt, a pass."""
    out = []
    for i, (op, symptom) in enumerate((("Tanh", "wrong-result"), ("Tanh", "wrong-result"),
                                       ("Rsqrt", "reference-disagreement"), ("", ""))):
        rec = {"index": i, "hash": f"h{i}", "status": "DCP" if not op else "DCF", "op": op, "node": "n0",
               "message": f"{op} differs", "platform": "x86_64", "stage": "compare"}
        if op:
            fp = Fingerprint("compare", "DCF", "mismatch", "values", op, "in-degree 1, input ranks [4]")
            rec.update(fingerprint=fp.to_json(), key=fp.id, symptom=symptom, case_dir=f"cases/{i:06d}")
        out.append(CaseRecord.from_json(rec))
        if op:
            book.observe(out[-1], out[-1].case_dir, _graph(op), Found.of_engine(ENGINE, 1))
    return out


def test_summarize_is_one_build_over_records(tmp_path: Path):
    book = BugBook(tmp_path)
    records = _records(book)
    inp = SummaryInputs(records=records, sessions=[Session(2.0, 4, Stop(StopReason.BUDGET))],
                        cfg=Config(out=tmp_path, seed=1), engine=ENGINE, platform_info={"x86_64": EngineInfo()}, book=book,
                        new_ids=sorted(book.seen_this_run), run_id="r", minimized={}, bugs_dir=str(tmp_path / "bugs"))
    before = copy.deepcopy(records)
    files = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    s = summarize(inp)
    assert summarize(inp) == s and records == before  # the same inputs, the same summary; records untouched
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == files  # pure: nothing written
    summarize_all(inp).write(tmp_path, book)  # the caller writes
    assert (tmp_path / "summary.json").exists()
    assert s.models == 4 and s.unique_failures == 2 and str(s.stop_reason) == "budget reached"
    by_op = {f.op: f for f in s.failures}
    assert by_op["Tanh"].count == 2 and by_op["Tanh"].symptom == "wrong-result"
    assert all(f.root_cause in {rc.key for rc in s.root_causes} for f in s.failures)
    # The reference disagreement (policy summary) is never a new failure: only Tanh fails the step.
    assert s.new_failures == (by_op["Tanh"].key,)
    t = tally(s)
    assert (t.failures, t.fingerprints, t.new, t.new_fingerprints) == (2, 2, 1, 1)
    assert s.triage is None and s.symptom_policy["reference-disagreement"] == "summary"
    # What is written is what is read: summary.json's one writer and one reader agree.
    s.write(tmp_path)
    assert Summary.read(tmp_path) == s and "triage" not in json.loads((tmp_path / "summary.json").read_text())


def test_the_reserve_grows_with_undiagnosed_keys_up_to_its_cap():
    from gbft_action.campaign import DIAG_ESTIMATE_S, MAX_RESERVE, reserve

    assert reserve(60.0, 600.0, [], 0) == 60.0  # the configured share at least
    assert reserve(60.0, 600.0, [], 10) == max(60.0, 10 * DIAG_ESTIMATE_S)  # no diagnosis yet: the estimate
    assert reserve(60.0, 600.0, [Diagnosis(wall=8.0)] * 5, 20) == 160.0  # 20 keys at the 8 s the last ones took
    assert reserve(60.0, 600.0, [Diagnosis(wall=8.0)], 1000) == MAX_RESERVE * 600.0  # never past the cap


def test_diagnosis_order_puts_one_reportable_fingerprint_per_local_key_first():
    from gbft_action.campaign import diagnosis_order

    def rec(op: str, symptom: str, n: int) -> PlatformRecord:
        return PlatformRecord.from_json({"status": "DCF", "symptom": symptom, "fingerprint": {"op": op}, "n_nodes": n})

    firsts = {"a1": rec("Lrn", "wrong-result", 9), "a2": rec("Lrn", "wrong-result", 3),
              "p": rec("Exp", "precision", 1), "t": rec("Add", "timeout", 1), "b": rec("Add", "wrong-result", 5)}
    heads, rest = diagnosis_order(firsts, {f: 1 for f in firsts}, {})
    # Reportable before a summary class, smallest first; hangs never (each replay would hang).
    assert heads == ["a2", "b", "p"] and rest == ["a1"]
    # A key seen in dozens of cases goes first, and heads its local key.
    heads, rest = diagnosis_order(firsts, {**{f: 1 for f in firsts}, "a1": 40}, {})
    assert heads[0] == "a1" and rest == ["a2"]
    # The policy decides what is reportable: precision=report puts it among the first.
    assert diagnosis_order(firsts, {f: 1 for f in firsts}, {"precision": "report"})[0] == ["p", "a2", "b"]


def test_a_diagnosis_the_harness_fails_on_is_counted_not_fatal(tmp_path: Path, monkeypatch):
    import gbft_action.campaign as C

    def broken(lane, book, fid, limit, resume):
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")

    monkeypatch.setattr(C, "diagnose", broken)
    stats = C._diagnosed_or_error(None, None, "f1", 5.0, False)  # type: ignore[arg-type]
    assert stats.complete and stats.error.startswith("diagnosis: ValueError: array is too big")
    assert "broken" in stats.trace  # where it raised, for the harness's maintainers
    book = BugBook(tmp_path)
    records = _records(book)
    s = summarize(SummaryInputs(records=records, sessions=[Session(1.0, 4, Stop(StopReason.OUTSIDE, "x"))],
                                cfg=Config(out=tmp_path, seed=1), engine=ENGINE, platform_info={"x86_64": EngineInfo()},
                                book=book, new_ids=sorted(book.seen_this_run), run_id="r",
                                minimized={"f1": stats}, bugs_dir=""))
    assert s.harness_errors == HarnessErrors(1, stats.error)  # shown in the job summary
    assert Summary.from_json(json.loads(json.dumps(s.to_json()))).minimized["f1"] == stats  # read back the same


def test_one_fuzz_configuration_checked_once_names_the_bad_setting(tmp_path, capsys):
    """Config.validate: whoever built it (the CLI's options, the action's inputs), the first
    bad setting is one line naming it and what it may be."""
    import re
    from dataclasses import replace

    import pytest

    from gbft_action.cli import main

    ok = Config(out=tmp_path).validate()
    for change, words in ((dict(budget=0), "--budget must be a number of seconds above 0, got 0"),
                          (dict(blocks=(5, 2)), "--blocks: must be MIN-MAX with 1 <= MIN <= MAX <= 100 (e.g. 1-30), got 5-2"),
                          (dict(minimize_share=1.0), "--minimize-share must be in [0, 1), got 1.0"),
                          (dict(jobs=0), "--jobs must be 1 or more"), (dict(shard=(3, 2)), "--shard must be I/N"),
                          (dict(frontend="tf,onnx", corpus="x.yaml"), "a corpus is one front end's blocks")):
        with pytest.raises(ValueError, match=re.escape(words)):
            replace(ok, **change).validate()
    assert main(["fuzz", "--minimize-share", "1.5", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --minimize-share must be in [0, 1), got 1.5"]
