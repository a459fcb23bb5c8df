"""A bug bundle's record (``bugs/<id>/meta.json``): what the case was, where it was seen, what
the minimiser and the diagnosis made of it.  bugs.bundle.BugBook is its one writer; every
reader (the reporter, replay, merge, the campaign) goes through ``BundleMeta.read``.

A bundle is a pull request's artifact: its meta is untrusted data.  ``from_json`` takes each
field only with its exact type; a text field may still hold anything, and every place that
shows one sanitises it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from .enums import Status, Symptom
from .io import Fields, RecordError, read_record, write_record
from .keys import Fingerprint, RootKey
from .tolerance import Tolerance

BUNDLE_VERSION = 1  # 0: written before records (no "version" key), read the same way


@dataclass(frozen=True)
class EngineInfo:
    """What an engine worker says of itself (its hello, read once here): name, version, machine,
    how to run the build again where the adapter says (a command engine's commands, an engine's
    settings), the model formats it reads.  The campaign adds which platform it ran on and where
    the build came from.  Bundles, the summary (its ``engine``, its platforms' machines, the base
    build of its verdict) and reports all hold this one record, each file in its own form."""

    engine: str = ""
    version: str = ""
    machine: str = ""
    settings: dict[str, str] = field(default_factory=dict)  # e.g. MNN's precision mode
    commands: dict[str, str] = field(default_factory=dict)
    formats: tuple[str, ...] | None = None  # None: the adapter did not say (it reads any)
    platform: str = ""  # the platform it ran on (gbft_action.platforms), or the campaign's label
    source: str = ""  # where the build came from (a wheel, a folder), as reports show it

    @staticmethod
    def of_hello(hello: Mapping[str, object]) -> EngineInfo:
        formats = hello.get("formats")
        return EngineInfo(str(hello.get("engine", "")), str(hello.get("version", "")), str(hello.get("machine", "")),
                          _texts(hello.get("settings")), _texts(hello.get("commands")),
                          tuple(str(f) for f in formats) if isinstance(formats, (list, tuple)) else None)

    @property
    def where(self) -> str:
        """Where it ran, as a bundle names it: the platform, else the machine."""
        return self.platform or self.machine

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"engine": self.engine, "version": self.version, "machine": self.machine}
        return {**d, **{k: v for k, v in (("commands", self.commands), ("settings", self.settings)) if v}}

    @staticmethod
    def from_json(f: Fields) -> EngineInfo:
        return EngineInfo(f.str("engine"), f.str("version"), f.str("machine"), f.str_map("settings"),
                          f.str_map("commands"))


@dataclass(frozen=True)
class MinimizeStats:
    """What the minimiser reports: calls, seconds, sizes from and to (nodes, inputs, ...), and
    whether it finished within its time limit (False: cut short)."""

    calls: int = 0
    seconds: float = 0.0
    complete: bool = True
    sizes_from: tuple[int, ...] = ()
    sizes_to: tuple[int, ...] = ()
    note: str = ""  # e.g. no smaller model reproduces

    def to_json(self) -> dict[str, object]:
        d = {"calls": self.calls, "seconds": self.seconds, "complete": self.complete,
             "from": list(self.sizes_from), "to": list(self.sizes_to)}
        return {**d, "note": self.note} if self.note else d

    @staticmethod
    def from_json(f: Fields) -> MinimizeStats:
        return MinimizeStats(f.int("calls"), f.float("seconds"), f.bool("complete", True), f.ints("from"), f.ints("to"),
                             f.str("note"))


# How a failure only the thread-count oracle's run showed reads (pipeline.Lane._cross_threads).
MORE_THREADS = "at more threads"


@dataclass(frozen=True)
class BundleMeta:
    id: str
    fingerprint: Fingerprint
    title: str
    status: Status
    stage: str
    engine: EngineInfo
    op: str = ""
    node: str = ""  # the node where the case diverged (the minimised model's, once minimised)
    message: str = ""
    seed: int | None = None  # the campaign's
    symptom: Symptom | None = None  # None: a case the campaign could not classify (an old record)
    direction: str = ""  # a NaN/Inf difference's
    after: tuple[int, ...] = ()  # the cases the worker ran before this one (a crash may be their damage)
    crosscheck: str = ""
    case_index: int = 0
    case_seed: int = 0  # the case graph's own seed
    graph_hash: str = ""
    tool_version: str = ""
    platforms: tuple[str, ...] = ()
    occurrences: int = 1
    first_seen: str = ""
    last_seen: str = ""
    tolerance: Tolerance = Tolerance()
    original_size: int = 0
    minimized_size: int = 0
    minimized: bool = False
    flaky: bool | None = None  # its own replays disagreed (None: not checked)
    minimize: MinimizeStats | None = None
    root_cause: RootKey | None = None  # the root cause the bundle shows (the canonical one's)
    alone: str = ""  # the blamed operator shown alone (alone.json), or ""
    shard: str = ""  # merged from a shard (I/N): its own case index there
    shard_case_index: int | None = None
    version: int = BUNDLE_VERSION

    # -- the one reader and the one writer -------------------------------------------
    @property
    def needs_threads(self) -> bool:
        """A bug the thread-count oracle found (an XTF, or a failure only at more threads): it
        shows only with that run (a replay, the repro)."""
        return self.fingerprint.status == "XTF" or self.message.startswith(MORE_THREADS)

    @staticmethod
    def read(bundle: Path) -> BundleMeta | None:
        """A bundle's meta.json (None when there is none: a shard killed while writing it)."""
        path = bundle / "meta.json"
        return BundleMeta.from_json(read_record(path, "bug bundle record"), str(path)) if path.exists() else None

    def write(self, bundle: Path) -> None:
        write_record(bundle / "meta.json", self.to_json())

    def with_(self, **changes: Any) -> BundleMeta:
        return replace(self, **changes)

    @property
    def frontend(self) -> str:
        return self.fingerprint.frontend or "tf"

    @property
    def settled(self) -> bool:
        """Its root cause is settled: shown alone, or minimised without being cut short."""
        return bool(self.root_cause and self.root_cause.isolated) or (self.minimize is None or self.minimize.complete)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {
            "version": self.version, "id": self.id, "fingerprint": self.fingerprint.to_json(), "title": self.title,
            "status": self.status.value, "stage": self.stage, "op": self.op, "node": self.node, "message": self.message,
            "seed": self.seed, "symptom": self.symptom.value if self.symptom else "", "direction": self.direction,
            "after": list(self.after), "crosscheck": self.crosscheck, "case_index": self.case_index,
            "case_seed": self.case_seed, "graph_hash": self.graph_hash, "tool_version": self.tool_version,
            "engine": self.engine.to_json(), "platforms": list(self.platforms), "occurrences": self.occurrences,
            "first_seen": self.first_seen, "last_seen": self.last_seen, "tolerance": self.tolerance.to_json(),
            "original_size": self.original_size, "minimized_size": self.minimized_size, "minimized": self.minimized,
            "flaky": self.flaky}
        if self.minimize is not None:
            d["minimize"] = self.minimize.to_json()
        if self.root_cause is not None:
            d["root_cause"] = self.root_cause.to_json()
        if self.alone:
            d["alone"] = self.alone
        if self.shard:
            d.update(shard=self.shard, shard_case_index=self.shard_case_index)
        return d

    @staticmethod
    def from_json(d: Any, where: str = "meta.json") -> BundleMeta:
        f = Fields(d, where)
        f.version(BUNDLE_VERSION)
        if not isinstance(f.d.get("fingerprint"), dict) or not isinstance(f.d.get("engine"), dict):
            raise RecordError(f"{where}: no fingerprint or engine in it")
        if not re.fullmatch(r"[0-9a-f]{6,64}", f.str("id")):  # it names the bundle's folder and issue markers
            raise RecordError(f"{where}: 'id' must be a fingerprint id (hex digits), got {f.str('id')[:40]!r}")
        return BundleMeta(
            id=f.str("id"), fingerprint=Fingerprint.from_json(f.d["fingerprint"], f"{where}: fingerprint"),
            title=f.str("title"), status=f.enum("status", Status, "DCF"), stage=f.str("stage"),
            engine=EngineInfo.from_json(f.obj("engine")), op=f.str("op"), node=f.str("node"), message=f.str("message"),
            seed=f.opt_int("seed"), symptom=Symptom(f.str("symptom")) if f.str("symptom") else None,
            direction=f.str("direction"), after=f.ints("after"), crosscheck=f.str("crosscheck"),
            case_index=f.int("case_index"), case_seed=f.int("case_seed"), graph_hash=f.str("graph_hash"),
            tool_version=f.str("tool_version"), platforms=f.strs("platforms"), occurrences=f.int("occurrences", 1, 0),
            first_seen=f.str("first_seen"), last_seen=f.str("last_seen"),
            tolerance=Tolerance.from_json(f.obj("tolerance")),
            original_size=f.int("original_size", 0, 0), minimized_size=f.int("minimized_size", 0, 0),
            minimized=f.bool("minimized"), flaky=f.opt_bool("flaky"), minimize=f.opt("minimize", MinimizeStats.from_json),
            root_cause=RootKey.from_json(f.d["root_cause"], f"{where}: root_cause") if f.d.get("root_cause") else None,
            alone=f.str("alone"), shard=f.str("shard"), shard_case_index=f.opt_int("shard_case_index"),
            version=BUNDLE_VERSION)


def _texts(v: object) -> dict[str, str]:
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, Mapping) else {}
