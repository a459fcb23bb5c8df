"""Command line: ``gbft fuzz``, ``gbft merge``, ``gbft report``, ``gbft corpus check`` and the rest."""

from __future__ import annotations

from collections.abc import Mapping
import argparse
from collections import Counter
import json
import sys
import time
from pathlib import Path
from typing import Any

from .records.config import Config, Timeouts, add_flags, configure, from_args
from .corpus import CorpusError, load_corpus
from .frontends import FRONTENDS, Frontend, corpus_file, frontend_of, parse_frontends
from .statefile import corrupt
from .exitcodes import CliExit
from .frontends import DEFAULT_OPSETS, LEGACY_OPSET, OPSETS, check_opset, parse_opsets
from .records.bundle import BundleMeta
from .records import Policy, RecordError
from .records.campaign import CampaignRecord
from .records.summary import Summary
from .records import Tolerance

# Exit codes: gbft_action.exitcodes, the one place (replay: FAILURES = still fails the same way).
EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_ERROR, EXIT_DIFFERENT, EXIT_PARTIAL = (
    CliExit.OK, CliExit.FAILURES, CliExit.USAGE, CliExit.ERROR, CliExit.DIFFERENT, CliExit.PARTIAL)
REPLAY_EXIT = {"same": EXIT_FAILURES, "different": EXIT_DIFFERENT, "passes": EXIT_OK}


def positive(kind: type) -> Any:
    def conv(text: str) -> Any:
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return v
    return conv


def _frontends(text: str) -> tuple[Frontend, ...]:
    try:
        return parse_frontends(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gbft", description="Graph-based fuzz testing of DL inference engines")
    sub = ap.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fuzz", help="generate models and test an engine against TensorFlow")
    f.add_argument("--engine", default="mnn", help="engine name (mnn, command) or module:Class")
    f.add_argument("--engine-build", type=Path, metavar="PATH",
                   help="the build under test: an MNN wheel or a folder holding one; for the command engine, "
                        "its build folder ({build}); default: the installed engine")
    f.add_argument("--base-build", type=Path, metavar="PATH",
                   help="a base build (as --engine-build) every model also runs on: each failure gets a verdict "
                        "(new, pre-existing, fixed, changed)")
    f.add_argument("--converter-command", default="", help="command engine: converter command template")
    f.add_argument("--runner-command", default="", help="command engine: runner command template")
    f.add_argument("--budget", type=positive(float), default=60.0, help="seconds for the whole run")
    f.add_argument("--max-models", type=int, default=0, help="stop after N models (0: no limit)")
    f.add_argument("--shard", default="1/1", metavar="I/N",
                   help="run part I of N of the campaign: shards of one seed never generate the same model")
    f.add_argument("--graph", choices=["ws", "rn", "both"], default="both")
    f.add_argument("--out", type=Path, default=Path("gbft-out"))
    f.add_argument("--jobs", type=positive(int), default=2,
                   help="parallel lanes (reference + engine worker); with several front ends at least one each")
    f.add_argument("--frontend", type=_frontends, default=parse_frontends("tf"),
                   help=f"the model format the engine converts: {' | '.join(FRONTENDS)} (default tf), or a "
                        "comma list (tf,onnx) to mix them in one campaign, each with its own corpus and coverage")
    f.add_argument("--corpus", default="", help="block corpus (default: the front end's, e.g. "
                                                "corpora/tensorflow-mnn.yaml for tf and tflite; "
                                                "not with several front ends)")
    f.add_argument("--resume", type=Path, metavar="OUT", help="continue the campaign in OUT")
    f.add_argument("--rtol", type=float, default=Tolerance.rtol)
    f.add_argument("--atol", type=float, default=Tolerance.atol)
    f.add_argument("--min-ratio", type=float, default=Tolerance.min_ratio)
    f.add_argument("--timeout-convert", type=positive(float), default=30.0)
    f.add_argument("--timeout-infer", type=positive(float), default=30.0)
    f.add_argument("--engine-mem-mb", type=int, default=4096, help="address-space limit of the engine worker")
    f.add_argument("--mutations", choices=["on", "off"], default="on", help="the six mutations of the paper")
    f.add_argument("--state", default="", metavar="DIR",
                   help="start from the coverage and MCTS state of a previous run's output directory")
    f.add_argument("--minimize-share", type=float, default=0.35,
                   help="share of the budget for minimising new bugs (0 turns minimisation off)")
    f.add_argument("--engine-settings", default="", metavar="NAME=VALUE,...",
                   help="the engine's settings, for both builds, e.g. precision=low,threads=4,transformer_fuse=on "
                        "for MNN (each bundle and repro keeps them; low precision is judged at float16's bound)")
    f.add_argument("--opset", type=_opsets, default=DEFAULT_OPSETS, metavar="N[,M...]",
                   help=f"the ONNX opsets the onnx front end writes, {OPSETS[0]} to {OPSETS[-1]}: one (every model "
                        f"at it) or a list (most models at the first, one in four at the others; default "
                        f"{','.join(map(str, DEFAULT_OPSETS))}: the newest ONNX Runtime runs, and 17)")
    f.add_argument("--threads-oracle", action="store_true",
                   help="run every model also at more threads (MNN: threads=4) and report where the outputs change "
                        "with the thread count (XTF; no reference needed)")
    f.add_argument("--engine-coverage", action="store_true",
                   help="take which of the engine's code each model ran (an engine built with "
                        "-fsanitize-coverage=trace-pc and line tables): engine-coverage.json, and per module in "
                        "summary.json (coverage.engine); `gbft coverage OUT` prints it")
    add_flags(f)  # the knobs the action shares (gbft_action.knobs): seed, blocks, chooser, ...
    _platform_args(f)
    f.add_argument("--platform", dest="platforms", type=_platform_list, help="one engine platform (see --platforms)")
    f.add_argument("--quiet", action="store_true")

    r = sub.add_parser("replay", help="run a bug bundle again: exit 1 same bug, 4 other failure, 0 passes")
    r.add_argument("bundle", type=Path)
    r.add_argument("--original", action="store_true", help="replay the original graph, not the minimised one")
    _platform_args(r)
    m = sub.add_parser("minimize", help="minimise a bug bundle's model, keeping its fingerprint")
    m.add_argument("bundle", type=Path)
    m.add_argument("--time-limit", type=positive(float), default=30.0)
    _platform_args(m)

    a = sub.add_parser("arm-root", help="build (or reuse) an arm64 root for --platform arm64-qemu (as root)")
    a.add_argument("dir", type=Path)
    a.add_argument("--engine-wheel", type=Path, help="an aarch64 MNN wheel (default: PyPI's, the host's version)")
    a.add_argument("--mirror", default="", help="Debian mirror (default: the one the host's apt uses)")

    rp = sub.add_parser("report", help="file or update issues for a fuzz output directory")
    rp.add_argument("--from", dest="src", type=Path, required=True, metavar="OUT")
    rp.add_argument("--tracker", choices=["github", "files", "none"], default="files")
    rp.add_argument("--repo", default="", help="OWNER/NAME (github tracker)")
    rp.add_argument("--token-env", default="GITHUB_TOKEN", help="environment variable holding the token")
    rp.add_argument("--base-url", default="https://api.github.com", help="API URL (GitHub Enterprise, tests)")
    rp.add_argument("--label", default="gbft")
    rp.add_argument("--max-new-issues", type=int, default=5)
    rp.add_argument("--check-fixes", action="store_true", help="replay open issues' bundles; close fixed ones")
    rp.add_argument("--no-close", action="store_true", help="with --check-fixes: comment but leave open")
    rp.add_argument("--corpus", type=Path, help="regression corpus of bundles (default OUT/bugs)")
    rp.add_argument("--templates", type=Path, help="a folder of your own issue/comment/summary templates")
    rp.add_argument("--commit", default="", help="engine commit (default $GITHUB_SHA)")
    rp.add_argument("--min-write-interval", type=float, default=1.0, help="seconds between writes (>= 1 on github.com)")

    mg = sub.add_parser("merge", help="merge the outputs of a campaign's shards into one output")
    mg.add_argument("inputs", type=Path, nargs="+", metavar="OUT", help="shard outputs (or earlier merges)")
    mg.add_argument("--out", type=Path, required=True, metavar="M", help="the merged output (may be one of the inputs)")

    sub.add_parser("action", help="the GitHub Action entrypoint (reads INPUT_* variables)")

    rec = sub.add_parser("onnx-records", help="write the ONNX operator records (schemas and valid instances) "
                                                 "from the installed onnx package's schemas and node test cases")
    rec.add_argument("--out", type=Path, default=None, metavar="FILE",
                     help="where to write them (default: the package's file of that opset, ops/data/onnx_records*.json)")
    rec.add_argument("--opset", type=int, default=LEGACY_OPSET, metavar="N",
                     help=f"the opset to record, {OPSETS[0]} to {OPSETS[-1]} (default {LEGACY_OPSET})")

    cv = sub.add_parser("coverage", help="the engine's code an output's models ran, per module (--engine-coverage); "
                                         "several outputs side by side")
    cv.add_argument("outs", type=Path, nargs="*", metavar="OUT", help="fuzz outputs")
    cv.add_argument("--runtime", type=Path, metavar="DIR",
                    help="build the coverage runtime in DIR and print its path (link an engine built with "
                         "-fsanitize-coverage=trace-pc against it: its build tools run with it)")

    ln = sub.add_parser("learn", help="learned guidance (--chooser learned): collect coverage data, train")
    lsub = ln.add_subparsers(dest="learn_cmd", required=True)
    lc = lsub.add_parser("collect", help="run models on an engine built with coverage; write (features, blocks "
                                         "per module) rows; resumable")
    lc.add_argument("--out", type=Path, required=True, metavar="DIR", help="the data set's folder")
    lc.add_argument("--engine", default="mnn")
    lc.add_argument("--engine-build", type=Path, metavar="PATH", help="the engine built with coverage (a wheel)")
    lc.add_argument("--frontend", default="onnx,tf,tflite", help="front ends of the generated models")
    lc.add_argument("--models", type=int, default=500, help="generated models per front end")
    lc.add_argument("--seed", type=int, default=0)
    lc.add_argument("--node-tests", type=int, default=-1, metavar="N",
                    help="ONNX's node test models too: at most N (-1: all, 0: none)")

    lt = lsub.add_parser("train", help="train the coverage predictor and each front end's block policy; "
                                       "write a guide folder (--chooser learned --guide DIR)")
    lt.add_argument("--data", type=Path, required=True, metavar="DIR", help="a data set (gbft learn collect)")
    lt.add_argument("--out", type=Path, required=True, metavar="DIR", help="the guide's folder")
    lt.add_argument("--frontend", default="onnx,tf,tflite", help="front ends to train a policy for")
    lt.add_argument("--steps", type=int, default=20000, help="policy training steps per front end")
    lt.add_argument("--epochs", type=int, default=60, help="predictor training epochs")
    lt.add_argument("--seed", type=int, default=0)

    c = sub.add_parser("corpus", help="block corpus tools")
    csub = c.add_subparsers(dest="corpus_cmd", required=True)
    ck = csub.add_parser("check", help="validate a corpus file")
    ck.add_argument("file")
    return ap


def _opsets(text: str) -> tuple[int, ...]:
    try:
        return parse_opsets(text, "")
    except ValueError as e:  # argparse names the option
        raise argparse.ArgumentTypeError(str(e).strip()) from None


def _platform_list(text: str) -> tuple[str, ...]:
    from .platforms import PlatformError, parse_platforms

    try:
        return parse_platforms(text)
    except PlatformError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _platform_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--platforms", type=_platform_list, default=(),
                   help="engine platforms, comma-separated: x86_64, aarch64 (native), arm64-qemu "
                        "(emulated; needs --arm-root); default: this machine")
    p.add_argument("--arm-root", default="", metavar="DIR", help="arm64 root built by `gbft arm-root DIR`")


def cmd_arm_root(args: argparse.Namespace) -> int:
    from .platforms.armroot import ArmRootError, build_arm_root

    if args.engine_wheel is not None and not args.engine_wheel.is_file():
        print(f"error: --engine-wheel {args.engine_wheel}: no such file", file=sys.stderr)
        return EXIT_USAGE
    try:
        build_arm_root(args.dir, args.engine_wheel, args.mirror)
    except ArmRootError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "corpus":
        return cmd_corpus_check(args.file)
    if args.cmd == "coverage":
        return cmd_coverage_runtime(args.runtime) if args.runtime else cmd_coverage(args.outs)
    if args.cmd == "fuzz":
        return cmd_fuzz(args)
    if args.cmd in ("replay", "minimize"):
        return cmd_bundle(args)
    if args.cmd == "report":
        return cmd_report(args)
    if args.cmd == "merge":
        return cmd_merge(args)
    if args.cmd == "arm-root":
        return cmd_arm_root(args)
    if args.cmd == "learn":
        return cmd_learn(args)
    if args.cmd == "onnx-records":
        return cmd_onnx_records(args.out, args.opset)
    if args.cmd == "action":
        from .action.main import main as action_main

        return action_main()
    return EXIT_USAGE


def cmd_learn(args: argparse.Namespace) -> int:
    from .knowledge.builds import BuildError, prepare_build
    from .graph.solver import GenError
    from .learn.collect import CollectConfig, collect
    from .records import RecordError

    if args.learn_cmd == "train":
        return cmd_learn_train(args)
    try:
        if args.engine_build is not None and not args.engine_build.exists():
            raise ValueError(f"--engine-build {args.engine_build}: no such file or folder")
        build = prepare_build(args.engine, args.engine_build, args.out.resolve() / ".engine-this") \
            if args.engine_build is not None else None
        cfg = CollectConfig(args.out, args.engine, build, tuple(f for f in args.frontend.split(",") if f),
                            args.models, args.seed, args.node_tests != 0, max(args.node_tests, 0)).validate()
        collect(cfg)
    except (ValueError, RecordError, BuildError, GenError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_learn_train(args: argparse.Namespace) -> int:
    from .records import RecordError

    try:
        import onnxruntime  # noqa: F401 - the policies train against the exported predictor

        from .learn.train import train_guide
    except ImportError as e:  # the learn extra: PyTorch, PyG, sb3-contrib, ONNX Runtime
        print(f"error: training needs the learn extra (pip install 'gbft-action[learn]'): {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        train_guide(args.data, args.out, tuple(f for f in args.frontend.split(",") if f), args.steps,
                    args.epochs, args.seed)
    except (ValueError, RecordError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_coverage_runtime(folder: Path) -> int:
    from .engines.coverage import CoverageError, build_shim

    try:
        print(build_shim(folder))
    except CoverageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_coverage(outs: list[Path]) -> int:
    """Print the engine coverage of one or more outputs; one line naming any that has none."""
    from .records import RecordError
    from .records.engine_coverage import EngineCoverage
    from .report.render import engine_coverage_text

    if not outs:
        print("error: gbft coverage: give one or more fuzz outputs (or --runtime DIR)", file=sys.stderr)
        return EXIT_USAGE
    read = []
    for out in outs:
        try:
            ec = EngineCoverage.read(out)
        except RecordError as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        if ec is None:
            print(f"error: {out}: no engine coverage (a campaign run with --engine-coverage writes it)", file=sys.stderr)
            return EXIT_USAGE
        read.append((str(out), ec))
    print(engine_coverage_text(read))
    return 0


def cmd_onnx_records(out: Path | None, opset: int) -> int:
    """Build the records of ``opset`` (about a minute: every test case through the validity
    oracle) and write them atomically; one line per figure a reviewer checks."""
    from .ops.recorded import records_file
    from .reference.onnx_records import build_records
    from .statefile import write_atomic

    try:
        check_opset(opset, "--opset")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    records = build_records(opset)
    path = out or records_file(opset)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(records, indent=1, sort_keys=True) + "\n")
    with_instances = [op for op, r in records["ops"].items() if r["instances"]]
    every = [i for r in records["ops"].values() for i in r["instances"]]
    print(f"{path}: {len(records['ops'])} operators at opset {records['opset']}, {len(with_instances)} with "
          f"{len(every)} valid instances ({sum('mutation' in i for i in every)} of them mutants); "
          f"{sum(i.get('rule') == 'same' for i in every)} follow their input's shape")
    return EXIT_OK


def cmd_corpus_check(path: str) -> int:
    try:
        c = load_corpus(path)
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for b in c.blocks:
        kind = f"subgraph {'+'.join(b.ops)} edges={[list(e) for e in b.inner_edges]}" if b.is_subgraph else "operator"
        print(f"{b.name:24s} {kind} in={sorted(b.in_degree)} out={sorted(b.out_degree)}")
    print(f"{path}: {len(c.blocks)} blocks, {len(c.op_types)} operator types: OK")
    return EXIT_OK


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .campaign import Campaign, cut_short, disk_filled, install_signal_handlers
    from .platforms.armroot import ArmRootError
    from .pipeline import FrontendError
    from .records.config import ShardError, parse_shard

    try:  # here, not in argparse: a bad value is one line, not usage and error
        shard = parse_shard(args.shard)
    except ShardError as e:
        print(f"error: --shard: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = args.resume or args.out
    try:
        pr, base = _builds(args, out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    values = dict(out=out, engine=args.engine, budget=args.budget, max_models=args.max_models,
                  graph=args.graph, jobs=args.jobs, **from_args(args),
                  corpus=corpus_file(args.frontend, args.corpus),
                  frontend=",".join(fe.name for fe in args.frontend),
                  timeouts=Timeouts(convert=args.timeout_convert, infer=args.timeout_infer),
                  tolerance=Tolerance(args.rtol, args.atol, args.min_ratio), engine_mem_mb=args.engine_mem_mb,
                  mutations=args.mutations == "on", state=args.state, minimize_share=args.minimize_share,
                  platforms=args.platforms, arm_root=args.arm_root,
                  engine_python=pr.python, engine_env=dict(pr.env), base=base,
                  shard=shard,
                  threads_oracle=args.threads_oracle, opsets=args.opset, engine_coverage=args.engine_coverage)
    try:
        # A missing or corrupt record to resume: one line, exit 2.
        cfg = configure(values, resume=_resumed(args.resume) if args.resume else None)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    bar = Progress(enabled=not args.quiet)
    try:
        camp = Campaign(cfg, progress=bar.update)
    except (CorpusError, ValueError, ArmRootError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    install_signal_handlers(camp)
    try:
        summary = camp.run()
    except FrontendError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, RuntimeError, OSError) as e:  # OSError: no room even for the run's records
        print(f"\nerror: {e}", file=sys.stderr)
        return EXIT_ERROR
    bar.close()
    print_summary(summary, out)
    if disk_filled(summary):
        print(f"error: {summary.stop_reason}: no space left on device; the run stopped, "
              f"summary.json covers the {summary.models} models judged", file=sys.stderr)
        return EXIT_ERROR
    if cut_short(summary):
        print(f"error: {cut_short(summary)}; the run stopped, summary.json covers the {summary.models} "
              f"models judged", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _builds(args: argparse.Namespace, out: Path) -> tuple[Any, Any]:
    """The build under test and the base build (None) from --engine-build/--base-build, both
    with the engine's --engine-settings."""
    from dataclasses import replace

    from .knowledge.builds import Commands, prepare_builds
    from .knowledge.registry import knowledge_of

    for opt, p in (("--engine-build", args.engine_build), ("--base-build", args.base_build)):
        if p is not None and not p.exists():
            raise ValueError(f"{opt} {p}: no such file or folder")
    try:
        env = knowledge_of(args.engine).env_for(knowledge_of(args.engine).parse_settings(args.engine_settings))
    except ValueError as e:
        raise ValueError(f"--engine-settings: {e}") from None
    # Absolute: the engine workers run in folders of their own (a relative --out, such as the
    # default, left them without their venv's python).
    pr, base = prepare_builds(args.engine, args.engine_build, args.base_build, out.resolve(),
                              Commands(args.converter_command, args.runner_command))
    # Both builds at the same settings: the verdict compares builds, never settings.
    return (replace(pr, env={**pr.env, **env}),
            None if base is None else replace(base, env={**base.env, **env}))


def cmd_bundle(args: argparse.Namespace) -> int:
    import tempfile

    from .bugs.bundle import BugBook
    from .rerun.replay import bug_platforms, bundle_key, load_bundle, minimize_bug, replay, replay_threads_env
    from .knowledge.builds import build_of_bundle
    from .pipeline import FrontendError, Lane, LaneConfig
    from .platforms import PlatformError
    from .platforms import resolve as resolve_platforms
    from .platforms.armroot import ArmRootError

    try:
        meta, g, small = load_bundle(args.bundle)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    tol = meta.tolerance
    with tempfile.TemporaryDirectory(prefix="gbft-") as tmp:
        try:
            plats = resolve_platforms(args.platforms, args.arm_root, Path(tmp))
        except (PlatformError, ArmRootError) as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_USAGE
        build = build_of_bundle(meta.engine)
        try:
            frontend = frontend_of(meta.fingerprint)
        except ValueError as e:
            print(f"error: {args.bundle}/meta.json: {e}", file=sys.stderr)
            return EXIT_USAGE
        lane = Lane(LaneConfig(build.engine, Path(tmp), tolerance=tol, platforms=plats, engine_env=dict(build.env),
                               frontend=frontend, threads_env=replay_threads_env(meta, build.engine)), 0)
        try:
            try:
                info = lane.start()
            except FrontendError as e:  # exit 1 would read "the same bug"
                print(f"error: {e}", file=sys.stderr)
                return EXIT_USAGE
            if args.cmd == "minimize":
                # Any folder holding a bundle works, not only OUT/bugs/ID: the book sees it by its id.
                bugs = Path(tmp) / "book" / "bugs"
                bugs.mkdir(parents=True)
                (bugs / meta.id).symlink_to(Path(args.bundle).resolve())
                book = BugBook(bugs.parent)
                stats = minimize_bug(lane, book, meta.id, args.time_limit)
                print(json.dumps(stats.to_json(), indent=2))
                return EXIT_OK
            target = meta.fingerprint
            model = g if args.original or small is None else small
            v = replay(lane, model, target, platforms=bug_platforms(lane, meta),
                       key=bundle_key(meta) if model is small else None)
        finally:
            lane.stop()
    print(f"{info.engine} {info.version} ({info.machine}): {v.outcome}")
    print(f"  recorded: {target.title}")
    if v.fingerprint is not None and v.outcome != "same":
        print(f"  now:      {v.fingerprint.title}")
    if v.crashes:  # heap damage: say so, or a maintainer sees a pass or a wrong value and no crash
        print(f"  crashed:  {len(v.crashes)} of {len(v.crashes) + 1} runs on fresh workers "
              f"({', '.join(sorted({c.title for c in v.crashes}))}): the engine damages its heap on this model")
    if v.result.message:
        print(f"  message:  {v.result.message[:300]}")
    return REPLAY_EXIT[v.outcome]


def cmd_merge(args: argparse.Namespace) -> int:
    from .merge import MergeError, merge

    missing = [p for p in args.inputs if not p.is_dir()]
    if missing:
        print(f"error: {missing[0]}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = merge(args.inputs, args.out, warn=lambda line: print(line, file=sys.stderr))
    except (MergeError, ValueError, KeyError) as e:  # StateFileError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print_summary(summary, args.out)
    shards = summary.shards or {}
    done = sum(s.complete for s in shards.values())
    print(f"merged: {len(shards)} shards ({done} finished) into {args.out}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    import os

    from .report.render import RunContext
    from .report.local import ReportWriteError
    from .report.filing import ReportConfig
    from .report.reporter import ReportInputError, load_run, report
    from .report.choose import make_tracker

    try:
        load_run(args.src)  # checked before anything is written to GitHub
    except ReportInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.tracker == "github" and not args.repo:
        print("error: --tracker github needs --repo OWNER/NAME", file=sys.stderr)
        return EXIT_USAGE
    token = os.environ.get(args.token_env, "")
    cfg = ReportConfig(args.src, args.max_new_issues, args.check_fixes, not args.no_close, args.corpus, args.templates)
    try:
        tracker = make_tracker(args.tracker, out=args.src, repo=args.repo, token=token, base_url=args.base_url,
                               label=args.label, min_interval=args.min_write_interval)
        res = report(cfg, tracker, RunContext.from_env(commit=args.commit), lane_factory=_replay_lane)
    except ValueError as e:  # a bad tracker, GitHub unusable (TrackerSetupError), or the output changed under us
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ReportWriteError as e:  # its own output read-only or full: a rerun finishes the job
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    for line in res.lines() or ["nothing to report"]:
        print(line)
    print(f"report: {args.src / 'report.json'}")
    return EXIT_PARTIAL if res.partial else EXIT_OK


def _replay_lane(meta: BundleMeta) -> Any:
    """A started lane for replaying bundles (the --check-fixes path)."""
    import tempfile

    from .rerun.replay import replay_threads_env
    from .knowledge.builds import build_of_bundle
    from .pipeline import Lane, LaneConfig

    build = build_of_bundle(meta.engine)
    lane = Lane(LaneConfig(build.engine, Path(tempfile.mkdtemp(prefix="gbft-fix-")), engine_env=dict(build.env),
                           tolerance=meta.tolerance, frontend=frontend_of(meta.fingerprint), scratch=True,
                           threads_env=replay_threads_env(meta, build.engine)), 0)
    lane.start()
    return lane


def _resumed(out: Path) -> Config:
    """The configuration the campaign in ``out`` ran with (its identity is taken from it)."""
    path = out / "campaign.json"
    if not path.exists():
        raise ValueError(f"--resume {out}: no campaign.json there")
    try:
        record = CampaignRecord.read(out)
    except RecordError as e:
        raise corrupt(path, "campaign record", str(e).split(": ", 1)[-1]) from None
    if record.merged is not None:
        raise ValueError(f"--resume {out}: a merged output (gbft merge) cannot be resumed; "
                         f"give it as --state to the next run")
    return record.config


class Progress:
    """One status line on stderr: models, failures by status, models/s."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, counts: Mapping[str, Any]) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < (0.25 if self.tty else 5.0):
            return
        self.last = now
        by = counts["by_status"]
        fails = " ".join(f"{k}={v}" for k, v in by.items() if v and k != "DCP")
        rate = counts["models"] / max(now - self.t0, 1e-9)
        line = f"models {counts['models']:6d}  pass {by.get('DCP', 0):6d}  {fails or 'no failures'}  {rate:6.1f}/s"
        sys.stderr.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def _coverage_line(cov: dict[str, object]) -> str:
    return "  ".join(f"{k} {cov[k]:.3f}" for k in ("OTC", "IDC", "ODC", "SEC", "DEC", "SPC", "ATC", "OLC") if k in cov)


def print_summary(s: Summary, out: Path) -> None:
    eng = s.engine
    print(f"\n{eng.engine} {eng.version} ({eng.machine}): {s.models} models in {s.elapsed_s:.1f} s "
          f"({s.models_per_s:.1f}/s), stopped: {s.stop_reason or ''}")
    plats = {p: s.platforms[p] for p in s.platform_order if p in s.platforms}
    if len(plats) > 1:  # one column per platform
        print(f"{'status':8s}" + "".join(f" {p:>12s}" for p in plats))
        for k in s.by_status:
            print(f"{k:8s}" + "".join(f" {c.by_status.get(k, 0):12d}" for c in plats.values()))
        print(f"{'models':8s}" + "".join(f" {c.models:12d}" for c in plats.values()))
    else:
        print(f"{'status':8s} {'count':>7s}")
        for k, v in s.by_status.items():
            print(f"{k:8s} {v:7d}")
    if s.coverage:
        print("coverage: " + _coverage_line(s.coverage))
    for name, fe in (s.frontends or {}).items():  # a mixed campaign: each front end apart
        print(f"{name:8s} {fe.models:5d} models, {fe.unique_failures} unique failures; "
              f"coverage: {_coverage_line(fe.coverage) if fe.coverage else '-'}")
    print(f"unique failures: {s.unique_failures}")
    for f in s.failures[:20]:
        where = f"  [{', '.join(f.platforms)}]" if len(plats) > 1 and f.platforms else ""
        verdict = f"{f.verdict.value:>12s}  " if f.verdict is not None else ""
        print(f"  {f.count:5d}  {f.key[:12]}  {verdict}{f.title or f.message[:90]}{where}")
    causes = s.root_causes or ()
    if causes:
        # What a maintainer acts on: the fingerprints above merged into root causes.
        by = Counter(rc.policy.value for rc in causes)
        print(f"root causes: {len(causes)} ({by['report']} reported, {by['summary']} summary only, "
              f"{by['ignore']} ignored)")
        for rc in [rc for rc in causes if rc.policy is Policy.REPORT][:20]:
            print(f"  {rc.count:5d}  {rc.key}  {rc.symptom:16s}  {rc.title[:90]}")
    if s.triage is not None:
        from .bugs.triage import headline

        print("verdict: " + headline(s).replace("**", ""))
    print(f"report: {out / 'summary.json'}")


if __name__ == "__main__":
    sys.exit(main())
