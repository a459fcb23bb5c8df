"""How much of a campaign's budget is blind: the share of models whose only failures are root
causes an earlier model already showed, minute by minute (issue 24 item 5).

    .venv/bin/python bench/known_share.py --out DIR [--json]

A model that fails only on known root causes cannot show an unknown defect (in a pull-request
run it fails on both builds, hiding any regression inside it).  Read from a ``gbft fuzz``
output: cases.jsonl (each model's fingerprints, every platform's) and summary.json (each
fingerprint's root cause).  A root cause is known from the first model that showed it on.
Records carry no clock, so a model's minute is its index times the campaign's mean time per
model (the rate is close to even over a run: the loop keeps a window of models in flight).

Printed per minute: models, failing models, models failing only on known root causes, and
that share; then the share over everything after the first two minutes (the issue's figure).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def blind_by_minute(records: list[dict[str, Any]], root_of: dict[str, str], elapsed: float) -> list[dict[str, Any]]:
    per_model = elapsed / max(1, len(records))
    known: set[str] = set()
    rows: dict[int, dict[str, Any]] = {}
    for rec in sorted(records, key=lambda r: r["index"]):
        causes = {root_of.get(r["key"], r["key"]) for r in (rec, *rec.get("others", []), *_base(rec)) if "key" in r}
        row = rows.setdefault(int(rec["index"] * per_model // 60), {"models": 0, "failing": 0, "blind": 0})
        row["models"] += 1
        if causes:
            row["failing"] += 1
            row["blind"] += causes <= known
            known |= causes
    return [{"minute": m, **r, "share": round(r["blind"] / r["models"], 3)} for m, r in sorted(rows.items())]


def _base(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [rec["base"]] if "base" in rec else []


def after(rows: list[dict[str, Any]], minute: int) -> float:
    late = [r for r in rows if r["minute"] >= minute]
    return round(sum(r["blind"] for r in late) / max(1, sum(r["models"] for r in late)), 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="a gbft fuzz output folder")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    summary = json.loads((a.out / "summary.json").read_text())
    records = [json.loads(line) for line in (a.out / "cases.jsonl").read_text().splitlines() if line.strip()]
    root_of = {f["key"]: f.get("root_cause", f["key"]) for f in summary.get("failures", [])}
    rows = blind_by_minute(records, root_of, float(summary["elapsed_s"]))
    figures = {"rows": rows, "after_two_minutes": after(rows, 2),
               "failing": round(sum(r["failing"] for r in rows) / max(1, len(records)), 3)}
    if a.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"{'minute':>6} {'models':>7} {'failing':>8} {'only known':>11} {'share':>6}")
    for r in rows:
        print(f"{r['minute']:>6} {r['models']:>7} {r['failing']:>8} {r['blind']:>11} {r['share']:>6.1%}")
    print(f"failing models: {figures['failing']:.1%}; failing only on known root causes after minute 2: "
          f"{figures['after_two_minutes']:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
