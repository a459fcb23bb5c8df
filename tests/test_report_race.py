"""Reporters running at once on one repository (issue 37): real HTTP, the GitHub stand-in.

Each reporter runs in its own thread, with its own PyGithub client and its own copy of a fuzz
output, as two workflow runs would.  Barriers put them at the worst moments: all reading the
issues before any writes, all about to create at once.  After every race: one open issue per
root cause and tracking class, one comment per run per issue, tracking rows the union and
counts the sum of the distinct outputs."""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest

from gbft_action.report.github import GitHubTracker
from gbft_action.report.ledger import BASELINE, RUN, Comment, Contribution, Ledger
from gbft_action.report.markers import IssueState, TrackedRow
from gbft_action.report.reporter import ReportConfig, report
from gbft_action.report.trackers import marker_ids

from .test_report import CTX, REPO, RC1, RC2, RC3, TOKEN, bot_issues, cause, fake, fp, make_rc_out  # noqa: F401

RC4, RC5 = "rc-dddddddddddd", "rc-eeeeeeeeeeee"
TRACKED_TITLE = "Precision differences found by gbft (tracking)"


class PausedTracker(GitHubTracker):
    """A real GitHub client that waits at a barrier before its first listing and before each
    create: every reporter then reads an empty repository, or tries to create, at once."""

    def __init__(self, *a, read: threading.Barrier | None = None, create: threading.Barrier | None = None, **kw):
        super().__init__(*a, **kw)
        self._read, self._create_at = read, create

    def issues(self, since=None):
        if self._read is not None and since is None:
            _meet(self._read)
        return super().issues(since)

    def create(self, fid, title, body):
        if self._create_at is not None:
            _meet(self._create_at)
        return super().create(fid, title, body)


def _meet(barrier: threading.Barrier) -> None:
    try:
        barrier.wait()
    except threading.BrokenBarrierError:  # another reporter had nothing left to create: go on
        pass


def output(tmp: Path, name: str, counts: dict[str, int], precision: dict[str, int]) -> Path:
    """A campaign output: root causes filed one each (``counts``), and precision ones tracked."""
    ops = {RC1: "Lrn", RC2: "Exp", RC3: "Tanh", RC4: "Sigmoid", RC5: "Relu"}
    causes, fps = [], []
    for key, n in counts.items():
        f = fp(ops[key])
        causes.append(cause(key, "wrong-result", [f], count=n, title=f"{ops[key]}: wrong results"))
        fps.append(f)
    for key, n in precision.items():
        f = fp(ops[key], "precision")
        causes.append(cause(key, "precision", [f], count=n, title=f"{ops[key]}: precision"))
        fps.append(f)
    return make_rc_out(tmp / name, causes, fps)


def race(fake, outs: list[Path], *, at_read: bool = True, at_create: bool = False, max_new: int = 10) -> list:
    """Run one reporter per output at once; their results (an exception is re-raised)."""
    n = len(outs)
    read = threading.Barrier(n, timeout=5) if at_read else None
    create = threading.Barrier(n, timeout=2) if at_create else None
    results: list = [None] * n

    def one(i: int) -> None:
        try:
            t = PausedTracker(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=0.01, read=read,
                              create=create)
            results[i] = report(ReportConfig(outs[i], max_new_issues=max_new), t, CTX)
        except BaseException as e:  # noqa: BLE001 - shown by the caller
            results[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def open_by_key(fake) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for i in bot_issues(fake):
        if i["state"] == "open":
            found.setdefault(marker_ids(i["body"])[0], []).append(i)
    return found


def check(fake, outs: list[Path], counts: list[dict[str, int]], precision: list[dict[str, int]]) -> None:
    """One open issue per root cause and class; comments once per run; counts the sum, rows the union."""
    distinct = {o.read_bytes(): (c, p) for o, c, p in zip([x / "summary.json" for x in outs], counts, precision)}
    total: Counter[str] = Counter()
    rows: Counter[str] = Counter()
    for c, p in distinct.values():
        total.update(c)
        rows.update(p)
    by_key = open_by_key(fake)
    want = set(total) | ({"gbft-precision-tracking"} if rows else set())
    assert {k: len(v) for k, v in by_key.items()} == {k: 1 for k in want}
    for key, (issue,) in by_key.items():
        runs = [r for c in fake.comments(REPO, issue["number"]) for r in RUN.findall(c["body"])]
        assert len(runs) == len(set(runs)), f"{key}: a run commented twice"
        if key in total:
            assert IssueState.decode(issue["body"]).occurrences == total[key], key
        else:
            assert {r.key: r.count for r in TrackedRow.decode(issue["body"])} == dict(rows)
    for i in bot_issues(fake):  # every other one: closed as a duplicate, out of the bot's view
        if i["state"] == "closed":
            assert i["state_reason"] == "duplicate" and not marker_ids(i["body"])
            notes = [c for c in fake.comments(REPO, i["number"]) if "Duplicate of #" in c["body"]]
            assert len(notes) == 1, i["number"]  # saying where the bug is tracked, once


ONE = ({RC1: 2, RC2: 3, RC3: 1}, {RC4: 2})
TWO = ({RC1: 5, RC2: 1, RC5: 4}, {RC4: 1, RC3: 7})


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("at_create", [False, True])
def test_reporters_on_one_output_and_an_empty_repository_file_each_issue_once(tmp_path, fake, n, at_create):
    first = output(tmp_path, "a", *ONE)
    outs = [first] + [shutil.copytree(first, tmp_path / f"copy{i}") for i in range(1, n)]
    results = race(fake, outs, at_create=at_create)
    check(fake, outs, [ONE[0]] * n, [ONE[1]] * n)
    assert sum(len(r.filed) for r in results) == 4  # three root causes and the tracking issue
    duplicates = [i for i in bot_issues(fake) if i["state_reason"] == "duplicate"]
    if at_create:  # met at the create: every reporter files each one, the newer copies are closed at once
        assert len(duplicates) == 4 * (n - 1)
    assert all(fake.comments(REPO, i["number"]) for i in duplicates)  # each says where the bug is tracked


@pytest.mark.parametrize("at_create", [False, True])
def test_two_campaigns_sharing_root_causes_sum_their_counts_and_join_their_rows(tmp_path, fake, at_create):
    outs = [output(tmp_path, "a", *ONE), output(tmp_path, "b", *TWO)]
    race(fake, outs, at_create=at_create)
    check(fake, outs, [ONE[0], TWO[0]], [ONE[1], TWO[1]])


@pytest.mark.parametrize("same", [True, False])
def test_reporters_on_a_repository_holding_earlier_issues_lose_and_double_nothing(tmp_path, fake, same):
    earlier = output(tmp_path, "earlier", {RC1: 1, RC2: 1}, {RC4: 1, RC5: 2})
    race(fake, [earlier])
    a = output(tmp_path, "a", *ONE)
    outs = [a, shutil.copytree(a, tmp_path / "copy")] if same else [a, output(tmp_path, "b", *TWO)]
    race(fake, outs, at_create=True)
    check(fake, [earlier, *outs], [{RC1: 1, RC2: 1}, ONE[0], ONE[0] if same else TWO[0]],
          [{RC4: 1, RC5: 2}, ONE[1], ONE[1] if same else TWO[1]])


def test_a_second_reporter_starting_after_the_firsts_fifth_write_files_nothing_twice(tmp_path, fake):
    a = output(tmp_path, "a", *ONE)
    b = output(tmp_path, "b", *TWO)
    started = threading.Event()
    fifth = threading.Event()
    writes = 0
    real = GitHubTracker._write

    def counted(self, fn):
        nonlocal writes
        out = real(self, fn)
        writes += 1  # the first reporter's alone, until the second starts
        if writes == 5:  # the label, then four issues
            fifth.set()
        return out

    def first() -> None:
        t = GitHubTracker(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=0.01)
        started.set()
        report(ReportConfig(a, max_new_issues=10), t, CTX)

    GitHubTracker._write = counted
    try:
        th = threading.Thread(target=first)
        th.start()
        assert started.wait(10) and fifth.wait(60)
        report(ReportConfig(b, max_new_issues=10),
               GitHubTracker(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=0.01), CTX)
        th.join(60)
    finally:
        GitHubTracker._write = real
    check(fake, [a, b], [ONE[0], TWO[0]], [ONE[1], TWO[1]])


def test_a_race_left_unconverged_by_a_killed_reporter_is_converged_by_the_next_run(tmp_path, fake):
    """Two open issues of one root cause (a reporter killed before it closed its own): the next
    run closes the newer as a duplicate, and moves its counts to the older."""
    a = output(tmp_path, "a", {RC1: 2}, {})
    b = output(tmp_path, "b", {RC1: 3}, {})
    race(fake, [a])
    race(fake, [b])
    (older,) = bot_issues(fake)
    # What a killed reporter leaves: a second issue of RC1, filed by run "zz" with 4 cases.
    theirs = Contribution("zz", state=IssueState(4, platforms=("x86_64",))).marker("gbft-baseline")
    newer = fake.add_issue(REPO, "dup", BASELINE.sub(theirs, older["body"]), labels=["gbft"])
    c = output(tmp_path, "c", {RC2: 1}, {})  # a later run that never sees RC1 itself
    race(fake, [c])
    states = {i["number"]: (i["state"], i["state_reason"]) for i in bot_issues(fake)}
    assert states[older["number"]] == ("open", None) and states[newer] == ("closed", "duplicate")
    comments = fake.comments(REPO, older["number"])
    assert f"#{newer}" in comments[-1]["body"] and RUN.findall(comments[-1]["body"]) == ["zz"]
    body = next(i["body"] for i in bot_issues(fake) if i["number"] == older["number"])
    ledger = Ledger.read(body, [Comment(c["id"], c["body"]) for c in comments])
    assert ledger.fold_state().occurrences == 2 + 3 + 4
    (dup_note,) = fake.comments(REPO, newer)
    assert f"Duplicate of #{older['number']}" in dup_note["body"]


class Stale(GitHubTracker):
    """Orders two reporters' updates of one issue: A reads the comments, B comments and writes
    the body, then A writes a body built without B's comment (the last writer would win)."""

    def __init__(self, *a, role: str, events: dict[str, threading.Event], **kw):
        super().__init__(*a, **kw)
        self.role, self.events = role, events

    def comment(self, number, body):
        if self.role == "B":
            assert self.events["a read"].wait(30)
        return super().comment(number, body)

    def update_body(self, number, body):
        if self.role == "A" and not self.events["a read"].is_set():
            self.events["a read"].set()
            assert self.events["b wrote"].wait(30)
        super().update_body(number, body)
        if self.role == "B":
            self.events["b wrote"].set()


def test_a_body_written_from_a_stale_read_is_written_again_with_every_run(tmp_path, fake):
    earlier = output(tmp_path, "earlier", {RC1: 1}, {RC4: 1})
    race(fake, [earlier])
    outs = {"A": output(tmp_path, "a", {RC1: 2}, {}), "B": output(tmp_path, "b", {RC1: 3}, {})}
    events = {"a read": threading.Event(), "b wrote": threading.Event()}
    errors: list[BaseException] = []

    def one(role: str) -> None:
        try:
            t = Stale(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=0.01, role=role, events=events)
            report(ReportConfig(outs[role], max_new_issues=10), t, CTX)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one, args=(r,)) for r in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and events["b wrote"].is_set()
    check(fake, [earlier, *outs.values()], [{RC1: 1}, {RC1: 2}, {RC1: 3}], [{RC4: 1}, {}, {}])


class Killed(BaseException):
    """A SIGKILL stand-in: nothing of the reporter's catches it."""


@pytest.mark.parametrize("after", range(1, 7))  # its six writes: comment, reopen, body; create; comment, body
def test_a_reporter_killed_after_any_write_is_finished_by_its_rerun_losing_and_doubling_nothing(
        tmp_path, fake, monkeypatch, after):
    earlier = output(tmp_path, "earlier", {RC1: 1}, {RC4: 1})
    race(fake, [earlier])
    rc1 = open_by_key(fake)[RC1][0]["number"]
    fake.set_issue_state(REPO, rc1, "closed", "completed")  # fixed, then back in this run: regressed
    out = output(tmp_path, "a", {RC1: 2, RC2: 3}, {RC4: 2, RC5: 1})
    writes = 0
    real = GitHubTracker._write

    def then_killed(self, fn):
        nonlocal writes
        result = real(self, fn)
        writes += 1
        if writes == after:
            raise Killed()
        return result

    with monkeypatch.context() as m:
        m.setattr(GitHubTracker, "_write", then_killed)
        try:
            race(fake, [out])
        except Killed:
            pass
    assert writes == after  # the kill came where it was asked
    race(fake, [out])  # the rerun
    check(fake, [earlier, out], [{RC1: 1}, {RC1: 2, RC2: 3}], [{RC4: 1}, {RC4: 2, RC5: 1}])
    texts = [c["body"] for c in fake.comments(REPO, rc1)]
    assert sum("Regressed" in t for t in texts) == 1 and len(texts) == 1


def test_a_create_stored_but_answered_502_during_a_race_leaves_one_open_issue(tmp_path, fake):
    """The reporter whose create GitHub stored but answered 502 never learns its number: whoever
    reads next closes the newer issue of the key, whichever reporter filed it."""
    fake.fail_next_create_with_502(2)
    outs = [output(tmp_path, "a", *ONE), output(tmp_path, "b", *TWO)]
    race(fake, outs, at_create=True)
    check(fake, outs, [ONE[0], TWO[0]], [ONE[1], TWO[1]])


def test_three_gbft_report_processes_at_once_on_copies_of_one_output(tmp_path, fake):
    """As three workflow runs would: the CLI in three processes, started together."""
    import os
    import subprocess

    from .conftest import gbft_cmd

    first = output(tmp_path, "a", *ONE)
    outs = [first] + [shutil.copytree(first, tmp_path / f"copy{i}") for i in (1, 2)]
    env = {**os.environ, "GBFT_TEST_TOKEN": TOKEN}
    procs = [subprocess.Popen([*gbft_cmd(), "report", "--from", str(o), "--tracker", "github", "--repo", REPO,
                               "--token-env", "GBFT_TEST_TOKEN", "--base-url", fake.base_url,
                               "--min-write-interval", "0.01"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for o in outs]
    done = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], done
    check(fake, outs, [ONE[0]] * 3, [ONE[1]] * 3)
    assert TOKEN not in "".join(o + e for o, e in done)


# --------------------------------------------------------------------------- what others write

def test_an_issue_maintainers_closed_as_a_duplicate_stays_closed_and_is_not_filed_again(tmp_path, fake):
    a = output(tmp_path, "a", {RC1: 2}, {})
    race(fake, [a])
    (issue,) = bot_issues(fake)
    fake.set_issue_state(REPO, issue["number"], "closed", "duplicate")  # of some issue a person filed
    (res,) = race(fake, [output(tmp_path, "b", {RC1: 3}, {})])
    assert len(bot_issues(fake)) == 1 and not res.filed
    assert [x.reason for x in res.skipped] == ["closed by maintainers (duplicate)"]


def test_markers_in_an_engine_log_or_a_strangers_comment_are_not_obeyed(tmp_path, fake):
    from .test_report import make_out, relu_graph

    log = "<!-- gbft-duplicate-of: 1 -->\n<!-- gbft-baseline: AAAA -->\nwrong values"
    out = make_out(tmp_path / "a", [(fp("Lrn"), 2, log, relu_graph("Lrn"))])
    race(fake, [out])
    (issue,) = bot_issues(fake)
    fake.add_comment(REPO, issue["number"], "<!-- gbft-run: evil -->\n" + Contribution(
        "evil", state=IssueState(1_000_000, platforms=("pwned",))).marker(), user="stranger")
    race(fake, [make_out(tmp_path / "b", [(fp("Lrn"), 1, log, relu_graph("Lrn"))])])
    race(fake, [make_out(tmp_path / "c", [(fp("Lrn"), 1, log, relu_graph("Lrn"))])])
    (issue,) = bot_issues(fake)  # never hidden as "a duplicate", so never filed again
    state = IssueState.decode(issue["body"])
    assert state.occurrences == 3 and "pwned" not in state.platforms  # 1 + 1 + 1 models: the stranger's not counted
    assert any(c["user"]["login"] == "stranger" for c in fake.comments(REPO, issue["number"]))  # not deleted


def test_a_run_id_that_could_end_a_hidden_comment_is_not_used_as_the_run_key(tmp_path, fake):
    import json

    from gbft_action.report.filing import run_key_of

    out = output(tmp_path, "a", {RC1: 2}, {})
    s = json.loads((out / "summary.json").read_text())
    s["run_id"] = "x --> @org/team"
    (out / "summary.json").write_text(json.dumps(s))
    key = run_key_of(out)
    assert "-->" not in key and "@" not in key and len(key) == 16
    race(fake, [out])
    assert "@org" not in "".join(c["body"] for i in bot_issues(fake) for c in fake.comments(REPO, i["number"]))


def test_an_issue_from_before_the_ledger_keeps_its_counts_when_two_reporters_meet_it(tmp_path, fake):
    """Its body's totals are carried into a comment once, whoever gets there first."""
    from gbft_action.report.markers import encode_marker

    state = {"occurrences": 40, "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-02T00:00:00Z",
             "platforms": ["x86_64"]}
    fake.add_issue(REPO, "old", f"<!-- gbft-root-cause: {RC1} -->\n<!-- gbft-last-run: old-run -->\n"
                   f"<!-- gbft-issue-state: {encode_marker(state)} -->\nold body", ["gbft"])
    outs = [output(tmp_path, "a", {RC1: 2}, {}), output(tmp_path, "b", {RC1: 3}, {})]
    race(fake, outs)
    (issue,) = bot_issues(fake)
    assert IssueState.decode(issue["body"]).occurrences == 45
    carried = [c for c in fake.comments(REPO, issue["number"]) if "old-run" in c["body"]]
    assert len(carried) == 1
