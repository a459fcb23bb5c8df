"""Reporters racing on one repository: issue 37's table, measured.

    .venv/bin/python bench/report_race.py [--rounds 3]

Runs each race of issue 37 against the project's GitHub stand-in (tests/github_fake.py, real
HTTP, PyGithub), each reporter in its own thread with its own client and its own copy of an
output, and counts, after each race: duplicate open issues (open issues beyond one per root
cause and tracking class), duplicate comments (a run's comment on an issue more than once),
root causes lost (missing from their issue or tracking rows) and counts lowered (an issue's or
row's count below the sum over distinct outputs).  Every figure should be 0.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gbft_action.report.ledger import RUN  # noqa: E402
from gbft_action.report.markers import IssueState, TrackedRow  # noqa: E402
from gbft_action.report.trackers import marker_ids  # noqa: E402
from tests.github_fake import GitHubFake  # noqa: E402
from tests.test_report import REPO, TOKEN, bot_issues, cause, make_rc_out, variant  # noqa: E402
from tests.test_report_race import race  # noqa: E402

OPS = ["Lrn", "Exp", "Tanh", "Sigmoid", "Relu", "Abs", "Neg", "Floor", "Ceil", "Sqrt", "Log", "Sin", "Cos", "Tan"]


def key(i: int) -> str:
    return f"rc-{i:012x}"


def output(tmp: Path, name: str, filed: dict[int, int], tracked: dict[int, int]) -> Path:
    causes, fps = [], []
    for i, n in filed.items():
        f = variant(OPS[i % len(OPS)], i)
        causes.append(cause(key(i), "wrong-result", [f], count=n, title=f"{f.op} {i}: wrong results"))
        fps.append(f)
    for i, n in tracked.items():
        f = variant(OPS[i % len(OPS)], 100 + i)
        causes.append(cause(key(i), "precision", [f], count=n, title=f"{f.op} {i}: precision"))
        fps.append(f)
    return make_rc_out(tmp / name, causes, fps)


def tally(fake: GitHubFake, runs: list[tuple[dict[int, int], dict[int, int]]]) -> dict[str, int]:
    filed: Counter[str] = Counter()
    rows: Counter[str] = Counter()
    for f, t in runs:
        filed.update({key(i): n for i, n in f.items()})
        rows.update({key(i): n for i, n in t.items()})
    open_ = [i for i in bot_issues(fake) if i["state"] == "open"]
    by_key = Counter(marker_ids(i["body"])[0] for i in open_)
    out = {"duplicate issues": sum(n - 1 for n in by_key.values()), "duplicate comments": 0,
           "root causes lost": 0, "counts lowered": 0}
    for i in open_:
        runs_seen = [r for c in fake.comments(REPO, i["number"]) for r in RUN.findall(c["body"])]
        out["duplicate comments"] += len(runs_seen) - len(set(runs_seen))
    seen_rows: dict[str, int] = {}
    for i in open_:
        for r in TrackedRow.decode(i["body"]):
            seen_rows[r.key] = r.count
    for k, n in filed.items():
        issue = next((i for i in open_ if marker_ids(i["body"])[0] == k), None)
        if issue is None:
            out["root causes lost"] += 1
        elif IssueState.decode(issue["body"]).occurrences < n:
            out["counts lowered"] += 1
    for k, n in rows.items():
        if k not in seen_rows:
            out["root causes lost"] += 1
        elif seen_rows[k] < n:
            out["counts lowered"] += 1
    return out


def races(tmp: Path) -> dict[str, tuple[list[Path], list, list[Path]]]:
    """Each race: (outputs run before it, the distinct outputs' contents, outputs raced)."""
    one = ({i: 2 + i % 3 for i in range(6)}, {i: 1 + i % 2 for i in range(20, 24)})
    # Two campaigns sharing 12 root causes (8 filed, 4 tracked), each with some of its own.
    a = ({i: 1 + i % 4 for i in range(10)}, {i: 2 for i in range(20, 26)})
    b = ({i: 2 + i % 3 for i in range(2, 12)}, {i: 1 for i in range(22, 28)})
    earlier = ({i: 1 for i in range(0, 12, 2)}, {i: 3 for i in range(20, 28, 2)})
    return {
        "2 reporters, same output, empty repository": ([], [one], 2, False),
        "3 reporters, same output": ([], [one], 3, False),
        "the 2nd starts after the 1st's 5th write": ([], [one, a], 0, False),
        "two different campaigns sharing 12 root causes": ([], [a, b], 0, False),
        "same output, repository holding an earlier run's issues": ([earlier], [one], 2, True),
        "two campaigns, repository holding earlier issues": ([earlier], [a, b], 0, True),
    }


def run_one(name: str, spec, tmp: Path) -> dict[str, int]:
    before, contents, copies, _ = spec
    with GitHubFake(token=TOKEN) as fake:
        fake.add_repo(REPO)
        for j, c in enumerate(before):
            race(fake, [output(tmp, f"before{j}", *c)], max_new=50)
        if copies:
            first = output(tmp, "x", *contents[0])
            outs = [first] + [shutil.copytree(first, tmp / f"copy{k}") for k in range(1, copies)]
        else:
            outs = [output(tmp, f"o{k}", *c) for k, c in enumerate(contents)]
        if name.startswith("the 2nd starts"):
            staggered(fake, outs)
        else:
            race(fake, outs, at_create=True, max_new=50)
        fake.assert_no_violations()
        return tally(fake, [*before, *contents])


def staggered(fake: GitHubFake, outs: list[Path]) -> None:
    import threading

    from gbft_action.report.github import GitHubTracker
    from gbft_action.report.reporter import ReportConfig, report
    from tests.test_report import CTX

    fifth, writes, real = threading.Event(), [0], GitHubTracker._write

    def counted(self, fn):
        result = real(self, fn)
        writes[0] += 1
        if writes[0] == 5:
            fifth.set()
        return result

    def one(out: Path) -> None:
        report(ReportConfig(out, max_new_issues=50),
               GitHubTracker(repo=REPO, token=TOKEN, base_url=fake.base_url, min_interval=0.01), CTX)

    GitHubTracker._write = counted
    try:
        th = threading.Thread(target=one, args=(outs[0],))
        th.start()
        fifth.wait(60)
        one(outs[1])
        th.join(120)
    finally:
        GitHubTracker._write = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    names = list(races(Path(".")))
    print(f"| race ({args.rounds} rounds each) | duplicate issues | duplicate comments | root causes lost "
          "| counts lowered |\n|---|---|---|---|---|")
    for name in names:
        total: Counter[str] = Counter()
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as d:
                total.update(run_one(name, races(Path(d))[name], Path(d)))
        cols = ("duplicate issues", "duplicate comments", "root causes lost", "counts lowered")
        print(f"| {name} | " + " | ".join(str(total[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
