"""``gbft merge``: the outputs of a campaign's shards (or of earlier merges) as one output.

What a shard wrote is turned into the merged form once, and everything else is a pure
function of the union of those forms, so merging is associative and idempotent: merging
a shard twice, or a merged output with one of its inputs, gives the same files.

- Cases: shard I of N's case i becomes case ``i * N + I - 1`` of the campaign (``index``;
  ``shard`` and ``shard_index`` say where it came from).  Cases are keyed by that index:
  the same case in two inputs is kept once (the smaller record, canonical JSON, if they
  differ), and ``cases.jsonl`` lists them in index order.  Kept case folders are copied as
  ``cases/<index>-<hash>``.
- Bundles: one per fingerprint id, the canonical one kept (minimised first, then diagnosed,
  then the smallest model, then the earliest case); occurrences are the merged cases'
  count, platforms the union.  Root causes are assembled again over the merged failures
  (``summarize.summarize_all``): one per root-cause key, with its canonical bundle.
- Known bugs: counts are what was known before the campaign (the same ``--state`` for
  every shard) plus the merged cases, never the inputs' counts summed.
- Search state: coverage is the union; each shard's MCTS tree and graph arms are kept per
  shard (``shards`` in state.json) and combined (``mcts.combine_trees``, ``GraphArms.mean``)
  so that the next run's ``--state`` sees one campaign.
- Verdicts (with a base build): aggregated again over the merged cases, each fingerprint's
  confirmation taken from an input that confirmed it.

A shard that died half-way (no summary.json, a torn last line in cases.jsonl) merges with
what it completed and a one-line warning naming it; one that died before it started (no
campaign.json) is skipped with such a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
import hashlib
import json
import os
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, TypeVar

from . import __version__
from .bugs import triage
from .bugs.bundle import BugBook, known_of
from .records import BundleMeta, EngineInfo, RecordError, Summary, Verdict
from .records.summary import Diagnosis, ShardRun
from .records.known import KnownBug
from .records.campaign import CampaignIdentity, CampaignRecord, ShardPart
from .records.engine_coverage import EngineCoverage
from .records.case import CASES_FILE, CaseRecord, read_cases
from .records.state import ShardSearch
from .records.state import STATE_FILE
from .summarize import SummaryInputs, TriageInputs, first_records, summarize_all
from .frontends import LEGACY_OPSET
from .records.config import configure, parse_shard, shard_text
from .search.coverage import Coverage
from .search.guided import GraphArms
from .search.mcts import combine_trees
from .search.opsets import union_of_opsets
from .statefile import read_state
from .store import ResultStore


class MergeError(ValueError):
    """Inputs that are not parts of one campaign, or not fuzz outputs: one line."""


@dataclass
class Part:
    """One input, its cases in the merged form."""

    out: Path
    record: CampaignRecord
    merged: bool  # an earlier merge's output
    n: int  # shards of the campaign
    cases: dict[int, CaseRecord] = field(default_factory=dict)  # merged index -> record
    sources: dict[int, Path] = field(default_factory=dict)  # merged index -> its kept case folder here
    summary: Summary | None = None
    state: dict[str, Any] = field(default_factory=dict)
    torn: bool = False

    @property
    def shards(self) -> dict[str, ShardPart]:
        """The shards this input holds -> what the campaign record says of each."""
        if self.record.merged is not None:
            return dict(self.record.merged)
        return {shard_text(self.record.config.shard): ShardPart(self.record.sessions, len(self.cases),
                                             self.summary is not None and not self.torn,
                                             tuple(sorted(self.summary.platforms if self.summary else ())))}


def merge(inputs: list[Path], out: Path, warn: Callable[[str], None] = lambda _: None) -> Summary:
    """Merge ``inputs`` into ``out`` (replaced as a whole; it may be one of the inputs)."""
    out = out.resolve()  # the paths written (bundles, bugs_dir) are the same whatever the working folder
    _check_out(inputs, out)
    started = [p for p in inputs if (p / "campaign.json").exists()]
    if not started:
        raise MergeError(f"{inputs[0] if inputs else '(none)'}: no campaign.json there (not a gbft fuzz output)")
    for p in inputs:
        if p not in started:  # a matrix job that failed in its set-up uploads no campaign
            warn(f"warning: {p}: no campaign.json (a shard that died before it started?): skipped")
    parts = [_read(p, warn) for p in started]
    _check_one_campaign(parts)
    stage = out.parent / f".{out.name}.merging"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        summary = _write(parts, stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _replace(stage, out)
    return summary


# -- reading ------------------------------------------------------------------------
def _read(out: Path, warn: Callable[[str], None]) -> Part:
    try:
        record = CampaignRecord.read(out)
    except RecordError as e:
        raise MergeError(str(e)) from None
    merged = record.merged is not None
    if "," in record.config.frontend:  # its state is one per front end (search.mixed)
        raise MergeError(f"{out}: shards of a mixed front-end campaign ({record.config.frontend}) cannot be "
                         f"merged yet; run one front end per shard matrix")
    shard = (1, record.identity.shards or 1) if merged else record.config.shard
    part = Part(out, record, merged, shard[1])
    try:
        records, _, part.torn = read_cases(out / CASES_FILE)
    except RecordError as e:
        raise MergeError(str(e)) from None
    for rec in records:
        m = rec if merged else _merged_case(rec, shard)
        part.cases[m.index] = m
        if rec.case_dir:
            part.sources[m.index] = out / rec.case_dir
    if (out / "summary.json").exists():
        try:
            part.summary = Summary.read(out)
        except RecordError as e:
            raise MergeError(str(e)) from None
    if (out / STATE_FILE).exists():
        part.state = read_state(out / STATE_FILE, "search state (coverage, MCTS)")
    if not merged and (part.torn or not part.summary):
        why = ", ".join(x for x, bad in (("its last case cut mid-line", part.torn),
                                        ("no summary.json", not part.summary)) if bad)
        warn(f"warning: {out}: shard {shard_text(shard)} did not finish ({why}): "
             f"merging its {len(part.cases)} complete cases")
    return part


def _merged_case(rec: CaseRecord, shard: tuple[int, int]) -> CaseRecord:
    """A shard's case record in the merged form: the campaign's index, where it came from."""
    index = rec.index * shard[1] + shard[0] - 1
    return replace(rec.with_index(index), shard=shard_text(shard), shard_index=rec.index,
                   case_dir=f"cases/{index:06d}-{rec.hash}" if rec.case_dir else "")


def _check_out(inputs: list[Path], out: Path) -> None:
    """``out`` is replaced as a whole: only an input, an earlier merge or an empty folder may be."""
    if not out.exists() or out in {p.resolve() for p in inputs}:
        return
    merged = (out / "campaign.json").exists() and CampaignRecord.read(out).merged is not None
    if not merged and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"--out {out}: exists and is neither an input nor an earlier merge; "
                         f"give a new folder (it would be replaced)")


def _identity(part: Part) -> CampaignIdentity:
    """A shard's identity as the merged campaign's: without what differs per shard (which shard,
    and its platforms: a shard matrix may split them), with how many shards."""
    return replace(part.record.identity, shard=None, platforms=None, shards=part.n)


def _check_one_campaign(parts: list[Part]) -> None:
    if not parts:
        raise MergeError("nothing to merge: give the output folders of the shards")
    first = _identity(parts[0])
    for p in parts[1:]:
        if _identity(p) != first:
            raise MergeError(f"{p.out} is another campaign than {parts[0].out} (they differ in "
                             f"{', '.join(first.differs(_identity(p)))}): merge only the shards of one seed, "
                             f"corpus and engine")


T = TypeVar("T")


def _pick(candidates: list[T], view: Callable[[T], object] | None = None) -> T:
    """One of equal records (or ``view`` of each), whatever the order of the inputs: the least
    in canonical JSON order."""
    return min(candidates, key=lambda r: json.dumps(view(r) if view else r, sort_keys=True, default=str))


# -- writing ------------------------------------------------------------------------
def _write(parts: list[Part], stage: Path, out: Path) -> Summary:
    records = _cases(parts, stage)
    occurrences = _occurrences(records)
    shards = _shards(parts)
    book = _bundles(parts, stage, occurrences)
    book.known, book.before = _known(parts, records, occurrences, book, out)
    book.seen_this_run = dict(occurrences)
    book.save()
    state = _state(parts, shards)
    ResultStore(stage).write_json(STATE_FILE, state)
    summary = _summary(parts, records, shards, book, state, stage, out, _engine_coverage(parts, stage))
    _campaign_record(parts, shards, stage, out)
    return summary


def _cases(parts: list[Part], stage: Path) -> list[CaseRecord]:
    by: dict[int, list[tuple[CaseRecord, Path | None]]] = {}
    for p in parts:
        for i, rec in p.cases.items():
            by.setdefault(i, []).append((rec, p.sources.get(i)))
    records = []
    for i in sorted(by):
        # One of equal-indexed records, whatever the order of the inputs (canonical JSON order).
        chosen = min((r for r, _ in by[i]), key=lambda r: r.line())
        src = next((s for r, s in by[i] if s is not None and r == chosen), None)
        if src is not None and src.is_dir():
            _copy_tree(src, stage / chosen.case_dir)
        records.append(chosen)
    ResultStore(stage).write_records(records)
    return records


def _occurrences(records: list[CaseRecord]) -> dict[str, int]:
    """Cases per fingerprint (each platform's failure counts, as the campaign counts them)."""
    n: dict[str, int] = {}
    for rec in records:
        for r in rec.failures():
            n[r.key] = n.get(r.key, 0) + 1
    return n


def _shards(parts: list[Part]) -> dict[str, ShardPart]:
    """Each shard's campaign-record entry, from the input holding most of its cases."""
    every: dict[str, list[ShardPart]] = {}
    for p in parts:
        for k, v in p.shards.items():
            every.setdefault(k, []).append(v)
    return {k: max(vs, key=lambda v: (v.models, json.dumps(v.to_json(), sort_keys=True)))
            for k, vs in sorted(every.items(), key=lambda kv: parse_shard(kv[0]))}


def _bundles(parts: list[Part], stage: Path, occurrences: dict[str, int]) -> BugBook:
    """Each fingerprint's canonical bundle, its occurrences and platforms those of the campaign."""
    every: dict[str, list[tuple[BundleMeta, Path]]] = {}
    for p in parts:
        for d in sorted((p.out / "bugs").glob("*/")) if (p.out / "bugs").is_dir() else []:
            meta = BundleMeta.read(d)  # None: a shard killed while writing it
            if meta is not None and meta.id == d.name and (d / "graph.json").exists():  # not killed half-written
                every.setdefault(d.name, []).append((meta if p.merged else _merged_meta(meta, p), d))
    book = BugBook(stage)
    for fid, cands in sorted(every.items()):
        meta, src = min(cands, key=lambda c: _bundle_rank(c[0]))
        dest = book.bundle_dir(fid)
        shutil.copytree(src, dest)  # copied, not linked: minimising rewrites a bundle's files in place
        metas = [m for m, _ in cands]
        meta.with_(occurrences=occurrences.get(fid, meta.occurrences),
                   platforms=tuple(sorted({x for m in metas for x in m.platforms})),
                   first_seen=min(m.first_seen for m in metas), last_seen=max(m.last_seen for m in metas)).write(dest)
    return book


def _merged_meta(meta: BundleMeta, part: Part) -> BundleMeta:
    shard = part.record.config.shard
    local = meta.case_index
    return meta.with_(case_index=local * shard[1] + shard[0] - 1, shard=shard_text(shard), shard_case_index=local)


def _bundle_rank(meta: BundleMeta) -> tuple[Any, ...]:
    """The canonical bundle of a fingerprint: minimised, diagnosed, small, early."""
    return (not meta.minimized, meta.root_cause is None, meta.minimized_size, meta.case_index,
            json.dumps(meta.to_json(), sort_keys=True, default=str))


def _known(parts: list[Part], records: list[CaseRecord], occurrences: dict[str, int], book: BugBook,
           out: Path) -> tuple[dict[str, KnownBug], set[str]]:
    """known_bugs.json of the campaign, and the fingerprints known before it (--state).

    Each input's count is what it knew before plus its own cases; the part known before is
    the same for every shard (one --state), so it is taken once, not summed.  A fingerprint
    only a killed shard met (it died before writing its known bugs) is entered from its
    cases and bundle: the next run must not report it as new again."""
    every: dict[str, list[tuple[KnownBug, int]]] = {}
    for p in parts:
        own = _occurrences(list(p.cases.values()))
        for fid, entry in known_of(p.out).items():
            every.setdefault(fid, []).append((entry, max(0, entry.count - own.get(fid, 0))))
    known, before = {}, set()
    for fid, cands in sorted(every.items()):
        earlier = max(b for _, b in cands)
        entries = [e for e, _ in cands]
        pick = _pick(entries, KnownBug.to_json)
        known[fid] = replace(pick, count=earlier + occurrences.get(fid, 0),
                             platforms=tuple(sorted({x for e in entries for x in e.platforms})),
                             first_seen=min(e.first_seen for e in entries), last_seen=max(e.last_seen for e in entries),
                             # a bundle of this campaign: where the merged output keeps it
                             bundle=str(out / "bugs" / fid) if occurrences.get(fid) else pick.bundle)
        if earlier:
            before.add(fid)
    firsts = first_records(records)
    for fid in sorted(set(occurrences) - set(known)):
        fp, meta = firsts[fid].fingerprint, book.meta(fid)
        assert fp is not None  # a record with a key has its fingerprint
        known[fid] = KnownBug(fp, fp.title, meta.first_seen if meta else "", meta.last_seen if meta else "",
                              occurrences[fid], meta.platforms if meta else (), str(out / "bugs" / fid) if meta else "")
    return known, before


def _state(parts: list[Part], shards: dict[str, ShardPart]) -> dict[str, object]:
    """state.json of the campaign: coverage unioned, each shard's search state kept, combined;
    for a campaign of several opsets (search.opsets), so for each opset's state."""
    opsets = list(dict.fromkeys(o for p in parts for o in (p.state.get("opsets") or {})))
    if opsets:
        return {"opsets": {o: _state([replace(p, state=p.state["opsets"][o]) for p in parts
                                      if o in (p.state.get("opsets") or {})], shards) for o in opsets}}
    per: dict[str, list[ShardSearch]] = {}
    covs, bases, heads = [], [], []
    for p in parts:
        if not p.state:
            continue
        heads.append(p.state)
        covs.append(Coverage.from_json(p.state["coverage"]))
        bases.append(p.state.get("base") or {"mcts": None, "graph_arms": None})
        for k, v in _own_search(p).items():
            per.setdefault(k, []).append(v)
    if not heads:
        return {}
    kept = {k: max(vs, key=ShardSearch.rank)
            for k, vs in sorted(per.items(), key=lambda kv: parse_shard(kv[0])) if k in shards}
    base = _pick(bases)
    cov = covs[0]
    for c in covs[1:]:
        cov = cov.union(c)
    trees = [v.mcts for v in kept.values() if v.mcts]
    arms = [v.graph_arms for v in kept.values() if v.graph_arms]
    head = _pick(heads)
    return {**({"opset": head["opset"]} if "opset" in head else {}),  # an ONNX run's: search.opsets
            "chooser": head["chooser"], "mutations": head["mutations"], "coverage": cov.to_json(),
            "mcts": combine_trees(base["mcts"], trees) if trees else None,
            "graph_arms": GraphArms.mean(arms), "base": base,
            "generated": sum(v.generated for v in kept.values()),
            "discarded": sum(v.discarded for v in kept.values()), "shards": {k: v.to_json() for k, v in kept.items()}}


def _own_search(p: Part) -> dict[str, ShardSearch]:
    """The shards' own search states an input holds: an earlier merge's, or a shard's own."""
    where = f"{p.out / STATE_FILE}"
    if p.merged:
        return {k: ShardSearch.from_json(v, f"{where}: shards: {k}") for k, v in (p.state.get("shards") or {}).items()}
    own = ShardSearch.from_json({k: p.state[k] for k in ("mcts", "graph_arms", "generated", "discarded")
                                 if p.state.get(k) is not None}, where)
    graph = ((p.summary.coverage if p.summary else None) or {}).get("graph", {})
    return {next(iter(p.shards)): replace(own, graph=graph, models=len(p.cases))}


def _engine_coverage(parts: list[Part], stage: Path) -> dict[str, object]:
    """The shards' engine coverage joined (a block counts once) into engine-coverage.json; the
    summary's ``coverage.engine`` ({}: no shard took it)."""
    read = []
    for p in parts:
        try:
            ec = EngineCoverage.read(p.out)
        except RecordError as e:
            raise MergeError(str(e)) from None
        if ec is not None:
            read.append(ec)
    if not read:
        return {}
    ec = EngineCoverage.union(read, sum(e.models for e in read))
    ec.write(stage)
    return {"engine": ec.summary()}


def _summary(parts: list[Part], records: list[CaseRecord], shards: dict[str, ShardPart],
             book: BugBook, state: dict[str, object], stage: Path, out: Path, engine_cov: dict[str, object]) -> Summary:
    """summary.json of the campaign, written as the campaign writes its own."""
    head = _head(parts)
    rec = head.record
    cfg = configure({"out": out}, on=rec.config)
    sessions = [s for v in shards.values() for s in v.sessions]
    summaries = [p.summary for p in parts if p.summary is not None]
    platform_info = {name: EngineInfo(machine=s.platforms[name].machine or "" if name in s.platforms else "")
                     for s in summaries for name in s.platform_order}
    engine = _pick([s.engine for s in summaries] or [EngineInfo()], asdict)  # summarize names a nameless one
    elapsed = sum(s.elapsed_s for s in sessions)
    base = _pick([s.triage.base for s in summaries if s.triage is not None] or [EngineInfo()], asdict)
    done = summarize_all(SummaryInputs(
        records=records, sessions=sessions, cfg=cfg, engine=engine, platform_info=dict(sorted(platform_info.items())),
        book=book, new_ids=[f for f in sorted(book.seen_this_run) if f not in book.before and not book.flaky(f)],
        run_id=hashlib.sha256(json.dumps({k: v.to_json() for k, v in shards.items()},
                                         sort_keys=True).encode()).hexdigest()[:16],
        minimized=_minimized(summaries), bugs_dir=str(out / "bugs"),
        triage=TriageInputs(stage, _confirmed(parts), base) if head.record.identity.base else None,
        coverage={**_coverage_summary(state, rec.identity.opset or LEGACY_OPSET), **engine_cov} if state else None,
        # Per runner, over every shard's sessions (a campaign's own rate is its last session's).
        models_per_s=round(len(records) / elapsed, 3) if elapsed else 0.0,
        shards={k: ShardRun(v.models, v.complete) for k, v in shards.items()}))
    done.write(stage, book)
    return done.summary


def _head(parts: list[Part]) -> Part:
    """The input whose campaign settings the merged output shows: the lowest shard's."""
    return min(parts, key=lambda p: (min(parse_shard(k) for k in p.shards),
                                     json.dumps(p.record.to_json(), sort_keys=True)))


def _coverage_summary(state: Mapping[str, Any], main: int = LEGACY_OPSET) -> dict[str, object]:
    """The summary's coverage: the union's metrics, each shard's graph-level means weighted by its models.
    Of several opsets (search.opsets): the ``main`` one's, with the operators, element types
    and forms of all, and the operators at each schema version.  (state.json's keys are sorted:
    its order does not say which opset is the main one, the campaign's identity does.)"""
    if "opsets" in state:
        per = {int(o): _coverage_summary(s) for o, s in state["opsets"].items() if s}
        return union_of_opsets(per, main if main in per else next(iter(per)))
    kept = [ShardSearch.from_json(v) for v in state["shards"].values()]
    models = sum(v.models for v in kept) or 1
    keys = sorted({k for v in kept for k in v.graph})
    graph = {k: sum(v.graph.get(k, 0.0) * v.models for v in kept) / models for k in keys}
    size = _tree_size(state["mcts"]["root"]) if state.get("mcts") else 0
    return {**Coverage.from_json(state["coverage"]).summary(), "graph": graph, "generated": state["generated"],
            "discarded": state["discarded"], "mcts_nodes": size, "graph_arms": state["graph_arms"]}


def _tree_size(node: Mapping[str, Any]) -> int:
    return 1 + sum(_tree_size(c) for c in node["c"])


def _confirmed(parts: list[Part]) -> dict[str, tuple[Verdict, str]]:
    """Each fingerprint's confirmation replays, from an input that got to them."""
    every: dict[str, list[triage.BugVerdict]] = {}
    for p in parts:
        for fid, bv in triage.read_verdicts(p.out).items():
            if bv.verdict is not Verdict.UNCHECKED and bv.verdict not in (Verdict.PRE_EXISTING,):
                every.setdefault(fid, []).append(bv)
    return {fid: (bv.verdict, bv.confirmation) for fid, bvs in every.items()
            for bv in [_pick(bvs, triage.BugVerdict.to_json)]}


def _minimized(summaries: list[Summary]) -> dict[str, Diagnosis]:
    every: dict[str, list[Diagnosis]] = {}
    for s in summaries:
        for fid, stats in s.minimized.items():
            every.setdefault(fid, []).append(stats)
    return {fid: _pick(v, Diagnosis.to_json) for fid, v in sorted(every.items())}


def _campaign_record(parts: list[Part], shards: dict[str, ShardPart], stage: Path, out: Path) -> None:
    """campaign.json: the campaign's identity (no shard), and what each shard did."""
    head = _head(parts)
    config = replace(head.record.config, out=out, shard=(1, 1))
    CampaignRecord(_identity(head), config, tuple(s for v in shards.values() for s in v.sessions), __version__,
                   merged=shards).write(stage)


# -- files --------------------------------------------------------------------------
def _copy_tree(src: Path, dest: Path) -> None:
    """A case folder copied (hard links where the file system allows: case folders are large,
    and nothing rewrites a kept case)."""
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dest, copy_function=link, dirs_exist_ok=True)


def _replace(stage: Path, out: Path) -> None:
    """``out`` becomes ``stage``: the old one is kept aside until the new one is in place."""
    old = out.parent / f".{out.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        os.replace(out, old)
    os.replace(stage, out)
    shutil.rmtree(old, ignore_errors=True)
