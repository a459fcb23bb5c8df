"""The records a campaign writes (gbft_action.records): one reader and one writer each, a schema
version, version 0 (files written before records) read the same way, and a newer version or a
field of the wrong type refused in one line naming the file and the field."""

from __future__ import annotations

import json

import pytest

from gbft_action.records import (BundleMeta, EngineInfo, Fingerprint, RecordError, Status, Stop, StopReason, Summary,
                                 Symptom)
from gbft_action.records.campaign import CampaignIdentity, CampaignRecord, Session
from gbft_action.records.config import Config
from gbft_action.records.known import KnownBug, read_known, write_known
from gbft_action.statefile import StateFileError

FP = Fingerprint("compare", "DCF", "mismatch", "values", "Lrn", "in-degree 1, input ranks [4]")


def test_each_record_reads_back_what_it_wrote_and_today_s_files_as_version_0(tmp_path):
    meta = BundleMeta(FP.id, FP, FP.title, Status.DCF, "compare", EngineInfo("mnn", "3.6.1", "x86_64"),
                      symptom=Symptom.WRONG, platforms=("x86_64",), occurrences=3, after=(1, 2))
    (tmp_path / "b").mkdir()
    meta.write(tmp_path / "b")
    assert BundleMeta.read(tmp_path / "b") == meta
    old = {k: v for k, v in meta.to_json().items() if k != "version"}  # version 0: no version key
    assert BundleMeta.from_json(old) == meta and BundleMeta.read(tmp_path / "none") is None
    rec = CampaignRecord(CampaignIdentity(3), Config(tmp_path, seed=3, shard=(2, 4)), (Session(1.5, 10, Stop(StopReason.BUDGET)),),
                         "0.1.0")
    rec.write(tmp_path)
    back = CampaignRecord.read(tmp_path)
    assert back == rec and (back.config.shard, back.config.seed, back.config.frontend) == ((2, 4), 3, "tf")
    known = {FP.id: KnownBug(FP, FP.title, "2026-11-26T00:00:00Z", count=2, platforms=("x86_64",))}
    write_known(tmp_path / "known_bugs.json", known)
    assert read_known(tmp_path / "known_bugs.json") == known
    s = Summary(4, stop_reason=Stop(StopReason.BUDGET), new_failures=(FP.id,))
    s.write(tmp_path)
    assert Summary.read(tmp_path) == s and Summary.from_json({"models": 4}).version == 1


def test_a_campaign_identity_is_compared_whole_as_its_json_was():
    today = {"seed": 3, "blocks": [1, 30], "graph": "both", "engine": "mnn==3.6.1", "corpus_sha256": "ab",
             "chooser": "mcts", "mutations": True, "special_share": 0.1, "state_sha256": "", "platforms": ["x86_64"],
             "base": "", "frontend": "onnx"}
    ident = CampaignIdentity.from_json(today)
    assert ident.to_json() == today and ident.frontend == "onnx" and ident.shard is None
    # An older output that never wrote special_share is another campaign, as it was.
    older = CampaignIdentity.from_json({k: v for k, v in today.items() if k != "special_share"})
    assert older != ident and older.differs(ident) == ["special_share"]
    # A key a newer gbft wrote counts too, and is written back.
    newer = CampaignIdentity.from_json({**today, "quantise": "int8"})
    assert newer != ident and newer.differs(ident) == ["quantise"] and newer.to_json()["quantise"] == "int8"


@pytest.mark.parametrize("record, data, words", [
    (CampaignRecord, {"identity": {"seed": "3"}}, "identity: 'seed' must be a whole number"),
    (Summary, {"version": 2, "models": 1}, "summary.json: version 2 is newer than this gbft reads (1)"),
    (Summary, {"models": "many"}, "'models' must be a whole number"),
    (Summary, {"models": 1, "failures": [{"key": "../x"}]}, "failures[0]: 'key' must be a fingerprint id"),
    (Summary, {"models": 1, "by_status": {"DCP": "1"}}, "'by_status' must be an object of names to whole numbers"),
    (Summary, {"models": 1, "coverage": [1]}, "'coverage' must be an object"),
    (CampaignRecord, {"config": {"seed": 1}, "sessions": [{"elapsed_s": "long"}]}, "sessions[0]: 'elapsed_s' must be a number"),
    (CampaignRecord, {"config": {"seed": 1}, "sessions": {"a": 1}}, "'sessions' must be a list"),
    (BundleMeta, {"id": FP.id, "fingerprint": FP.to_json(), "engine": {}, "flaky": "no"}, "'flaky' must be true or false"),
])
def test_a_record_that_is_not_what_it_should_be_is_one_line_naming_the_field(record, data, words):
    with pytest.raises(RecordError) as e:
        record.from_json(data)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_corrupt_known_bugs_file_keeps_its_copy_and_names_the_field(tmp_path):
    path = tmp_path / "known_bugs.json"
    path.write_text(json.dumps({FP.id: {"fingerprint": FP.to_json(), "title": "t", "first_seen": "", "count": "2"}}))
    with pytest.raises(StateFileError, match="'count' must be a whole number") as e:
        read_known(path)
    assert (tmp_path / "known_bugs.json.corrupt").exists() and "restore the file" in str(e.value)


def _line(**kw) -> dict:
    fp = Fingerprint("compare", "DCF", "mismatch", "values", "Lrn", "in-degree 1, input ranks [4]")
    first = {"index": 7, "hash": "h", "seed": 3, "status": "DCF", "stage": "compare", "op": "Lrn", "node": "n0",
             "message": "m", "timings": {"infer": 0.01}, "n_nodes": 2, "n_blocks": 1, "platform": "x86_64",
             "symptom": "wrong-result", "fingerprint": fp.to_json(), "key": fp.id}
    other = {**first, "platform": "arm64-qemu", "signal": 11, "exit_code": None, "after": [5, 6],
             "symptom": "crash", "status": "IF"}
    base = {k: v for k, v in first.items() if k not in ("fingerprint", "key", "symptom")} | {"status": "DCP"}
    return {**first, "others": [other], "base": base, "verdict": "new", "case_dir": "cases/000007-h", **kw}


def test_a_case_line_reads_back_as_the_same_line_and_a_torn_one_is_dropped(tmp_path):
    from gbft_action.records.case import CaseRecord, read_cases

    d = _line()
    rec = CaseRecord.from_json(d)
    assert rec.to_json() == d and json.loads(rec.line()) == d  # gbft merge rewrites lines unchanged
    assert [r.platform for r in rec.failures()] == ["x86_64", "arm64-qemu"] and rec.base.key == ""
    assert rec.others[0].after == (5, 6) and rec.symptom is Symptom.WRONG and rec.verdict == "new"
    moved = rec.with_index(22)
    assert {moved.index, moved.others[0].index, moved.base.index} == {22}
    # A pass keeps the short form: no optional field is written that was not set.
    passed = CaseRecord.from_json({"index": 0, "hash": "h", "seed": 1, "status": "DCP"})
    assert set(passed.to_json()) == {"index", "hash", "seed", "status", "stage", "op", "node", "message", "timings",
                                     "n_nodes", "n_blocks", "platform"}
    (tmp_path / "cases.jsonl").write_text(rec.line() + passed.line() + rec.line()[:40])  # killed mid-line
    records, good, torn = read_cases(tmp_path / "cases.jsonl")
    assert records == [rec, passed] and good == len(rec.line() + passed.line()) and torn


@pytest.mark.parametrize("field, value, words", [
    ("status", "PASS", "'status' must be one of"), ("index", "7", "'index' must be a whole number"),
    ("after", ["x"], "'after' must be a list of whole numbers"), ("verdict", "maybe", "'verdict' must be one of"),
    ("symptom", "odd", "'symptom' must be one of"), ("timings", {"infer": "1"}, "'timings' must be an object of names"),
])
def test_a_case_line_that_is_not_a_case_names_its_line_and_field(tmp_path, field, value, words):
    from gbft_action.records.case import CaseRecord, read_cases

    good = CaseRecord.from_json(_line()).line()
    (tmp_path / "cases.jsonl").write_text(good + json.dumps(_line(**{field: value})) + "\n")
    with pytest.raises(RecordError, match=f"cases.jsonl: line 2: {words}"):
        read_cases(tmp_path / "cases.jsonl")


@pytest.mark.parametrize("words, reason, cut", [
    ("budget reached", StopReason.BUDGET, False), ("max-models reached", StopReason.MAX_MODELS, False),
    ("disk full: /out/cases.jsonl", StopReason.DISK_FULL, True),
    ("harness error: the generator: no solution", StopReason.HARNESS_ERROR, True),
    ("cancelled (SIGTERM)", StopReason.OUTSIDE, False), ("signal SIGINT", StopReason.OUTSIDE, False),
    ("disk fullness", StopReason.OUTSIDE, False)])
def test_a_stop_reads_back_from_the_words_the_files_keep(words, reason, cut):
    stop = Stop.of_text(words)
    assert stop is not None and stop.reason is reason and stop.cut_short is cut and str(stop) == words
    assert Stop.of_text("") is None
