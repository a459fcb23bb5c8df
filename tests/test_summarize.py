"""summary.json is built once, by campaign.summarize over records (no Campaign needed): what
fails the step is only what the policy reports, and a second call on the same inputs gives
the same summary (nothing is patched in place)."""

from __future__ import annotations

import copy
from pathlib import Path

from gbft_action.bugs.bundle import BugBook
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.bugs.triage import tally
from gbft_action.campaign import FuzzConfig, SummaryInputs, StopReason, summarize
from gbft_action.graph.ir import Graph, Node, TensorType

ENGINE = {"engine": "mnn", "version": "3.6.1", "machine": "x86_64"}


def _graph(op: str) -> Graph:
    t = TensorType((1, 2, 3, 3))
    return Graph({"in0": t}, [Node("n0", op, ["in0"], {}, t, op)], ["n0"], 1)


def _records(book: BugBook) -> list[dict]:
    """Three models: a wrong Tanh (twice), a reference disagreement on Rsqrt, a pass."""
    out = []
    for i, (op, symptom) in enumerate((("Tanh", "wrong-result"), ("Tanh", "wrong-result"),
                                       ("Rsqrt", "reference-disagreement"), ("", ""))):
        rec = {"index": i, "hash": f"h{i}", "status": "DCP" if not op else "DCF", "op": op, "node": "n0",
               "message": f"{op} differs", "platform": "x86_64", "stage": "compare"}
        if op:
            fp = Fingerprint("compare", "DCF", "mismatch", "values", op, "in-degree 1, input ranks [4]")
            rec.update(fingerprint=fp.to_json(), key=fp.id, symptom=symptom, case_dir=f"cases/{i:06d}")
            book.observe(rec, _graph(op), ENGINE, {"seed": 1})
        out.append(rec)
    return out


def test_summarize_is_one_build_over_records(tmp_path: Path):
    book = BugBook(tmp_path)
    records = _records(book)
    inp = SummaryInputs(records=records, sessions=[{"elapsed_s": 2.0, "models": 4, "stop_reason": StopReason.BUDGET}],
                        cfg=FuzzConfig(out=tmp_path, seed=1), engine=ENGINE, platform_info={"x86_64": {}}, book=book,
                        new_ids=sorted(book.seen_this_run), run_id="r", minimized={}, bugs_dir=str(tmp_path / "bugs"))
    before = copy.deepcopy(records)
    s = summarize(inp)
    assert summarize(inp) == s and records == before  # the same inputs, the same summary; records untouched
    assert s["models"] == 4 and s["unique_failures"] == 2 and s["stop_reason"] == "budget reached"
    by_op = {f["op"]: f for f in s["failures"]}
    assert by_op["Tanh"]["count"] == 2 and by_op["Tanh"]["symptom"] == "wrong-result"
    assert all(f["root_cause"] in {rc["key"] for rc in s["root_causes"]} for f in s["failures"])
    # The reference disagreement (policy summary) is never a new failure: only Tanh fails the step.
    assert s["new_failures"] == [by_op["Tanh"]["key"]]
    t = tally(s)
    assert (t.failures, t.fingerprints, t.new, t.new_fingerprints) == (2, 2, 1, 1)
    assert "triage" not in s and s["symptom_policy"]["reference-disagreement"] == "summary"
