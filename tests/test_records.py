"""The records a campaign writes (gbft_action.records): one reader and one writer each, a schema
version, version 0 (files written before records) read the same way, and a newer version or a
field of the wrong type refused in one line naming the file and the field."""

from __future__ import annotations

import json

import pytest

from gbft_action.records import BundleMeta, EngineInfo, Fingerprint, RecordError, Status, Summary, Symptom
from gbft_action.records.campaign import CampaignRecord, Session
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
    rec = CampaignRecord({"seed": 3}, {"seed": 3, "shard": "2/4"}, (Session(1.5, 10, "budget reached"),), "0.1.0")
    rec.write(tmp_path)
    assert CampaignRecord.read(tmp_path) == rec and (rec.shard, rec.seed, rec.frontend) == ("2/4", 3, "tf")
    known = {FP.id: KnownBug(FP, FP.title, "2026-11-26T00:00:00Z", count=2, platforms=("x86_64",))}
    write_known(tmp_path / "known_bugs.json", known)
    assert read_known(tmp_path / "known_bugs.json") == known
    s = Summary(4, stop_reason="budget reached", new_failures=(FP.id,))
    s.write(tmp_path)
    assert Summary.read(tmp_path) == s and Summary.from_json({"models": 4}).version == 1


@pytest.mark.parametrize("record, data, words", [
    (Summary, {"version": 2, "models": 1}, "summary.json: version 2 is newer than this gbft reads (1)"),
    (Summary, {"models": "many"}, "'models' must be a whole number"),
    (Summary, {"models": 1, "failures": [{"key": "../x"}]}, "failures[0]: 'key' must be a fingerprint id"),
    (Summary, {"models": 1, "by_status": {"DCP": "1"}}, "'by_status' must be an object of names to whole numbers"),
    (Summary, {"models": 1, "coverage": [1]}, "'coverage' must be an object"),
    (CampaignRecord, {"sessions": [{"elapsed_s": "long"}]}, "sessions[0]: 'elapsed_s' must be a number"),
    (CampaignRecord, {"sessions": {"a": 1}}, "'sessions' must be a list"),
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
