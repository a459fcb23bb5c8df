"""A campaign's configuration (issue 39, item 2): one typed, versioned record, whoever builds it.

The CLI's flags, the action's inputs, ``--resume`` (the identity of the campaign it continues)
and ``merge`` (the shards' record) each end in ``configure``, which builds a ``Config`` and
checks it with ``Config.validate``: one set of ranges.  ``campaign.json`` stores it typed
(``to_json``/``from_json``, read strictly; a record older than a field reads its default).

The settings the CLI and the action share are knobs (``gbft_action.knobs``): each is declared
once, as a field here with its flag and input name, default, parser, range and help, and
``KNOBS`` is read from these fields.  Adding one is that field and the code that uses it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..frontends import DEFAULT_OPSETS, LEGACY_OPSET, check_opsets, parse_frontends
from ..knobs import (CHOOSERS, MAX_BLOCKS, MAX_SEED, Knob, blocks_check, choice, knob, list_only_check, number,
                     parse_blocks, policy_check, text, text_check)
from ..knowledge.builds import EngineBuild
from ..knowledge.registry import knowledge_of, threads_env
from ..policy import CONFIRM_ROUNDS, DEFAULT_LIST_ONLY, parse_list_only, parse_policy
from .io import Fields, RecordError
from .tolerance import Tolerance

CONFIG_VERSION = 1  # 0: campaign.json's config before it was a record (no "version"), read the same way
GRAPHS = ("ws", "rn", "both")


class ShardError(ValueError):
    """A --shard value that is not I/N with 1 <= I <= N."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N), 1-based; anything else is a ShardError naming the value."""
    i, slash, n = str(text).strip().partition("/")
    if not slash or not i.isdigit() or not n.isdigit() or not 1 <= int(i) <= int(n):
        raise ShardError(f"shard must be I/N with 1 <= I <= N (e.g. 1/4), got {text!r}")
    return int(i), int(n)


def shard_text(shard: tuple[int, int]) -> str:
    return f"{shard[0]}/{shard[1]}"


@dataclass(frozen=True)
class Timeouts:
    reference: float = 60.0
    convert: float = 30.0
    infer: float = 30.0


@dataclass(frozen=True)
class Config:
    out: Path
    engine: str = "mnn"
    budget: float = 60.0
    max_models: int = 0  # 0: no limit
    # -- the knobs the CLI and the action share (gbft_action.knobs), each declared here once --
    seed: int = knob("seed", "0", *number(int, 0, MAX_SEED, f"an integer from 0 to {MAX_SEED}"), resumed=True,
                     help="the campaign's seed: the same seed, corpus and engine give the same models")
    blocks: tuple[int, int] = knob("blocks", "1-30", parse_blocks, blocks_check, "blocks per model, MIN-MAX",
                                   "MIN-MAX", resumed=True)
    special_share: float = knob("special-share", "0.1", *number(float, 0.0, 1.0, "a number from 0 to 1"),
                                help="share of models that feed special values (NaN, Inf, -0, zero divisors) "
                                     "on purpose", resumed=True)
    chooser: str = knob("chooser", "mcts", *choice(CHOOSERS), resumed=True,
                        help="block chooser: mcts, random, or learned (a policy and a predictor of the engine's code "
                             "each model runs, trained on a coverage build by gbft learn; models of negative test "
                             "value are not run)")
    guide: str = knob("guide", "", text, text_check, resumed=True, metavar="DIR",
                      help="the learned chooser's guide folder (gbft learn train); default: the one gbft ships")
    symptom_policy: dict[str, str] = knob(
        "symptom-policy", "", parse_policy, policy_check, metavar="CLASS=POLICY,...",
        help="report, summary or ignore per symptom class, e.g. precision=report,nan-inf=summary "
             "(default: gbft_action.policy.DEFAULT_POLICY)")
    # Symptom classes a new failure of which is listed, not failing (policy.fails_check).
    list_only: tuple[str, ...] = knob(
        "list-only", ",".join(DEFAULT_LIST_ONLY), parse_list_only, list_only_check, metavar="CLASS,...",
        help="symptom classes whose new failures against the base build are listed, not failing the check, "
             "e.g. precision,nan-inf ('none' for none; default: reference-disagreement)")
    # -- the rest --
    graph: str = "both"
    jobs: int = 2
    corpus: str = ""  # the block corpus; "": the front end's default (each front end's own when mixed)
    timeouts: Timeouts = field(default_factory=Timeouts)
    tolerance: Tolerance = field(default_factory=Tolerance)
    engine_mem_mb: int = 4096
    mutations: bool = True
    state: str = ""  # a directory holding a previous run's state.json (coverage, MCTS)
    minimize_share: float = 0.35  # share of the budget kept for minimising new bugs
    minimize_limit: float = 30.0  # seconds at most per bug
    engine_python: str = ""  # the engine worker's interpreter (a private venv holding a PR's wheel)
    engine_env: dict[str, str] = field(default_factory=dict)  # for the adapter (the command engine's commands)
    base: EngineBuild | None = None  # the base build every model also runs on (the PR verdict)
    confirm_rounds: int = CONFIRM_ROUNDS
    platform_label: str = ""  # shown as the platform in bundles and reports (e.g. arm64-self-hosted)
    platforms: tuple[str, ...] = ()  # engine platforms (gbft_action.platforms); () = this machine
    arm_root: str = ""  # the arm64 root for arm64-qemu
    # The model format the engine converts (frontends.FRONTENDS), or a comma list of them: a
    # mixed campaign (search.mixed), case i going to the i mod k-th.
    frontend: str = "tf"
    shard: tuple[int, int] = (1, 1)  # (I, N): this run is part I of N of one campaign (search.case_seed)
    # Every model also at the engine's "more threads" setting, judged against itself (an XTF).
    threads_oracle: bool = False
    # Which of the engine's code the models ran (engines.coverage): needs an engine built with
    # -fsanitize-coverage=trace-pc; written to engine-coverage.json and summary.json.
    engine_coverage: bool = False
    # The opsets the ONNX front end writes (frontends.OPSETS), the main one first: by default
    # the newest, as exporters write, and one model in four at 17 (search.opsets); (17,) for
    # campaigns made before opsets were chosen (their resume says so).
    opsets: tuple[int, ...] = DEFAULT_OPSETS

    @property
    def opset(self) -> int:
        """The main opset: most models are written at it."""
        return self.opsets[0]

    @property
    def writes_onnx(self) -> bool:
        """Whether a front end of the campaign writes ONNX models (its opset matters)."""
        return any(fe.reference == "onnx" for fe in parse_frontends(self.frontend))

    def validate(self) -> Config:
        """The configuration checked, whoever built it: a ValueError naming the first bad setting
        and what it may be."""
        for ok, name, want, got in self._ranges():
            if not ok:
                raise ValueError(f"--{name} must be {want}, got {got}")
        check_knobs(self)
        check_opsets(self.opsets)
        if self.guide and self.chooser != "learned":
            raise ValueError("--guide is the learned chooser's: add --chooser learned, or leave --guide out")
        self.corpora()  # one corpus for several front ends is an error too
        if self.threads_oracle:
            self._check_threads_oracle()
        return self

    def _ranges(self) -> tuple[tuple[bool, str, str, object], ...]:
        tol, t = self.tolerance, self.timeouts
        return (
            (self.budget > 0, "budget", "a number of seconds above 0", self.budget),
            (self.max_models >= 0, "max-models", "0 (no limit) or more", self.max_models),
            (self.jobs >= 1, "jobs", "1 or more", self.jobs),
            (self.graph in GRAPHS, "graph", "ws, rn or both", self.graph),
            (0.0 <= self.minimize_share < 1.0, "minimize-share", "in [0, 1)", self.minimize_share),
            (self.engine_mem_mb > 0, "engine-mem-mb", "above 0", self.engine_mem_mb),
            (min(tol.rtol, tol.atol) >= 0, "rtol/atol", "0 or more", f"{tol.rtol}/{tol.atol}"),
            (0.0 < tol.min_ratio <= 1.0, "min-ratio", "in (0, 1]", tol.min_ratio),
            (min(t.convert, t.infer) > 0, "timeouts", "above 0 seconds", f"{t.convert}/{t.infer}"),
            (1 <= self.shard[0] <= self.shard[1], "shard", "I/N with 1 <= I <= N", shard_text(self.shard)),
        )

    def _check_threads_oracle(self) -> None:
        if not knowledge_of(self.engine).threads_oracle:
            raise ValueError(f"--threads-oracle: engine {self.engine!r} has no thread setting to vary")
        if threads_env(self.engine).items() <= self.engine_env.items():
            raise ValueError("--threads-oracle: the campaign already runs at the oracle's thread count")
        if self.base is not None:  # the base build runs at one thread: its verdict would compare other runs
            raise ValueError("--threads-oracle: not with a base build (the verdict compares one-thread runs)")

    def corpora(self) -> dict[str, str]:
        """Each front end's corpus file.  ``corpus`` names one front end's blocks, so with
        several front ends it is a usage error: each takes its default corpus."""
        fes = parse_frontends(self.frontend)
        if len(fes) > 1 and self.corpus:
            raise ValueError(f"--corpus {self.corpus}: a corpus is one front end's blocks, and this campaign "
                             f"mixes {self.frontend} (each uses its default corpus; run one front end to "
                             f"use your own)")
        return {fe.name: self.corpus or str(fe.default_corpus) for fe in fes}

    def resumed(self, old: Config) -> Config:
        """This configuration continuing the campaign ``old`` ran: what makes it that campaign
        (its identity: the resumed knobs, engine, graph, corpus, front end, shard, opsets) and how
        it ran the engine (its settings, the thread oracle) come from ``old``; the budget, jobs and
        the rest from this one."""
        same = {k.field: getattr(old, k.field) for k in KNOBS if k.resumed}
        return replace(self, **same, graph=old.graph, engine=old.engine, corpus=old.corpus, mutations=old.mutations,
                       state=old.state, frontend=old.frontend, shard=old.shard, opsets=old.opsets,
                       engine_env={**old.engine_env, **self.engine_env}, threads_oracle=old.threads_oracle,
                       engine_coverage=self.engine_coverage or old.engine_coverage)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**d, "version": CONFIG_VERSION, "out": str(self.out), "blocks": list(self.blocks),
                "list_only": list(self.list_only), "platforms": list(self.platforms),
                "shard": shard_text(self.shard), "opsets": list(self.opsets),
                "timeouts": vars(self.timeouts), "tolerance": self.tolerance.to_json(),
                "base": None if self.base is None else vars(self.base)}

    @staticmethod
    def from_json(d: Any, where: str = "config") -> Config:
        """A stored configuration, each field checked for its type; one an older record lacks
        takes its default (it was made before the field existed)."""
        f = Fields(d, where)
        f.version(CONFIG_VERSION)
        dflt = Config(Path("."))
        blocks = f.ints("blocks") or dflt.blocks
        if len(blocks) != 2:
            raise RecordError(f"{where}: 'blocks' must be [MIN, MAX], got {list(blocks)}")
        try:
            shard = parse_shard(f.str("shard", "1/1"))
        except ShardError as e:
            raise RecordError(f"{where}: {e}") from None
        return Config(
            out=Path(f.str("out", ".")), engine=f.str("engine", dflt.engine), budget=f.float("budget", dflt.budget),
            max_models=f.int("max_models", 0, 0), seed=f.int("seed", 0, 0), blocks=(blocks[0], blocks[1]),
            special_share=f.float("special_share", dflt.special_share), chooser=f.str("chooser", dflt.chooser),
            guide=f.str("guide"), symptom_policy=f.str_map("symptom_policy"),
            list_only=f.strs("list_only") if "list_only" in f.d else DEFAULT_LIST_ONLY,
            graph=f.str("graph", dflt.graph), jobs=f.int("jobs", dflt.jobs, 1), corpus=f.str("corpus"),
            timeouts=_timeouts(f.obj("timeouts")), tolerance=Tolerance.from_json(f.obj("tolerance")),
            engine_mem_mb=f.int("engine_mem_mb", dflt.engine_mem_mb, 1), mutations=f.bool("mutations", True),
            state=f.str("state"), minimize_share=f.float("minimize_share", dflt.minimize_share),
            minimize_limit=f.float("minimize_limit", dflt.minimize_limit), engine_python=f.str("engine_python"),
            engine_env=f.str_map("engine_env"), base=f.opt("base", _build),
            confirm_rounds=f.int("confirm_rounds", CONFIRM_ROUNDS, 1), platform_label=f.str("platform_label"),
            platforms=f.strs("platforms"), arm_root=f.str("arm_root"), frontend=f.str("frontend", "tf"), shard=shard,
            threads_oracle=f.bool("threads_oracle"), engine_coverage=f.bool("engine_coverage"),
            opsets=_opsets(f))


def _timeouts(f: Fields) -> Timeouts:
    t = Timeouts()
    return Timeouts(f.float("reference", t.reference), f.float("convert", t.convert), f.float("infer", t.infer))


def _build(f: Fields) -> EngineBuild:
    return EngineBuild(f.str("engine", "mnn"), f.str("python"), f.str_map("env"), f.str("source"))


def _opsets(f: Fields) -> tuple[int, ...]:
    """Made before opsets were mixed: its one opset; before opsets were chosen: 17."""
    raw = f.d["opsets"] if "opsets" in f.d else [f.d.get("opset", LEGACY_OPSET)]
    try:
        return check_opsets(raw if isinstance(raw, list) else [raw], f"{f.where}: opsets")
    except ValueError as e:
        raise RecordError(str(e)) from None


def configure(values: Mapping[str, Any], on: Config | None = None, resume: Config | None = None) -> Config:
    """The one way a configuration is made, ``values`` by field.  From the command line or the
    action's inputs (over the defaults): checked, a ValueError naming the bad setting.  Over a
    stored one (``on``: merge's, from its shards' record): as stored, since it was checked when it
    was made and a check added since must not refuse an old output.  ``resume``: the campaign a
    run continues, whose identity replaces the command line's (``Config.resumed``) once the
    command line is checked, as before there was one function."""
    if on is not None:
        return replace(on, **values)
    cfg = Config(**values).validate()
    return cfg.resumed(resume) if resume is not None else cfg


# -- the knobs (gbft_action.knobs), read from the fields above --------------------------------

KNOBS: tuple[Knob, ...] = tuple(replace(f.metadata["knob"], field=f.name) for f in fields(Config)
                                if "knob" in f.metadata)


def check_knobs(cfg: Config) -> None:
    """Every knob's value in ``cfg`` against its range: a ValueError naming it."""
    for k in KNOBS:
        try:
            k.check(getattr(cfg, k.field))
        except ValueError as e:
            raise ValueError(f"--{k.name}: {e}") from None


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per knob, its value parsed and checked by the knob (argparse names the flag)."""
    for k in KNOBS:
        parser.add_argument(f"--{k.name}", dest=k.field, type=_argtype(k), default=k.value, help=k.help,
                            metavar=k.metavar)


def _argtype(k: Knob) -> Callable[[str], Any]:
    def conv(text: str) -> Any:
        try:
            return k.parse(text)
        except ValueError as e:  # argparse shows an ArgumentTypeError's own words
            raise argparse.ArgumentTypeError(str(e)) from None
    return conv


def from_args(args: argparse.Namespace) -> dict[str, object]:
    """The knobs' values from parsed flags, by Config field."""
    return {k.field: getattr(args, k.field) for k in KNOBS}


def from_texts(texts: Mapping[str, str]) -> dict[str, Any]:
    """The knobs' values from inputs by name (an empty or absent input is the default); a
    ValueError names the input."""
    out = {}
    for k in KNOBS:
        raw = texts.get(k.name, "").strip() or k.default
        try:
            out[k.field] = k.parse(raw)
        except ValueError as e:
            raise ValueError(f"input '{k.name}': {e}") from None
    return out


__all__ = ["CONFIG_VERSION", "Config", "KNOBS", "MAX_BLOCKS", "ShardError", "Timeouts", "add_flags", "configure",
           "from_args", "from_texts", "parse_shard", "shard_text"]
