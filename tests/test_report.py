"""The bug-reporting bot against a GitHub REST server over real HTTP (PyGithub)."""

from __future__ import annotations

import json
import logging
import re
import random
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from gbft_action.bugs.bundle import BugBook, Found
from gbft_action.bugs.fingerprint import Fingerprint
from gbft_action.graph.ir import Graph, Node, TensorType
from gbft_action.report.github import GitHubTracker
from gbft_action.report.render import RunContext
from gbft_action.policy import DEFAULT_POLICY
from gbft_action.records import BundleMeta, RecordError
from gbft_action.bugs.rootcause import same_class
from gbft_action.report.reporter import (PRECISION_TRACKING, ReportConfig, ReportInputError, load_run, report,
                                         tracking_key)
from gbft_action.report.sanitize import BODY_LIMIT, ZWSP, code_block, neutralise, truncate_body
from gbft_action.report.choose import make_tracker
from gbft_action.report.trackers import FilesTracker, marker_ids
from gbft_action.records.case import CaseRecord
from gbft_action.records.bundle import EngineInfo

from .conftest import ROOT, case_meta, gbft_cmd
from .github_fake import GitHubFake

TOKEN = "ghp_" + "S3cr3tT0kenValue0123456789abcdefABCD"
REPO = "alibaba/MNN"
CTX = RunContext(commit="0123456789abcdef", pr_link="https://github.com/alibaba/MNN/pull/7",
                 run_link="https://github.com/alibaba/MNN/actions/runs/99")


def relu_graph(op: str = "Relu", seed: int = 1) -> Graph:
    t = TensorType((1, 2, 2, 1))
    g = Graph({"in0": t}, [Node("n0", op, ["in0"], {} if op != "Lrn" else
                                {"alpha": 0.5, "beta": 0.5, "bias": 1.0, "depth_radius": 1}, t, op, "block", 0)],
              ["n0"], seed)
    return g


def make_out(tmp: Path, bugs: list[tuple[Fingerprint, int, str, Graph]]) -> Path:
    """A fuzz output directory with one bundle per (fingerprint, count, log, graph)."""
    out = tmp / "out"
    (out / "cases").mkdir(parents=True, exist_ok=True)
    book = BugBook(out)
    failures = []
    for i, (fp, count, log, g) in enumerate(bugs):
        case = out / "cases" / f"{i:06d}"
        case.mkdir(exist_ok=True)
        (case / "engine.log").write_text(log)
        rec = CaseRecord.from_json({
            "index": i, "hash": g.structure_hash(), "status": fp.status, "stage": fp.stage, "op": fp.op, "node": "n0",
            "message": log.splitlines()[0] if log else "", "fingerprint": fp.to_json(), "key": fp.id})
        book.observe(rec, f"cases/{i:06d}", g, Found.of_engine(EngineInfo("mnn", "3.6.1", "x86_64"), 1))
        failures.append({"key": fp.id, "count": count, "title": fp.title, "message": rec.message,
                         "status": fp.status, "op": fp.op})
    book.save()
    summary = {"run_id": out.parent.name, "models": 100, "elapsed_s": 10.0, "models_per_s": 10.0, "by_status": {"DCP": 90, "DCF": 10},
               "failures": failures, "unique_failures": len(failures), "new_failures": [f["key"] for f in failures],
               "engine": {"name": "mnn", "version": "3.6.1", "machine": "x86_64"}, "stop_reason": "budget reached"}
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def fp(op: str, kind: str = "mismatch") -> Fingerprint:
    return Fingerprint("compare", "DCF", kind, "values", op, "in-degree 1, input ranks [4]")


@pytest.fixture
def fake():
    with GitHubFake(token=TOKEN) as f:
        f.add_repo(REPO)
        yield f
        f.assert_no_violations()
        f.assert_token_not_leaked()


def tracker(fake: GitHubFake, **kw) -> GitHubTracker:
    return GitHubTracker(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=kw.pop("min_interval", 0.05),
                         **kw)


def run(out: Path, fake: GitHubFake, **kw) -> object:
    cfg = ReportConfig(out, max_new_issues=kw.pop("max_new", 5), **kw)
    return report(cfg, tracker(fake), CTX)


def bot_issues(fake: GitHubFake) -> list[dict]:
    return [i for i in fake.issues(REPO) if any(lb["name"] == "gbft" for lb in i["labels"])]


# --------------------------------------------------------------------------- filing

def test_new_bug_files_one_issue_with_marker_and_label(tmp_path, fake):
    out = make_out(tmp_path, [(fp("Lrn"), 3, "wrong values", relu_graph("Lrn"))])
    res = run(out, fake)
    issues = bot_issues(fake)
    assert len(issues) == 1 and len(res.filed) == 1
    body = issues[0]["body"]
    assert marker_ids(body) == [fp("Lrn").id]
    assert issues[0]["title"] == fp("Lrn").title
    assert "```mermaid" in body and "<details><summary>repro.py" in body and "0123456789ab" in body
    assert "https://github.com/alibaba/MNN/pull/7" in body and "| Occurrences | 1" in body
    assert json.loads((out / "report.json").read_text())["filed"][0]["issue"] == issues[0]["number"]


def test_known_open_issue_gets_one_comment_and_its_body_updated(tmp_path, fake):
    out = make_out(tmp_path, [(fp("Lrn"), 3, "wrong values", relu_graph("Lrn"))])
    run(out, fake)
    out2 = make_out(tmp_path / "second", [(fp("Lrn"), 1, "wrong values again", relu_graph("Lrn"))])
    res = run(out2, fake)
    (issue,) = bot_issues(fake)
    assert len(res.commented) == 1 and not res.filed
    assert len(fake.comments(REPO, issue["number"])) == 1
    assert "| Occurrences | 2" in issue["body"]  # 1 before + 1 in this run, updated in place
    (comment,) = fake.comments(REPO, issue["number"])
    assert "1 more model in this run (2 in all)" in comment["body"]  # the issue's total, not the run's
    run(out2, fake)  # the same output again: nothing changes
    assert len(fake.comments(REPO, issue["number"])) == 1


def test_closed_issue_is_reopened_as_regressed(tmp_path, fake):
    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    run(out, fake)
    (issue,) = bot_issues(fake)
    fake.set_issue_state(REPO, issue["number"], "closed", "completed")
    res = run(make_out(tmp_path / "b", [(fp("Lrn"), 1, "x", relu_graph("Lrn"))]), fake)
    (issue,) = bot_issues(fake)
    assert issue["state"] == "open" and len(res.reopened) == 1
    assert "Regressed" in fake.comments(REPO, issue["number"])[0]["body"]


def test_search_lag_does_not_cause_a_duplicate(tmp_path, fake):
    fake.search_lag = 3600.0  # search never sees the new issue; listing the label does
    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    run(out, fake)
    run(make_out(tmp_path / "b", [(fp("Lrn"), 1, "x", relu_graph("Lrn"))]), fake)
    assert len(bot_issues(fake)) == 1


def test_rate_limit_is_waited_out_then_succeeds(tmp_path, fake):
    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    t = tracker(fake)
    fake.rate_limit_next(n=1, retry_after=1, status=403)
    t0 = time.monotonic()
    report(ReportConfig(out), t, CTX)
    assert time.monotonic() - t0 >= 1.0
    assert len(bot_issues(fake)) == 1
    fake.rate_limit_reset_next(n=1, reset_in=1, status=429)
    run(make_out(tmp_path / "b", [(fp("Exp"), 1, "x", relu_graph("Exp"))]), fake)
    assert len(bot_issues(fake)) == 2


def test_502_on_create_leaves_exactly_one_issue(tmp_path, fake):
    fake.fail_next_create_with_502()
    res = run(make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))]), fake)
    assert len(bot_issues(fake)) == 1 and len(res.filed) == 1


def test_quota_is_respected_and_the_rest_listed(tmp_path, fake):
    bugs = [(fp(op), 1, "x", relu_graph(op)) for op in ("Lrn", "Exp", "Tanh", "Relu", "Sigmoid")]
    out = make_out(tmp_path, bugs)
    res = run(out, fake, max_new=2)
    assert len(bot_issues(fake)) == 2
    assert [x.reason for x in res.skipped] == ["not filed: quota"] * 3
    assert "Not filed (quota)" in (out / "summary.md").read_text()


def test_writes_are_at_least_a_second_apart_by_default(tmp_path, fake):
    out = make_out(tmp_path, [(fp(op), 1, "x", relu_graph(op)) for op in ("Lrn", "Exp")])
    report(ReportConfig(out), tracker(fake, min_interval=1.0), CTX)
    times = [w.time for w in fake.writes()]
    assert len(times) >= 2 and all(b - a >= 0.99 for a, b in zip(times, times[1:]))


def test_huge_log_still_files_a_valid_issue(tmp_path, fake):
    log = "".join(random.Random(0).choice("abc `*_<>\n") for _ in range(200_000))
    out = make_out(tmp_path, [(fp("Lrn"), 1, log, relu_graph("Lrn"))])
    res = run(out, fake)
    (issue,) = bot_issues(fake)
    assert len(res.filed) == 1 and len(issue["body"]) <= BODY_LIMIT
    assert marker_ids(issue["body"]) == [fp("Lrn").id]


def outside_code(body: str) -> str:
    """The body without its fenced code blocks (CommonMark's rule: a fence closes only at a line
    of at least as many backticks and nothing else)."""
    kept, fence = [], ""
    for line in body.splitlines():
        m = re.match(r" {0,3}(`{3,})(.*)$", line)
        if fence:
            if m and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = ""
        elif m:
            fence = m.group(1)
        else:
            kept.append(line)
    return "\n".join(kept)


def test_mentions_closing_keywords_and_html_are_neutralised_outside_code(tmp_path, fake):
    log = "@octocat fixes #12 <img src=x onerror=alert(1)>\n::set-output name=x::y\n```\nbreak out"
    out = make_out(tmp_path, [(fp("Lrn"), 1, log, relu_graph("Lrn"))])
    run(out, fake)
    body = bot_issues(fake)[0]["body"]
    outside = outside_code(body)
    assert "@octocat" not in outside and "fixes #12" not in outside and "#12" not in outside
    assert "<img" not in outside and "&lt;img" in outside  # raw HTML only inside code blocks, where it is inert
    assert f"@{ZWSP}octocat" in outside  # the message, as prose
    assert log in body and "````\n" + log in body  # the log verbatim, in a fence its ``` cannot close
    assert "::set-output" not in neutralise(log)


def test_code_block_cannot_be_closed_by_its_content_and_keeps_it_verbatim():
    text = "a ``` b ```` c\n@octocat fixes #1"
    block = code_block(text)
    fence = block.splitlines()[0]
    assert len(fence) == 5 and block.endswith(fence) and text in block


def test_truncation_closes_an_open_fence_and_says_so():
    body = "head\n```\n" + "x" * 100_000
    cut = truncate_body(body)
    assert len(cut) <= BODY_LIMIT and "cut to GitHub's limit" in cut
    assert cut.count("```") % 2 == 0


def test_truncation_inside_a_long_fence_is_not_fooled_by_a_shorter_one():
    body = "head\n````\n```\n" + "x" * 100_000  # a ``` line inside a ```` block is text
    cut = truncate_body(body)
    assert cut.rstrip().endswith("characters; the full text is in the run's artifacts.")
    assert outside_code(cut).count("x" * 100) == 0  # the cut block was closed with ````
    assert "\n````\n\n> **Note:**" in cut


def test_token_never_printed(tmp_path, fake, caplog, capsys, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("GBFT_TEST_TOKEN", TOKEN)
    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    from gbft_action.cli import main

    fake.rate_limit_next(n=1, retry_after=0)
    assert main(["report", "--from", str(out), "--tracker", "github", "--repo", REPO, "--token-env",
                 "GBFT_TEST_TOKEN", "--base-url", fake.base_url, "--min-write-interval", "0"]) == 0
    printed = capsys.readouterr()
    everything = printed.out + printed.err + caplog.text + "".join(p.read_text() for p in out.rglob("*.json"))
    assert TOKEN not in everything and "filed" in printed.out
    assert TOKEN not in repr(tracker(fake))


# --------------------------------------------------------------------------- files tracker and the CLI

def test_files_tracker_dry_run_then_nothing_new(tmp_path):
    out = make_out(tmp_path, [(fp("Lrn"), 2, "@x", relu_graph("Lrn")), (fp("Exp"), 1, "y", relu_graph("Exp"))])
    t = make_tracker("files", out=out)
    assert isinstance(t, FilesTracker)
    res = report(ReportConfig(out), t, CTX)
    files = sorted((out / "issues").glob("*.md"))
    assert len(res.filed) == 2 and len(files) == 2
    text = files[0].read_text()
    assert text.startswith("# DCF") and "```mermaid" in text and "<details>" in text
    res2 = report(ReportConfig(out), make_tracker("files", out=out), CTX)
    assert not res2.filed and not res2.commented and len(res2.skipped) == 2
    assert sorted((out / "issues").glob("*.md")) == files


def test_unknown_tracker_is_refused():
    with pytest.raises(ValueError, match="allowed: github, files, none"):
        make_tracker("jira")


# --------------------------------------------------------------------------- fix detection (real MNN)

@pytest.mark.slow
def test_check_fixes_closes_fixed_and_keeps_failing(tmp_path, fake, monkeypatch):
    # An issue whose model passes on this MNN (fixed) and one whose model still fails (Lrn on 1x1x1x1).
    scratch = tmp_path / "scratch"  # where the replay lanes make their work folders
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    fixed, failing = fp("Relu"), fp("Lrn")
    corpus_out = make_out(tmp_path / "corpus", [(fixed, 1, "x", relu_graph("Relu")),
                                                (failing, 1, "x", relu_graph("Lrn"))])
    # The Lrn bundle's fingerprint must be the one MNN really gives: ask the engine.
    from gbft_action.rerun.replay import replay
    from gbft_action.cli import _replay_lane

    meta = BundleMeta.read(corpus_out / "bugs" / failing.id)
    lane = _replay_lane(meta)
    real = replay(lane, relu_graph("Lrn"), failing).fingerprint
    lane.stop()
    assert real is not None and real.op == "Lrn"
    meta.with_(fingerprint=real).write(corpus_out / "bugs" / failing.id)
    run(corpus_out, fake)
    assert len(bot_issues(fake)) == 2
    empty = make_out(tmp_path / "now", [])
    res = report(ReportConfig(empty, check_fixes=True, corpus=corpus_out / "bugs"), tracker(fake), CTX,
                 lane_factory=_replay_lane)
    states = {marker_ids(i["body"])[0]: i["state"] for i in bot_issues(fake)}
    assert states == {fixed.id: "closed", failing.id: "open"}
    assert [x.fingerprint for x in res.closed] == [fixed.id]
    assert [x.fingerprint for x in res.still_failing] == [failing.id]
    closed = next(i for i in bot_issues(fake) if i["state"] == "closed")
    assert "Fixed" in fake.comments(REPO, closed["number"])[-1]["body"]
    assert not list(scratch.iterdir()), "a stopped replay lane left its work folder behind"


@pytest.mark.slow
def test_report_cli_on_a_real_fuzz_output(tmp_path):
    out = tmp_path / "D"
    subprocess.run([*gbft_cmd(), "fuzz", "--budget", "25", "--seed", "21", "--out", str(out), "--quiet"],
                   cwd=ROOT, check=True, capture_output=True)
    r = subprocess.run([*gbft_cmd(), "report", "--from", str(out), "--tracker", "files", "--max-new-issues", "100"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    issues = sorted((out / "issues").glob("[0-9][0-9][0-9][0-9].md"))
    rcs = {rc["key"]: rc for rc in s.get("root_causes", [])}  # none in an output from before root causes
    # One tracking issue per class listed (precision, NaN/Inf, unsupported operators summarised;
    # wrong results no operator was shown to give alone), one issue per other reported root cause.
    tracking = {rc["symptom"] for rc in rcs.values() if rc["symptom"] in ("precision", "nan-inf", "unsupported")
                and rc["policy"] == "summary"}
    unisolated = [rc for rc in rcs.values() if rc["policy"] == "report" and same_class(rc["symptom"]) == "wrong-result"
                  and not rc["isolated"] and rc.get("settled", True)]
    tracking |= {"unisolated"} if unisolated else set()
    filed = (sum(rc["policy"] == "report" and rc.get("settled", True) for rc in rcs.values()) - len(unisolated)
             + len(tracking) if rcs else s["unique_failures"])
    assert len(issues) == filed > 0
    for p in issues:
        text = p.read_text()
        ids = marker_ids(text)
        if ids in ([tracking_key(x)] for x in tracking):
            continue
        assert "```mermaid\nflowchart TD" in text and "<details><summary>repro.py" in text
        assert set(ids[1:]) == set(rcs[ids[0]]["fingerprints"]) if rcs else len(ids) == 1
        # An issue of its own names an operator shown wrong alone, or a proven pattern.
        assert not rcs or rcs[ids[0]]["symptom"] != "wrong-result" or rcs[ids[0]]["isolated"], ids[0]
    r2 = subprocess.run([*gbft_cmd(), "report", "--from", str(out), "--tracker", "files"], cwd=ROOT,
                        capture_output=True, text=True)
    assert "filed " not in r2.stdout and len(sorted((out / "issues").glob("[0-9][0-9][0-9][0-9].md"))) == len(issues)


HOSTILE = "@octocat <script>alert(1)</script> fixes #1 ``` `` " + "A" * 200_000


def test_every_meta_field_of_a_hostile_bundle_is_neutralised_where_it_lands(tmp_path):
    """A bundle is a pull request's artifact: every field its author controls must land inert."""
    from gbft_action.report.render import Renderer

    out = make_out(tmp_path, [(fp("Lrn"), 1, "log line", relu_graph("Lrn"))])
    bundle = next((out / "bugs").iterdir())
    meta = json.loads((bundle / "meta.json").read_text())
    # Every text field: the record takes any string, and each place that shows one sanitises it.
    for key in ("message", "op", "node", "stage", "first_seen", "last_seen", "title", "tool_version"):
        meta[key] = HOSTILE
    meta["engine"] = {"engine": "mnn", "version": HOSTILE, "machine": HOSTILE}
    meta["platforms"] = [HOSTILE, HOSTILE]
    meta["fingerprint"] = {**meta["fingerprint"], "op": HOSTILE, "structure": HOSTILE, "stage": HOSTILE,
                           "code": HOSTILE, "title": HOSTILE, "id": meta["fingerprint"]["id"]}
    title, body = Renderer().issue(bundle, BundleMeta.from_json(meta), CTX)
    outside = outside_code(body)
    assert len(body) <= BODY_LIMIT
    for bad in ("@octocat", "<script", "fixes #1"):
        assert bad not in outside, bad
    assert "@" + ZWSP + "octocat" in outside and "&lt;script&gt;" in outside
    assert "\n" not in title and "@octocat" not in title and "&lt;" not in title and "<script>" in title
    repro = body.split("```python\n", 1)[1].split("\n```", 1)[0] if "```python\n" in body else ""
    compile(repro, "repro.py", "exec")  # still a Python script: the fields reached it quoted, or not at all
    assert "alert(1)" not in repro.split('"""', 2)[2]  # outside its docstring, no field text at all
    # Every other field is taken only with its exact type: the reader names the field it refuses.
    for key, bad in (("status", HOSTILE), ("occurrences", HOSTILE), ("minimized_size", "3"), ("occurrences", -1),
                     ("minimized", "yes"), ("id", "../../etc"), ("platforms", "x86_64")):
        with pytest.raises(RecordError, match=f"'{key}' must be"):
            BundleMeta.from_json({**json.loads((bundle / "meta.json").read_text()), key: bad})


# --------------------------------------------------------------------------- a hostile or flaky GitHub

def stored(fake: GitHubFake) -> list:
    """What GitHub holds of the bot's work: issues (title, body, state) and their comments."""
    return [(i["number"], i["title"], i["body"], i["state"], [c["body"] for c in fake.comments(REPO, i["number"])])
            for i in fake.issues(REPO)]


def existing_issue(fake: GitHubFake, f: Fingerprint, **kw) -> int:
    return fake.add_issue(REPO, f.title, f"<!-- gbft-fingerprint: {f.id} -->\nold body", ["gbft"], **kw)


@pytest.mark.parametrize("trouble, status", [("locked", 403), ("deleted", 410)])
def test_a_refused_issue_is_recorded_and_the_rest_is_filed(tmp_path, fake, trouble, status):
    a, b, c = fp("Lrn"), fp("Relu"), fp("Tanh")
    number = existing_issue(fake, a)
    getattr(fake, {"locked": "lock_issue", "deleted": "delete_issue"}[trouble])(REPO, number)
    out = make_out(tmp_path, [(f, 1, "x", relu_graph(f.op)) for f in (a, b, c)])
    res = run(out, fake)
    assert res.partial and [(x.fingerprint, x.issue) for x in res.failed] == [(a.id, number)]
    assert str(status) in res.failed[0].reason and len(res.filed) == 2
    rep = json.loads((out / "report.json").read_text())
    assert rep["failed"][0]["reason"] == res.failed[0].reason and len(rep["filed"]) == 2
    assert "GitHub refused 1 write" in (out / "summary.md").read_text()
    before = stored(fake)
    run(out, fake)  # the same output again: nothing new is stored
    assert stored(fake) == before


def test_a_comment_stored_then_answered_502_is_not_posted_twice(tmp_path, fake):
    a = fp("Lrn")
    number = existing_issue(fake, a)
    out = make_out(tmp_path, [(a, 1, "x", relu_graph("Lrn"))])
    fake.fail_next_comment_with_502()
    res = run(out, fake)
    assert res.partial and "502" in res.failed[0].reason
    assert len(fake.comments(REPO, number)) == 1  # GitHub stored it all the same
    res = run(out, fake)  # the rerun finds the run's marker in that comment and only updates the body
    assert not res.partial and len(fake.comments(REPO, number)) == 1 and res.commented
    before = stored(fake)
    run(out, fake)
    assert stored(fake) == before


def test_an_issue_closed_as_not_planned_stays_closed(tmp_path, fake):
    a = fp("Lrn")
    number = existing_issue(fake, a, state="closed", state_reason="not_planned")
    out = make_out(tmp_path, [(a, 1, "x", relu_graph("Lrn"))])
    res = run(out, fake)
    issue = fake.issue(REPO, number)
    assert issue["state"] == "closed" and issue["state_reason"] == "not_planned" and not fake.comments(REPO, number)
    assert res.skipped[0].reason == "closed by maintainers (not planned)" and not res.reopened
    assert f"Closed by maintainers as not planned (not reopened): #{number}" in (out / "summary.md").read_text()


def test_cli_report_exit_code_says_partial(tmp_path, fake, monkeypatch):
    from gbft_action.cli import EXIT_PARTIAL, main

    a = fp("Lrn")
    fake.lock_issue(REPO, existing_issue(fake, a))
    out = make_out(tmp_path, [(a, 1, "x", relu_graph("Lrn"))])
    monkeypatch.setenv("GBFT_TEST_TOKEN", TOKEN)
    code = main(["report", "--from", str(out), "--tracker", "github", "--repo", REPO, "--token-env", "GBFT_TEST_TOKEN",
                 "--base-url", fake.base_url, "--min-write-interval", "0.05"])
    assert code == EXIT_PARTIAL


def _report_cli(out: Path, base_url: str, token: str, capsys, monkeypatch) -> tuple[int, str]:
    from gbft_action.cli import main

    monkeypatch.setenv("GBFT_TEST_TOKEN", token)
    code = main(["report", "--from", str(out), "--tracker", "github", "--repo", REPO, "--token-env", "GBFT_TEST_TOKEN",
                 "--base-url", base_url, "--min-write-interval", "0.05"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("damage, words", [
    (lambda out: (out / "summary.json").write_text((out / "summary.json").read_text()[:50]), "not valid JSON"),
    (lambda out: (out / "summary.json").unlink(), "no such file"),
    (lambda out: next((out / "bugs").iterdir()).joinpath("graph.json").unlink(), "graph.json: missing"),
    (lambda out: next((out / "bugs").iterdir()).joinpath("meta.json").write_text("{"), "meta.json: not valid JSON"),
])
def test_bad_output_is_one_line_naming_the_file(tmp_path, fake, capsys, monkeypatch, damage, words):
    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    damage(out)
    code, err = _report_cli(out, fake.base_url, TOKEN, capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err and str(out) in err, err
    assert not fake.writes()


def test_unreachable_api_and_bad_credentials_are_one_line(tmp_path, fake, capsys, monkeypatch):
    import socket

    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, err = _report_cli(out, f"http://127.0.0.1:{port}", TOKEN, capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot reach the GitHub API" in err, err
    code, err = _report_cli(out, fake.base_url, "ghp_wrong" + "x" * 30, capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "401" in err and "token" in err, err
    assert TOKEN not in err


# --------------------------------------------------------------------------- root causes

def variant(op: str, n: int) -> Fingerprint:
    """Another fingerprint of the same operator (another structure around it)."""
    return Fingerprint("compare", "DCF", "mismatch", "values", op, f"in-degree {n}, input ranks [4]")


def cause(key: str, symptom: str, fps: list[Fingerprint], count: int = 0, canonical: Fingerprint | None = None,
          **kw) -> dict:
    op = fps[0].op
    return {"key": key, "symptom": symptom, "policy": kw.pop("policy", DEFAULT_POLICY[symptom]),
            "title": kw.pop("title", f"{op}: wrong results"), "ops": [op], "detail": "depth_radius",
            "fingerprints": [f.id for f in fps], "canonical": (canonical or fps[0]).id, "count": count or len(fps),
            "platforms": ["x86_64", "arm64-qemu"], "verdict": "", "minimized": True, "isolated": True, **kw}


def make_rc_out(tmp: Path, causes: list[dict], fps: list[Fingerprint]) -> Path:
    """A fuzz output whose summary.json merges the fingerprints' failures into ``causes``."""
    out = make_out(tmp, [(f, 2, "wrong values", relu_graph(f.op)) for f in fps])
    s = json.loads((out / "summary.json").read_text())
    of = {fid: c for c in causes for fid in c["fingerprints"]}
    for f in s["failures"]:
        f["root_cause"], f["symptom"] = of[f["key"]]["key"], of[f["key"]]["symptom"]
    s["root_causes"], s["symptom_policy"] = causes, dict(DEFAULT_POLICY)
    (out / "summary.json").write_text(json.dumps(s))
    return out


RC1, RC2, RC3 = "rc-0123456789ab", "rc-bbbbbbbbbbbb", "rc-cccccccccccc"


def test_two_fingerprints_of_one_root_cause_file_one_issue_carrying_both(tmp_path, fake):
    a, b = fp("Lrn"), variant("Lrn", 2)
    out = make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a, b], count=5)], [a, b])
    res = run(out, fake)
    (issue,) = bot_issues(fake)
    assert [x.root_cause for x in res.filed] == [RC1]
    assert issue["title"] == "[wrong result] Lrn: wrong results"
    body = issue["body"]
    assert marker_ids(body) == [RC1, a.id, b.id]
    assert "| Symptom | wrong result |" in body and "| Occurrences | 5 (" in body
    assert "<details><summary>Fingerprints merged into this root cause (2)</summary>" in body
    assert f"| `{a.id}` (shown) |" in body and f"| `{b.id}` |" in body
    assert "| Platforms | arm64-qemu, x86_64 |" in body and "<details><summary>repro.py" in body
    md = (out / "summary.md").read_text()
    assert "| root cause | symptom | operators | fingerprints | cases | minimised size | issue |" in md
    assert f"| Lrn: wrong results | wrong result | Lrn | 2 | 5 | 1 | [#{issue['number']}](" in md
    assert f"| `{RC1}` | new | {a.id}, {b.id} | x86_64, arm64-qemu | `bugs/{a.id}/` |" in md


def test_a_later_run_with_another_canonical_fingerprint_updates_the_same_issue(tmp_path, fake):
    a, b, c = fp("Lrn"), variant("Lrn", 2), variant("Lrn", 3)
    run(make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a, b], count=5)], [a, b]), fake)
    out2 = make_rc_out(tmp_path / "b", [cause(RC1, "wrong-result", [c, b], count=3, canonical=c)], [b, c])
    res = run(out2, fake)
    (issue,) = bot_issues(fake)
    assert not res.filed and [x.root_cause for x in res.commented] == [RC1]
    assert marker_ids(issue["body"])[0] == RC1 and {a.id, b.id, c.id} <= set(marker_ids(issue["body"]))
    assert "| Occurrences | 8 (" in issue["body"] and f"| `{c.id}` (shown) |" in issue["body"]
    assert len(fake.comments(REPO, issue["number"])) == 1
    before = stored(fake)
    run(out2, fake)  # the same output again: nothing changes
    assert stored(fake) == before


def test_an_issue_filed_under_a_fingerprint_is_found_and_becomes_the_root_causes(tmp_path, fake):
    a, b = fp("Lrn"), variant("Lrn", 2)
    number = existing_issue(fake, b)  # filed by an older run, one issue per fingerprint
    out = make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a, b])], [a, b])
    res = run(out, fake)
    (issue,) = bot_issues(fake)
    assert issue["number"] == number and not res.filed and len(res.commented) == 1
    assert marker_ids(issue["body"]) == [RC1, a.id, b.id]
    assert len(fake.comments(REPO, number)) == 1
    run(make_rc_out(tmp_path / "b", [cause(RC1, "wrong-result", [a])], [a]), fake)  # now found by its key
    assert len(bot_issues(fake)) == 1 and len(fake.comments(REPO, number)) == 2


def test_another_live_root_causes_issue_is_not_taken_over_through_a_shared_fingerprint(tmp_path, fake):
    a, b, c = fp("Lrn"), variant("Lrn", 2), fp("Exp")
    run(make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a, b])], [a, b]), fake)
    # b moved to a new root cause; RC1 is still alive: RC2 gets its own issue.
    out = make_rc_out(tmp_path / "b", [cause(RC1, "wrong-result", [a]), cause(RC2, "crash", [b, c])], [a, b, c])
    res = run(out, fake)
    assert [x.root_cause for x in res.filed] == [RC2] and [x.root_cause for x in res.commented] == [RC1]
    assert len(bot_issues(fake)) == 2


def test_precision_root_causes_share_one_tracking_issue_updated_each_run(tmp_path, fake):
    a, b, c = fp("Lrn"), fp("Exp"), fp("Tanh")
    causes = [cause(RC1, "precision", [a], count=3, title="Lrn: precision"),
              cause(RC2, "precision", [b], count=1, title="Exp: precision"), cause(RC3, "wrong-result", [c])]
    out = make_rc_out(tmp_path, causes, [a, b, c])
    res = run(out, fake, max_new=1)  # the tracking issue is not a root cause: outside the quota
    issues = bot_issues(fake)
    assert len(issues) == 2 and len(res.filed) == 2 and res.bugs_filed == 1 and not res.skipped
    (track,) = [i for i in issues if i["title"] == "Precision differences found by gbft (tracking)"]
    assert marker_ids(track["body"]) == [PRECISION_TRACKING]
    assert "| Lrn: precision | Lrn | arm64-qemu, x86_64 | 3 |" in track["body"]
    assert "| Exp: precision | Exp |" in track["body"]
    md = (out / "summary.md").read_text()
    assert f"| Lrn: precision | precision | Lrn | 1 | 3 | 1 | [#{track['number']}](" in md
    # The next run: one of them again; the other stays listed, the counts add up.
    out2 = make_rc_out(tmp_path / "b", [cause(RC1, "precision", [a], count=4, title="Lrn: precision")], [a])
    res2 = run(out2, fake)
    issues = bot_issues(fake)
    track = next(i for i in issues if i["number"] == track["number"])
    assert len(issues) == 2 and not res2.filed and [x.root_cause for x in res2.commented] == [PRECISION_TRACKING]
    assert "| Lrn: precision | Lrn | arm64-qemu, x86_64 | 7 |" in track["body"]
    assert "| Exp: precision | Exp |" in track["body"]  # not seen in this run: kept
    (comment,) = fake.comments(REPO, track["number"])
    assert "1 precision root cause" in comment["body"] and "Lrn: precision" in comment["body"]
    before = stored(fake)
    run(out2, fake)
    assert stored(fake) == before


def test_a_wrong_result_no_operator_gives_alone_is_listed_in_a_tracking_issue_not_filed(tmp_path, fake):
    a, b, c = fp("Lrn"), fp("Concat"), fp("Tanh")
    causes = [cause(RC1, "wrong-result", [a], title="Lrn: wrong results"),
              cause(RC2, "wrong-result", [b], title="Concat: wrong results (not yet shown wrong alone)", isolated=False),
              # Cut short: not settled, so neither filed nor tracked (a later run settles it).
              cause(RC3, "wrong-result", [c], title="Tanh: wrong results (not yet shown wrong alone)", isolated=False,
                    settled=False)]
    out = make_rc_out(tmp_path, causes, [a, b, c])
    res = run(out, fake, max_new=1)  # the tracking issue is outside the quota
    issues = bot_issues(fake)
    assert sorted(i["title"] for i in issues) == [
        "Wrong results not yet pinned on one operator, found by gbft (tracking)", "[wrong result] Lrn: wrong results"]
    assert res.bugs_filed == 1 and [x.root_cause for x in res.skipped] == [RC3]
    track = next(i for i in issues if i["title"].startswith("Wrong results not yet pinned"))
    assert marker_ids(track["body"]) == ["gbft-unisolated-tracking"]
    assert "| Concat: wrong results (not yet shown wrong alone) | Concat |" in track["body"]
    assert "no operator is wrong when run alone" in track["body"] and "symptom-policy" not in track["body"]
    md = (out / "summary.md").read_text()
    assert f"| Concat: wrong results (not yet shown wrong alone) | wrong result | Concat | 1 | 1 | 1 | [#{track['number']}](" in md


def test_ignored_and_summary_only_root_causes_are_never_filed(tmp_path, fake):
    a, b, c = fp("Lrn"), fp("Sigmoid"), fp("Exp")
    causes = [cause(RC1, "wrong-result", [a]), cause(RC2, "tie", [b], title="Sigmoid: ties"),
              cause(RC3, "heap-damage", [c], title="heap damage after Exp")]
    out = make_rc_out(tmp_path, causes, [a, b, c])
    res = run(out, fake)
    (issue,) = bot_issues(fake)
    assert marker_ids(issue["body"])[0] == RC1 and [x.root_cause for x in res.filed] == [RC1]
    md = (out / "summary.md").read_text()
    assert "1 ignored: tie" in md and "Sigmoid: ties" not in md and RC2 not in md
    assert "| heap damage after Exp | heap damage | Exp | 1 | 1 | 1 | summary only |" in md


def test_the_quota_counts_root_causes(tmp_path, fake):
    ops = ("Lrn", "Exp", "Tanh")
    fps = [f for op in ops for f in (fp(op), variant(op, 2))]
    causes = [cause(k, "wrong-result", fps[2 * i: 2 * i + 2]) for i, k in enumerate((RC1, RC2, RC3))]
    out = make_rc_out(tmp_path, causes, fps)
    res = run(out, fake, max_new=2)
    assert len(bot_issues(fake)) == 2 and [x.root_cause for x in res.filed] == [RC1, RC2]
    assert [(x.root_cause, x.reason) for x in res.skipped] == [(RC3, "not filed: quota")]
    assert f"Not filed (quota): {RC3}" in (out / "summary.md").read_text()


def test_an_unsettled_root_cause_is_listed_not_filed(tmp_path, fake):
    """A diagnosis cut short names an operator nobody confirmed: the summary lists it, says why,
    and no issue is filed; a settled one beside it is filed as usual."""
    a, b = fp("Lrn"), fp("Sigmoid")
    causes = [cause(RC1, "wrong-result", [a]), cause(RC2, "wrong-result", [b], isolated=False, settled=False)]
    out = make_rc_out(tmp_path, causes, [a, b])
    res = run(out, fake, max_new=5)
    assert [x.root_cause for x in res.filed] == [RC1] and res.bugs_filed == 1
    assert [(x.root_cause, x.reason) for x in res.skipped] == [(RC2, "not filed: diagnosis cut short")]
    assert len(bot_issues(fake)) == 1
    row = next(line for line in (out / "summary.md").read_text().splitlines() if "Sigmoid: wrong results" in line)
    assert "not filed: diagnosis cut short" in row
    # Filed in an earlier run (settled then): seen again unsettled, its issue is still updated.
    out2 = make_rc_out(tmp_path / "b", [cause(RC3, "wrong-result", [b])], [b])
    (issue_b,) = [x.issue for x in run(out2, fake, max_new=5).filed]
    out3 = make_rc_out(tmp_path / "c", [cause(RC3, "wrong-result", [b], isolated=False, settled=False)], [b])
    res3 = run(out3, fake, max_new=5)
    assert not res3.filed and [x.issue for x in res3.commented] == [issue_b]


def test_a_hostile_root_cause_lands_inert(tmp_path, fake):
    a = fp("Lrn")
    out = make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a], title="@octocat fixes #1 <script>x</script>",
                                       ops=["<img src=x>"], detail="@team")], [a])
    run(out, fake)
    (issue,) = bot_issues(fake)
    outside = outside_code(issue["body"])
    for bad in ("@octocat", "@team", "<script", "<img", "fixes #1"):
        assert bad not in outside, bad
    assert issue["title"].startswith("[wrong result] @" + ZWSP + "octocat")
    assert "<script" not in (out / "summary.md").read_text()


def test_an_output_without_root_causes_still_files_one_issue_per_fingerprint(tmp_path, fake):
    a, b = fp("Lrn"), variant("Lrn", 2)
    out = make_out(tmp_path, [(a, 1, "x", relu_graph("Lrn")), (b, 1, "x", relu_graph("Lrn"))])
    res = run(out, fake)
    assert sorted(marker_ids(i["body"])[0] for i in bot_issues(fake)) == sorted([a.id, b.id]) and len(res.filed) == 2
    md = (out / "summary.md").read_text()
    assert "| bug | operator | cases | minimised size | issue |" in md and "Fingerprints and bundles (2)" in md


@pytest.mark.parametrize("damage, words", [
    (lambda s: s.update(root_causes={"a": 1}), "'root_causes' must be a list"),
    (lambda s: s["root_causes"][0].update(key="rc-../../x"), "root_causes[0]: 'key' must be rc-"),
    (lambda s: s["root_causes"][0].update(fingerprints=["../../etc"]), "'fingerprints' must be a non-empty list"),
    (lambda s: s["root_causes"][0].update(canonical="abcdefabcdef"), "'canonical' must be one of its fingerprints"),
    (lambda s: s["root_causes"][0].update(policy="loud"), "'policy' must be one of report, summary, ignore"),
    (lambda s: s["root_causes"][0].update(count=-1), "'count' must be a whole number"),
    (lambda s: s["root_causes"][0].update(ops="Lrn"), "'ops' must be a list of strings"),
    (lambda s: s["root_causes"].append(dict(s["root_causes"][0])), f"root_causes[1]: {RC1} appears twice"),
])
def test_malformed_root_causes_are_one_line_naming_the_file(tmp_path, fake, capsys, monkeypatch, damage, words):
    a = fp("Lrn")
    out = make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a])], [a])
    s = json.loads((out / "summary.json").read_text())
    damage(s)
    (out / "summary.json").write_text(json.dumps(s))
    with pytest.raises(ReportInputError) as e:
        load_run(out)
    assert words in str(e.value) and str(out / "summary.json") in str(e.value) and "\n" not in str(e.value)
    code, err = _report_cli(out, fake.base_url, TOKEN, capsys, monkeypatch)
    assert code == 2 and err.strip() == f"error: {e.value}" and not fake.writes()


def test_check_fixes_replays_a_root_causes_canonical_bundle(tmp_path, fake, monkeypatch):
    """The replay itself is faked (the real one is test_check_fixes_closes_fixed_and_keeps_failing):
    this checks which bundle a root cause's issue replays, and that the tracking issue is left alone."""
    import gbft_action.rerun.replay as replay_mod

    a, b, c = fp("Lrn"), variant("Lrn", 2), fp("Exp")
    corpus = make_rc_out(tmp_path, [cause(RC1, "wrong-result", [a, b], canonical=b),
                                    cause(RC2, "precision", [c])], [a, b, c])
    run(corpus, fake)
    replayed = []

    class Lane:
        eng = type("Eng", (), {"hello": {"engine": "mnn", "version": "3.6.1", "machine": "x86_64"}})

        def stop(self) -> None:
            pass

    def fake_replay(lane, graph, target, **kw):
        replayed.append(target.id)
        return type("V", (), {"outcome": "passes"})()

    monkeypatch.setattr(replay_mod, "replay", fake_replay)
    res = report(ReportConfig(make_out(tmp_path / "now", []), check_fixes=True, corpus=corpus / "bugs"),
                 tracker(fake), CTX, lane_factory=lambda meta: Lane())
    assert replayed == [b.id] and [(x.root_cause, x.fingerprint) for x in res.closed] == [(RC1, b.id)]
    states = {marker_ids(i["body"])[0]: i["state"] for i in bot_issues(fake)}
    assert states == {RC1: "closed", PRECISION_TRACKING: "open"}


def test_an_issue_keeps_its_counts_in_a_marker_not_in_its_prose():
    from gbft_action.report.ledger import Contribution, Ledger, legacy_of
    from gbft_action.report.markers import IssueState, encode_marker

    meta = case_meta(fp("Lrn")).with_(occurrences=3, first_seen="2026-11-26T01:00:00Z", platforms=("arm64",))
    mine = Contribution("run-b", state=IssueState.of(meta))

    def total(body: str) -> IssueState:
        return Ledger(legacy_of(body)).with_(mine).fold_state()  # what carrying the body's counts gives

    state = {"occurrences": 5, "first_seen": "2026-11-01T00:00:00Z", "last_seen": "2026-11-02T00:00:00Z",
             "platforms": ["x86_64"]}
    # A maintainer rewrote the table: the prose says 99, the marker still says 5.
    body = f"<!-- gbft-issue-state: {encode_marker(state)} -->\n| Occurrences | 99 (first seen 1999-01-01, ...) |\n"
    m = total(body)
    assert (m.occurrences, m.first_seen, m.platforms) == (8, "2026-11-01T00:00:00Z", ("arm64", "x86_64"))
    # An issue filed before the marker (version 0) is read from its rows once.
    old = "| Platforms | x86_64 |\n| Occurrences | 4 (first seen 2026-10-01T00:00:00Z, last seen ...) |\n"
    assert total(old).occurrences == 7
    # A marker edited into something else is not trusted: nothing is added to it.
    bad = "<!-- gbft-issue-state: " + encode_marker({**state, "occurrences": "5"}) + " -->"
    assert IssueState.decode(bad) is None and total(bad).occurrences == 3
    # Nor one nested to exhaust the JSON parser (a RecursionError once ended the report step).
    import base64
    deep = "<!-- gbft-issue-state: " + base64.b64encode(b"[" * 3000).decode() + " -->"
    assert IssueState.decode(deep) is None and total(deep).occurrences == 3


def test_a_filed_issue_carries_its_state_marker(tmp_path, fake):
    from gbft_action.report.markers import IssueState

    out = make_out(tmp_path, [(fp("Lrn"), 3, "wrong values", relu_graph("Lrn"))])
    run(out, fake)
    out2 = make_out(tmp_path / "second", [(fp("Lrn"), 4, "wrong values again", relu_graph("Lrn"))])
    run(out2, fake)
    (issue,) = bot_issues(fake)
    assert IssueState.decode(issue["body"]).occurrences == 2  # 1 + 1, counted in the marker


# --------------------------------------------------------------------------- the reporter's own faults

class _Killed(BaseException):
    """A SIGKILL stand-in: nothing of the reporter's catches it."""


def test_a_run_killed_part_way_through_a_regression_is_finished_as_regressed_by_its_rerun(tmp_path, fake, monkeypatch):
    from gbft_action.report.github import GitHubTracker

    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])
    run(out, fake)
    (issue,) = bot_issues(fake)
    fake.set_issue_state(REPO, issue["number"], "closed", "completed")
    again = make_out(tmp_path / "b", [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])

    # Killed right after the update's first write, whichever it is (the comment or the reopening).
    def then_killed(real):
        def write(self, *args):
            real(self, *args)
            raise _Killed()
        return write
    with monkeypatch.context() as m:
        for name in ("comment", "reopen"):
            m.setattr(GitHubTracker, name, then_killed(getattr(GitHubTracker, name)))
        with pytest.raises(_Killed):
            run(again, fake)
    res = run(again, fake)  # the rerun of the same output
    (issue,) = bot_issues(fake)
    comments = fake.comments(REPO, issue["number"])
    assert issue["state"] == "open" and len(res.reopened) == 1 and not res.commented
    assert len(comments) == 1 and "Regressed" in comments[0]["body"]


@pytest.mark.parametrize("fail_at", [0, 1, 2, 3, 4, 5])
def test_a_full_disk_at_any_write_is_one_line_exit_3_and_the_rerun_loses_and_doubles_nothing(
        tmp_path, capsys, monkeypatch, fail_at):
    """The files tracker and the report's own files: the n-th write fails with ENOSPC."""
    import errno

    from gbft_action.cli import main
    from gbft_action.report import local

    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn")), (fp("Elu"), 1, "y", relu_graph("Elu"))])
    real, calls = local.write_atomic, []

    def full(path, text):
        calls.append(path)
        if len(calls) > fail_at:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, text)
    with monkeypatch.context() as m:
        m.setattr(local, "write_atomic", full)
        code = main(["report", "--from", str(out), "--tracker", "files"])
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1 and "No space left on device" in err, err
    assert not list((out / "issues").glob(".*.tmp"))  # nothing half-written left behind
    assert main(["report", "--from", str(out), "--tracker", "files"]) == 0
    index = json.loads((out / "issues" / "index.json").read_text())
    assert len(index) == 2 and all(v["state"] == "open" for v in index.values())
    assert all((out / "issues" / f"{int(n):04d}.md").read_text().startswith("# ") for n in index)
    assert json.loads((out / "report.json").read_text())


def test_a_read_only_output_is_one_line_exit_3(tmp_path, capsys, monkeypatch):
    import errno

    from gbft_action.cli import main

    out = make_out(tmp_path, [(fp("Lrn"), 1, "x", relu_graph("Lrn"))])

    def read_only(self, *a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(self))
    monkeypatch.setattr(Path, "mkdir", read_only)
    assert main(["report", "--from", str(out), "--tracker", "files"]) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Read-only file system" in err and "issues" in err


def test_a_missing_output_found_at_inference_is_labelled_by_that_stage_not_as_a_conversion_error(tmp_path, fake):
    """The converter dropped an output: the model converts, and inference fails.  The label
    names the stage that failed; the class (and the key, so the issue it has) stays."""
    missing = Fingerprint("infer", "IF", "missing-output", "", "", "in-degree 1, input ranks [4]")
    refused = Fingerprint("convert", "MCF", "error", "Convert error", "Lrn", "in-degree 1, input ranks [4]")
    out = make_rc_out(tmp_path, [cause(RC1, "conversion-error", [missing], title="a model output is missing"),
                                 cause(RC2, "conversion-error", [refused], title="Lrn: conversion error")],
                      [missing, refused])
    run(out, fake)
    titles = sorted(i["title"] for i in bot_issues(fake))
    assert titles == ["[conversion error] Lrn: conversion error",
                      "[inference error (output missing)] a model output is missing"]
    body = next(i["body"] for i in bot_issues(fake) if "missing" in i["title"])
    assert "| Symptom | inference error (output missing) |" in body
    assert "| inference error (output missing) |" in (out / "summary.md").read_text()
