"""Issue 27's counts: `.get("` calls in report/ and merge.py, and `dict[str, Any]` in the public
signatures of bugs/, report/, store.py, merge.py and campaign.py (besides to_json/from_json),
at the working tree and at an older commit.

    python bench/record_counts.py [--base REV]
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GETS = ("gbft_action/report", "gbft_action/merge.py")
SIGS = ("gbft_action/bugs", "gbft_action/report", "gbft_action/store.py", "gbft_action/merge.py",
        "gbft_action/campaign.py")


def files(rev: str, roots: tuple[str, ...]) -> dict[str, str]:
    """path -> source of the .py files under ``roots`` at ``rev`` ("" = the working tree)."""
    if not rev:
        paths = [p for r in roots for p in ((ROOT / r).rglob("*.py") if (ROOT / r).is_dir() else [ROOT / r])]
        return {str(p.relative_to(ROOT)): p.read_text() for p in paths if p.exists()}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, *roots], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout for n in names if n.endswith(".py")}


def public_dict_any(src: str, skip: tuple[str, ...] = ("to_json", "from_json")) -> tuple[int, int]:
    """(all, besides ``skip``) annotations holding dict[str, Any] in public functions' signatures."""
    total = other = 0
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            anns = [a.annotation for a in node.args.args + node.args.kwonlyargs if a.annotation is not None]
            n = sum("dict[str, Any]" in ast.unparse(a) for a in [*anns, *([node.returns] if node.returns else [])])
            total += n
            other += n if node.name not in skip else 0
    return total, other


def counts(rev: str) -> tuple[int, int, int, int]:
    """(lines holding .get(", .get(" calls, dict[str, Any] annotations, those besides to_json/from_json)."""
    srcs = files(rev, GETS).values()
    lines = sum(sum('.get("' in line for line in src.splitlines()) for src in srcs)
    sigs = [public_dict_any(src) for src in files(rev, SIGS).values()]
    return lines, sum(src.count('.get("') for src in srcs), sum(a for a, _ in sigs), sum(b for _, b in sigs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="4eb3fdf")
    args = ap.parse_args()
    for name, rev in ((args.base, args.base), ("working tree", "")):
        lines, gets, sigs, other = counts(rev)
        print(f"{name:>14}: .get(\" in report/ and merge.py: {lines} lines, {gets} calls; dict[str, Any] in public "
              f"signatures: {sigs} ({other} besides to_json/from_json)")


if __name__ == "__main__":
    main()
