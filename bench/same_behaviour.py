"""Whether two gbft outputs of one campaign are the same campaign's results (issue 39: a refactor
keeps behaviour): the same models in the same order (cases.jsonl's hashes), the same status and
operator per case, and the same summary.json and campaign.json once what varies from run to run
is left out (timings, the output's own path, the run id, the tool's version).

    # outputs of the same command from the code before and after a change, e.g.
    git worktree add /tmp/before <commit>; git worktree add /tmp/after HEAD
    for src in before after; do for fe in tf onnx tf,onnx; do
      (cd /tmp/$src && PYTHONPATH=/tmp/$src python -m gbft_action.cli fuzz --frontend $fe --seed 11 \\
         --max-models 40 --budget 900 --jobs 1 --minimize-share 0 --out /tmp/cmp-$src/${fe/,/_} --quiet)
    done; done
    python bench/same_behaviour.py /tmp/cmp-before/tf /tmp/cmp-after/tf

Prints each difference and a last line "same" or "N differences"; exits 1 on a difference.
Run it on two outputs of the same code too: what differs there (MNN's own nondeterminism, an
engine log's time stamp) is the noise floor.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

VOLATILE = {"elapsed_s", "models_per_s", "run_id", "tool_version", "seconds", "timings", "bugs_dir", "out"}
STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")  # MNN's log lines start with the time of day


def _strip(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return STAMP.sub("", x) if isinstance(x, str) else x


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only {'after' if k not in a else 'before'}")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:80]} -> {str(b)[:80]}"]


def _cases(out: Path) -> list[tuple[int, str, str, str]]:
    rows = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines() if line.strip()]
    return [(r["index"], r["hash"], r["status"], r.get("op", "")) for r in rows]


def compare(before: Path, after: Path, ignore: set[str]) -> list[str]:
    found = []
    for name in ("summary.json", "campaign.json"):
        a, b = (_strip(json.loads((d / name).read_text())) for d in (before, after))
        found += [f"{name}{d}" for d in differences(a, b) if not any(d.startswith(i) for i in ignore)]
    ca, cb = _cases(before), _cases(after)
    found += [f"case {x[0]}: {x[1:]} -> {y[1:]}" for x, y in zip(ca, cb) if x != y]
    if len(ca) != len(cb):
        found.append(f"cases: {len(ca)} -> {len(cb)}")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--ignore", default="/config/version,/config/corpus",
                    help="comma list of JSON paths to leave out (default: the config's version field, which "
                         "issue 39 added, and its default corpus's path, which is inside each source tree)")
    a = ap.parse_args()
    found = compare(a.before, a.after, {i for i in a.ignore.split(",") if i})
    for line in found:
        print(line)
    print("same" if not found else f"{len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
