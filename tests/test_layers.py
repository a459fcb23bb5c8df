"""The import rules: the layers ``gbft_action.LAYERS`` declares, read from the source (no import
of the package's modules, so a module that would fail to import is still checked)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import gbft_action

PACKAGE = Path(gbft_action.__file__).parent


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """"rerun.diagnose" for gbft_action/rerun/diagnose.py; "" for the package itself."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = PACKAGE) -> list[tuple[str, bool]]:
    """The package modules ``path`` imports, each with whether it runs (an import under ``if
    TYPE_CHECKING:`` is for the type checker only: it obeys the layers but makes no cycle)."""
    tree = ast.parse(path.read_text())
    here = module_name(path, root).split(".") if module_name(path, root) else []
    package = here if path.name == "__init__.py" else here[:-1]
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking(node.test)
                   for stmt in node.body for n in ast.walk(stmt)}
    runs = {id(n) for n in ast.walk(tree)} - typing_only
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if node.level == 0:
                if not (node.module or "").startswith("gbft_action"):
                    continue
                mod = mod.removeprefix("gbft_action").lstrip(".")
            for alias in node.names:  # "from .graph import ir" imports graph.ir
                sub = f"{mod}.{alias.name}" if mod else alias.name
                found.append((sub if _exists(sub, root) else mod, id(node) in runs))
        elif isinstance(node, ast.Import):
            found += [(a.name.removeprefix("gbft_action").lstrip("."), id(node) in runs)
                      for a in node.names if a.name.split(".")[0] == "gbft_action"]
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _exists(mod: str, root: Path) -> bool:
    p = root.joinpath(*mod.split("."))
    return p.with_suffix(".py").exists() or p.is_dir()


def layer(mod: str, layers: tuple[tuple[str, ...], ...] = gbft_action.LAYERS) -> int:
    """The layer of the longest prefix naming ``mod`` ("" is the package itself)."""
    best, rank = -1, None
    for i, prefixes in enumerate(layers):
        for p in prefixes:
            name = "" if p == "gbft_action" else p
            # The package's own prefix names its __init__ only: a module must be declared where it is.
            if (mod == name or (name and mod.startswith(name + "."))) and len(name) > best:
                best, rank = len(name), i
    assert rank is not None, f"{mod} is in no layer of gbft_action.LAYERS"
    return rank


def upward(root: Path = PACKAGE, layers: tuple[tuple[str, ...], ...] = gbft_action.LAYERS) -> list[str]:
    """Every import of a higher layer, as "importer (layer) -> imported (layer)"."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        me = module_name(path, root)
        for mod, _ in imports(path, root):
            if layer(mod, layers) > layer(me, layers):
                bad.append(f"{me or 'gbft_action'} ({layer(me, layers)}) -> {mod} ({layer(mod, layers)})")
    return bad


def cycles(root: Path = PACKAGE) -> list[list[str]]:
    """Cycles of imports, deferred ones (inside a function) included: a deferred import hides a
    cycle from Python, not from a reader (the review's github <-> trackers)."""
    graph = {module_name(p, root): {m for m, runs in imports(p, root) if runs} for p in root.rglob("*.py")}
    found, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if n == m or n not in graph:
                continue
            if state.get(n) == "open":
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, [*stack, n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def test_nothing_imports_a_higher_layer():
    assert upward() == []


def test_imports_form_no_cycle():
    assert cycles() == []


def test_every_module_is_in_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer(module_name(path))  # raises for a module no prefix names


# A module that imports one of these at its top is a leaf the package's own imports never pass through.
HEAVY = re.compile(r"^(import|from) (tensorflow|torch|torch_geometric|sb3_contrib|gymnasium)\b", re.M)


def test_each_module_imports_first_in_a_fresh_interpreter():
    """Whichever module of the package is imported first must load.  A cycle through a package's
    __init__ (policy -> records.enums runs records/__init__ -> records.summary -> policy) shows only
    then, whatever order the rest of the suite happens to import in; the module graph above cannot
    see it, since importing records.enums is not an import of records.summary."""
    mods = sorted("gbft_action" + (f".{m}" if m else "") for p in PACKAGE.rglob("*.py")
                  if not HEAVY.search(p.read_text()) for m in [module_name(p)])

    def first(mod: str) -> str:
        r = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True, text=True, timeout=300)
        return "" if r.returncode == 0 else f"{mod}: {(r.stderr.strip().splitlines() or ['?'])[-1]}"

    with ThreadPoolExecutor(4) as pool:
        failed = [f for f in pool.map(first, mods) if f]
    assert len(mods) > 80 and failed == []


def test_a_module_no_layer_names_fails_the_check():
    with pytest.raises(AssertionError, match="newcomer is in no layer"):
        layer("newcomer")
    assert layer("") == 0 and layer("policy") == 0 and layer("bugs.rootcause") == 2


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "gbft_action"
    (root / "bugs").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "bugs" / "__init__.py").write_text("")
    (root / "pipeline.py").write_text("from .bugs import rootcause\n")
    (root / "bugs" / "rootcause.py").write_text("from ..graph import ir\n")
    (root / "graph.py").write_text("x = 1\n")
    return root


LAYERS = (("graph",), ("bugs.rootcause",), ("pipeline",))


def test_the_check_fails_on_an_upward_import(tree):
    assert upward(tree, LAYERS) == []
    # The rule the review found broken: a finding's module reaching up into the pipeline.
    (tree / "bugs" / "rootcause.py").write_text("from ..graph import ir\n\ndef f():\n    from ..pipeline import Lane\n")
    assert upward(tree, LAYERS) == ["bugs.rootcause (1) -> pipeline (2)"]


def test_a_deferred_import_makes_a_cycle_a_type_checking_one_does_not(tree):
    (tree / "graph.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .pipeline import x\n")
    assert cycles(tree) == []
    (tree / "graph.py").write_text("def f():\n    from .pipeline import x\n")
    assert cycles(tree) == [["bugs.rootcause", "graph", "pipeline", "bugs.rootcause"]]
    (tree / "graph.py").write_text("from . import pipeline\n")
    assert cycles(tree) == [["bugs.rootcause", "graph", "pipeline", "bugs.rootcause"]]
