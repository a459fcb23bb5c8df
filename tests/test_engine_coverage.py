"""Engine coverage (issue 38): the blocks of the engine's own code each model ran, taken in the
engine worker from a build with -fsanitize-coverage=trace-pc, joined by the host, placed in
the engine's modules by their source folders."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gbft_action.cli import main
from gbft_action.engines.coverage import Blocks, build_shim, place, preload_env
from gbft_action.knowledge.mnn import MNNKnowledge
from gbft_action.records.engine_coverage import EngineCoverage

COVERED = Path(__file__).parent / "data" / "covered_engine"
FRONT = "tools/converter/source/onnx/front.c"
KERNEL = "source/backend/cpu/kernel.c"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("addr2line") is None,
                                reason="needs gcc and binutils")


def _covered_lib(tmp: Path) -> Path:
    """tests/data/covered_engine built as an instrumented engine is: trace-pc, line tables."""
    out = tmp / "libcovered.so"
    subprocess.run(["gcc", "-O1", "-g", "-shared", "-fPIC", "-fsanitize-coverage=trace-pc", "-o", str(out),
                    *(str(COVERED / f) for f in (FRONT, KERNEL))], check=True)
    return out


def test_the_worker_takes_what_each_call_ran_and_the_host_places_it_in_modules(tmp_path):
    # In a process of its own, as the engine worker is: the shim preloaded, then the engine.
    shim, lib = build_shim(tmp_path / "work"), _covered_lib(tmp_path)
    code = f"""
import ctypes, json
from gbft_action.engines.coverage import BlockReader
reader = BlockReader({str(shim)!r})
lib = ctypes.CDLL({str(lib)!r})
lib.front_convert(10)
first = reader.take()
again = reader.take()
lib.front_convert(10)
same = reader.take()
lib.front_convert(13); lib.cpu_run(4)
more = reader.take()
print(json.dumps([first, again, same, more]))
"""
    env = preload_env(shim, {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[1])})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    first, again, same, more = json.loads(out.stdout.splitlines()[-1])
    obj = str(lib)
    assert set(first) == {obj} and len(first[obj]) >= 2  # the entry and the kind-0 branch
    assert again == {} and same == first  # each take is what ran since the last: the same call, the same blocks
    assert set(more[obj]) - set(first[obj])  # another branch, and the kernel
    blocks = Blocks()
    assert blocks.add(first) == len(first[obj]) and blocks.add(same) == 0  # the union keeps each once
    blocks.add(more)
    blocks.add({obj: ["x", True, -4], 3: [1], "/y": 5})  # a worker's reply is data: only offsets of named objects
    assert blocks.total == len(set(first[obj]) | set(more[obj]))
    placed = place(blocks, MNNKnowledge().module_of)
    assert set(placed) == {"converter: onnx", "CPU compute"} and all(set(objs) == {lib.name} for objs in placed.values())
    assert sum(len(v) for objs in placed.values() for v in objs.values()) == blocks.total


def test_a_campaign_with_engine_coverage_writes_it_and_gbft_coverage_compares_two(tmp_path, monkeypatch,
                                                                                  fake_engines_path, capsys):
    from gbft_action.campaign import Campaign
    from gbft_action.records.config import Config
    from gbft_action.records import Summary
    from gbft_action.report.render import Renderer

    monkeypatch.setenv("GBFT_TEST_COVERED_LIB", str(_covered_lib(tmp_path)))
    outs = []
    for n in (3, 12):
        out = tmp_path / f"o{n}"
        summary = Campaign(Config(out=out, engine="fake_engines:CoveredMNN", budget=120, max_models=n, seed=5,
                                      blocks=(2, 4), jobs=1, minimize_share=0.0, frontend="onnx",
                                      engine_coverage=True)).run()
        ec = EngineCoverage.read(out)
        assert ec is not None and ec.models == n and ec.total > 0
        assert {"converter: onnx", "CPU compute"} <= set(ec.modules)  # the stand-in's two files, placed
        assert summary.coverage is not None and summary.coverage["engine"] == ec.summary()
        md = Renderer().summary(Summary.read(out), "", [], [], [])  # the job summary, from summary.json
        assert f"Engine coverage: {ec.total} basic blocks" in md and "| converter: onnx |" in md
        outs.append((out, ec))
    (small, a), (large, b) = outs
    assert b.total >= a.total  # more models, no fewer blocks (same seed: the first three are the same)
    assert main(["coverage", str(small), str(large)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[0] == "module" and any(line.startswith("converter: onnx") for line in table)
    assert table[-2].split()[:3] == ["all", str(a.total), str(b.total)]
    assert main(["coverage", str(tmp_path)]) == 2  # an output without it: one line, usage error
    assert "no engine coverage" in capsys.readouterr().err


def test_engine_coverage_written_on_disk_is_read_back_strictly_and_joins(tmp_path):
    ec = EngineCoverage({"core": {"a.so": (3, 1)}, "shape": {"a.so": (9,)}}, 4)
    ec.write(tmp_path)
    back = EngineCoverage.read(tmp_path)
    assert back == EngineCoverage({"core": {"a.so": (1, 3)}, "shape": {"a.so": (9,)}}, 4)
    assert back.total == 3 and back.modules == {"core": 2, "shape": 1}
    other = EngineCoverage({"core": {"a.so": (3, 5)}, "geometry": {"b.so": (2,)}}, 6)
    assert EngineCoverage.union([back, other], 10).modules == {"core": 3, "geometry": 1, "shape": 1}  # 3 once
    (tmp_path / "engine-coverage.json").write_text(json.dumps({"blocks": {"core": {"a.so": ["1"]}}}))
    from gbft_action.records import RecordError

    with pytest.raises(RecordError, match="blocks: expected module -> object file -> list of addresses"):
        EngineCoverage.read(tmp_path)
    assert EngineCoverage.read(tmp_path / "none") is None


def test_an_uninstrumented_engine_reports_no_blocks_and_the_runtime_path_is_absolute(tmp_path, monkeypatch):
    # The shim preloaded, an engine library without the instrumentation loaded and run: no blocks.
    plain = tmp_path / "libplain.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(plain), str(COVERED / KERNEL)], check=True)
    shim = build_shim(tmp_path)
    code = f"""
import ctypes
from gbft_action.engines.coverage import BlockReader
reader = BlockReader({str(shim)!r})
ctypes.CDLL({str(plain)!r}).cpu_run(50)
print(reader.take())
"""
    env = preload_env(shim, {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[1])})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "{}"
    # The workers run in folders of their own: a relative output folder still preloads the shim.
    monkeypatch.chdir(tmp_path)
    assert build_shim(Path("rel")).is_absolute() and build_shim(Path("rel")).exists()
    from gbft_action.engines.coverage import CoverageError

    with pytest.raises(CoverageError, match="holds a space or a colon"):
        build_shim(tmp_path / "a b")


def test_the_job_summary_shows_engine_modules_of_plain_words_only():
    # summary.json comes back from a pull request's artifact: a module name is shown only as words.
    from gbft_action.records import Summary
    from gbft_action.report.render import Renderer

    cov = {"OLC": 0.5, "OTC": 0.5, "IDC": 0.5, "ODC": 0.5, "SEC": 0.5, "SPC": 0.5, "operators": [], "element_types": [],
           "engine": {"blocks": 7, "models": 2, "modules": {"core": 5, "<script>x": 1, "shape": "2"}}}
    md = Renderer().summary(Summary(2, coverage=cov), "", [], [], [])
    assert "Engine coverage: 7 basic blocks of the engine's code ran, over 2 models." in md
    assert "| core | 5 |" in md and "script" not in md and "| shape |" not in md
    assert "Engine coverage" not in Renderer().summary(Summary(2, coverage={**cov, "engine": "x"}), "", [], [], [])
    none = {**cov, "engine": {"blocks": 0, "models": 2, "modules": {}}}  # asked for, and nothing seen
    assert "none of the engine's code was seen running over 2 models" in \
        Renderer().summary(Summary(2, coverage=none), "", [], [], [])


def test_shards_engine_coverage_joins_in_merge(tmp_path, monkeypatch, fake_engines_path):
    from gbft_action.campaign import Campaign
    from gbft_action.records.config import Config
    from gbft_action.merge import merge
    from gbft_action.records import Summary

    monkeypatch.setenv("GBFT_TEST_COVERED_LIB", str(_covered_lib(tmp_path)))
    parts = []
    for i in (1, 2):
        out = tmp_path / f"shard{i}"
        Campaign(Config(out=out, engine="fake_engines:CoveredMNN", budget=120, max_models=4, seed=5,
                            blocks=(2, 4), jobs=1, minimize_share=0.0, frontend="onnx", engine_coverage=True,
                            shard=(i, 2))).run()
        ec = EngineCoverage.read(out)
        assert ec is not None
        parts.append(ec)
    merge([tmp_path / "shard1", tmp_path / "shard2"], tmp_path / "merged")
    joined = EngineCoverage.read(tmp_path / "merged")
    assert joined == EngineCoverage.union(parts, 8) and joined.total < parts[0].total + parts[1].total  # shared once
    assert (Summary.read(tmp_path / "merged").coverage or {})["engine"] == joined.summary()
