"""A campaign's record (``campaign.json``): its identity (what must match for a resumed run or a
shard to be the same campaign), the configuration it ran with, its sessions, and for a merged
output what each shard did.  ``Campaign`` and ``merge`` write it; ``--resume`` and ``merge`` read
it through ``CampaignRecord.read``."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

from ..frontends import LEGACY_OPSET
from .config import Config, shard_text
from .enums import Stop
from .io import Fields, RecordError, read_record, write_record

CAMPAIGN_VERSION = 1  # 0: written before records (no "version" key), read the same way


@dataclass(frozen=True)
class Session:
    """One run of the loop: how long, how many models, why it stopped."""

    elapsed_s: float
    models: int
    stop_reason: Stop | None

    def to_json(self) -> dict[str, object]:
        return {"elapsed_s": self.elapsed_s, "models": self.models, "stop_reason": str(self.stop_reason or "")}

    @staticmethod
    def from_json(d: Any, where: str) -> Session:
        f = Fields(d, where)
        return Session(f.float("elapsed_s"), f.int("models", 0, 0), Stop.of_text(f.str("stop_reason")))


@dataclass(frozen=True)
class ShardPart:
    """What a merged output says of one of its shards."""

    sessions: tuple[Session, ...]
    models: int
    complete: bool
    platforms: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"sessions": [s.to_json() for s in self.sessions], "models": self.models, "complete": self.complete,
                "platforms": list(self.platforms)}

    @staticmethod
    def from_json(d: Any, where: str) -> ShardPart:
        f = Fields(d, where)
        return ShardPart(_sessions(f), f.int("models", 0, 0), f.bool("complete"), f.strs("platforms"))


@dataclass(frozen=True)
class CampaignIdentity:
    """What must match for a resumed run, or the shards of one merge, to be one campaign.
    Compared whole.  None is a field the JSON does not hold: the front end when it is the first
    one (tf) and the shard when unsharded, so outputs written before they existed still resume;
    what an older output never wrote stays absent and makes it another campaign, as before."""

    seed: int | None = None
    blocks: tuple[int, ...] | None = None
    graph: str | None = None
    engine: str | None = None
    corpus_sha256: str | None = None
    chooser: str | None = None
    mutations: bool | None = None
    special_share: float | None = None
    state_sha256: str | None = None
    platforms: tuple[str, ...] | None = None
    base: str | None = None  # the base build's source ("" without one)
    frontend: str | None = None
    shard: str | None = None  # I/N
    shards: int | None = None  # a merged output: how many shards it joined
    opset: int | None = None  # the ONNX opset, when an ONNX front end writes another than 17
    older_opsets: tuple[int, ...] | None = None  # ... and the others some models are at (search.opsets)
    guide_sha256: str | None = None  # the learned chooser's guide (its files' digest): its models depend on it
    # Keys this gbft does not know (a newer writer's), kept so that they still count.
    extra: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in self._known().items() if v is not None}
        return {**d, **{k: json.loads(v) for k, v in self.extra}}

    def differs(self, other: CampaignIdentity) -> list[str]:
        """The fields two identities differ in."""
        a, b = self.to_json(), other.to_json()
        return sorted(k for k in {*a, *b} if a.get(k) != b.get(k))

    def _known(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}

    @staticmethod
    def from_json(d: Any, where: str = "identity") -> CampaignIdentity:
        f = Fields(d, where)
        known = {x.name for x in fields(CampaignIdentity)} - {"extra"}
        has = f.d.keys()
        def opt(key: str, read: Callable[[str], Any]) -> Any:
            return read(key) if key in has and f.d[key] is not None else None
        return CampaignIdentity(
            opt("seed", f.int), opt("blocks", f.ints), opt("graph", f.str), opt("engine", f.str),
            opt("corpus_sha256", f.str), opt("chooser", f.str), opt("mutations", f.bool),
            opt("special_share", f.float), opt("state_sha256", f.str), opt("platforms", f.strs),
            opt("base", f.str), opt("frontend", f.str), opt("shard", f.str), opt("shards", f.int), opt("opset", f.int),
            opt("older_opsets", f.ints), opt("guide_sha256", f.str),
            tuple(sorted((str(k), json.dumps(v, sort_keys=True)) for k, v in f.d.items() if k not in known)))


@dataclass(frozen=True)
class CampaignRecord:
    identity: CampaignIdentity
    config: Config
    sessions: tuple[Session, ...] = ()
    tool_version: str = ""
    merged: dict[str, ShardPart] | None = None  # a merged output: its shards (I/N) -> what each did
    version: int = CAMPAIGN_VERSION

    @staticmethod
    def read(out: Path) -> CampaignRecord:
        path = out / "campaign.json"
        return CampaignRecord.from_json(read_record(path, "campaign record"), str(path))

    def write(self, out: Path) -> None:
        write_record(out / "campaign.json", self.to_json())

    def to_json(self) -> dict[str, object]:
        d = {"version": self.version, "identity": self.identity.to_json(), "config": self.config.to_json(),
             "sessions": [s.to_json() for s in self.sessions], "tool_version": self.tool_version}
        if self.merged is not None:
            d["merged"] = {"shards": {k: v.to_json() for k, v in self.merged.items()}}
        return d

    @staticmethod
    def from_json(d: Any, where: str = "campaign.json") -> CampaignRecord:
        f = Fields(d, where)
        f.version(CAMPAIGN_VERSION)
        merged = f.opt("merged", lambda m: {str(k): ShardPart.from_json(v, f"{where}: merged: {k}")
                                            for k, v in (m.mapping("shards") or {}).items()})
        return CampaignRecord(CampaignIdentity.from_json(f.mapping("identity") or {}, f"{where}: identity"),
                              _config(f), _sessions(f),
                              f.str("tool_version"), merged)


def _config(f: Fields) -> Config:
    if not f.mapping("config"):
        raise RecordError(f"{f.where}: no config in it")
    return Config.from_json(f.d["config"], f"{f.where}: config")


def campaign_identity(cfg: Config, corpus_sha256: str, state_sha256: str, guide_sha256: str | None) -> CampaignIdentity:
    """The identity of the campaign ``cfg`` runs, given the digests of the files it names."""
    return CampaignIdentity(
        cfg.seed, tuple(cfg.blocks), cfg.graph, cfg.engine, corpus_sha256, cfg.chooser, cfg.mutations,
        cfg.special_share, state_sha256, tuple(cfg.platforms), cfg.base.source if cfg.base else "",
        # The front end only when not the first one, the shard only when there are shards:
        # outputs written before either existed keep their identity.
        cfg.frontend if cfg.frontend != "tf" else None,
        shard_text(cfg.shard) if cfg.shard[1] > 1 else None,
        # The ONNX opset only when not 17, the others only when there are others: outputs
        # written before opsets were chosen, or mixed, keep theirs.
        opset=cfg.opset if cfg.writes_onnx and cfg.opset != LEGACY_OPSET else None,
        older_opsets=cfg.opsets[1:] if cfg.writes_onnx and len(cfg.opsets) > 1 else None,
        guide_sha256=guide_sha256)


def _sessions(f: Fields) -> tuple[Session, ...]:
    return tuple(Session.from_json(x, f"{f.where}: sessions[{i}]") for i, x in enumerate(f.list("sessions")))
