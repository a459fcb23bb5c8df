"""The verdict rule of e9720be (before issue 35) applied to an output's records, root causes and
verdicts.json, to compare the two rules on the same campaign:

    .venv/bin/python bench/old_verdict_rule.py OUT [OUT ...]

Prints, per output, how many root causes the old rule fails the check on (and their titles)
beside the new rule's count (bugs.triage.tally).  The old rule: a fingerprint the base build
showed anywhere, or with any case failing on both builds, is pre-existing; a root cause holding a
pre-existing fingerprint is pre-existing; only policy ``report`` (or ``unsupported``) fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gbft_action.policy import policy_for
from gbft_action.bugs.triage import tally
from gbft_action.records import Summary
from gbft_action.records.case import read_cases

ORDER = ("pre-existing", "new", "changed", "fixed", "flaky-new", "flaky-fixed", "unchecked")


def old_red(out: Path) -> list[str]:
    s = Summary.read(out)
    recs, _, _ = read_cases(out / "cases.jsonl")
    base_seen = {r.base.key for r in recs if r.base is not None and r.base.key}
    verdicts = {d["key"]: d for d in json.loads((out / "verdicts.json").read_text())}

    def old(key: str) -> str:
        d = verdicts.get(key)
        if d is None or d["verdict"] in ("fixed", "flaky-fixed"):
            return d["verdict"] if d else ""
        return "pre-existing" if key in base_seen or d["cases"].get("pre-existing") else d["verdict"]

    red = []
    for rc in s.root_causes or ():
        vs = [old(f) for f in rc.fingerprints if old(f)]
        verdict = min(vs, key=ORDER.index) if vs else ""
        if verdict == "new" and (policy_for(rc.symptom) == "report" or rc.symptom == "unsupported"):
            red.append(rc.title)
    return red


def main(argv: list[str]) -> None:
    for arg in argv:
        out = Path(arg)
        red = old_red(out)
        print(f"{out.name}: old rule {len(red)} new {red[:5]}; new rule {tally(Summary.read(out)).new} new")


if __name__ == "__main__":
    main(sys.argv[1:])
