"""Block corpus: schema, loader and validation (paper III-A, III-D).

A block is one operator or a subgraph of operators with inner edges.  Each has
the set of in-degrees and out-degrees it may take in a generated graph and,
optionally, narrowed parameter domains.  The loader rejects a bad corpus with a
``CorpusError`` naming the file, the block and the field.  A top-level
``frontend:`` (``tf`` by default, or ``onnx``) names the operator registry
(``ops.registry``) the block names refer to; ``recorded: true`` adds a block for each
operator known only from ONNX's recorded instances (``ops.recorded``).

Layer 1 of ``gbft_action.LAYERS``.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable

from ..ops.domains import Domain, parse_domain
from ..ops.recorded import RecordedSpec
from ..frontends import LEGACY_OPSET
from ..ops.registry import FRONTENDS, TF, Registry, registry
from ..ops.specs import Spec

DEFAULT_CORPUS = Path(str(files("gbft_action") / "corpora" / "tensorflow-mnn.yaml"))  # package data
ONNX_CORPUS = Path(str(files("gbft_action") / "corpora" / "onnx-mnn.yaml"))


class CorpusError(ValueError):
    def __init__(self, file: str, block: str, fld: str, msg: str) -> None:
        super().__init__(f"{file}: block {block!r}: field {fld!r}: {msg}")
        self.file, self.block, self.field = file, block, fld


@dataclass(frozen=True)
class Block:
    name: str
    ops: tuple[str, ...]  # one entry for an operator block
    inner_edges: tuple[tuple[int, int], ...]
    in_degree: frozenset[int]
    out_degree: frozenset[int]
    params: tuple[dict[str, Domain], ...]  # per inner op

    @property
    def is_subgraph(self) -> bool:
        return len(self.ops) > 1

    # Cached: generation scores every block of the corpus at every node of every attempt.
    @cached_property
    def entries(self) -> tuple[int, ...]:
        """Inner ops with no inner in-edge: they take the block's external inputs."""
        fed = {d for _, d in self.inner_edges}
        return tuple(i for i in range(len(self.ops)) if i not in fed)

    @cached_property
    def exit(self) -> int:
        srcs = {s for s, _ in self.inner_edges}
        return [i for i in range(len(self.ops)) if i not in srcs][0]

    @cached_property
    def head(self) -> str:
        """The operator of its first entry."""
        return self.ops[self.entries[0]]

    @cached_property
    def tail(self) -> str:
        """The operator of its exit."""
        return self.ops[self.exit]

    def inner_preds(self, i: int) -> list[int]:
        return [s for s, d in self.inner_edges if d == i]


@dataclass
class Corpus:
    name: str
    blocks: list[Block]
    path: str = ""
    n_maxspc: int = 200
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    reg: Registry = TF  # the operator registry its blocks name (``frontend:`` in the file, tf by default)

    @property
    def frontend(self) -> str:
        return self.reg.frontend

    @property
    def specs(self) -> dict[str, Spec]:
        return self.reg.specs

    def block(self, name: str) -> Block:
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Block]:  # generation looks blocks up at every node
        return {b.name: b for b in self.blocks}

    def candidates(self, d_in: int, d_out: int) -> list[Block]:
        """The blocks that take in-degree d_in and out-degree d_out, in corpus order."""
        found = self._candidates.get((d_in, d_out))
        if found is None:
            found = self._candidates[d_in, d_out] = [b for b in self.blocks if d_in in b.in_degree
                                                     and d_out in b.out_degree]
        return list(found)

    @cached_property
    def _candidates(self) -> dict[tuple[int, int], list[Block]]:  # asked at every node too
        return {}

    @property
    def op_types(self) -> list[str]:
        """Distinct operator types in the corpus (n_t of the paper), sorted."""
        return list(self._op_types)

    @cached_property
    def _op_types(self) -> tuple[str, ...]:
        return tuple(sorted({op for b in self.blocks for op in b.ops}))

    def blocks_with_op(self, op: str) -> list[Block]:
        return [b for b in self.blocks if op in b.ops]


def load_corpus(path: str | Path = DEFAULT_CORPUS, opset: int = LEGACY_OPSET, placeable_only: bool = False) -> Corpus:
    """The corpus in file ``path``, its operators those of its front end at ``opset`` (ONNX's);
    ``placeable_only``: without the blocks of operators that opset lacks, instead of an error
    (an older opset of a campaign of several: search.opsets)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CorpusError(str(p), "-", "-", f"cannot read: {e.strerror}") from None
    try:
        raw = _parse(p, text)
    except Exception as e:  # noqa: BLE001 - any parser error is a corpus error
        raise CorpusError(str(p), "-", "-", f"not valid YAML/JSON: {e}") from None
    if isinstance(raw, dict) and "extends" in raw:
        raw = _extended(p, raw)
    return parse_corpus(raw, str(p), opset, placeable_only)


def _extended(p: Path, raw: Mapping[str, Any]) -> dict[str, object]:
    """A corpus written as another one (``extends``, a file beside it) less the blocks it
    ``drop``s, with the blocks it lists under ``blocks`` replacing the base's of that name
    (the TFLite front end: the paper's corpus less what TFLite cannot express)."""
    base_path = p.parent / str(raw["extends"])
    if base_path.resolve() == p.resolve():
        raise CorpusError(str(p), "-", "extends", "a corpus cannot extend itself")
    base = load_corpus(base_path).raw
    drop = set(raw.get("drop") or [])
    unknown = drop - {b.get("name") for b in base["blocks"]}
    if unknown:
        raise CorpusError(str(p), sorted(unknown)[0], "drop", f"not a block of {raw['extends']}")
    own = {b.get("name"): b for b in raw.get("blocks") or [] if isinstance(b, dict)}
    blocks = [own.pop(b["name"], b) for b in base["blocks"] if b["name"] not in drop]
    merged = {k: v for k, v in base.items() if k != "blocks"}
    merged.update({k: v for k, v in raw.items() if k not in ("extends", "drop", "blocks")})
    return {**merged, "blocks": blocks + list(own.values()), "extends_file": str(base_path)}


def _parse(p: Path, text: str) -> Any:
    if p.suffix == ".json":
        return json.loads(text)
    import yaml  # only the CLI and the loader need it

    return yaml.safe_load(text)


def parse_corpus(raw: Any, file: str = "<corpus>", opset: int = LEGACY_OPSET, placeable_only: bool = False) -> Corpus:
    if not isinstance(raw, dict) or not isinstance(raw.get("blocks"), list) or not raw["blocks"]:
        raise CorpusError(file, "-", "blocks", "the corpus needs a non-empty list 'blocks'")
    frontend = raw.get("frontend", "tf")
    if frontend not in FRONTENDS:
        raise CorpusError(file, "-", "frontend", f"unknown frontend {frontend!r} (known: {', '.join(FRONTENDS)})")
    reg = registry(frontend, opset)
    blocks = []
    seen: set[str] = set()
    for i, rb in enumerate(raw["blocks"]):
        if placeable_only and isinstance(rb, dict) and not set(rb.get("ops") or [rb.get("name")]) <= reg.specs.keys():
            continue  # an operator of a later opset (search.opsets: its main opset places it)
        b = _parse_block(rb, i, file, reg.specs)
        if b.name in seen:
            raise CorpusError(file, b.name, "name", "duplicate block name")
        seen.add(b.name)
        blocks.append(b)
    if raw.get("recorded", False) is not False:
        if raw["recorded"] is not True:
            raise CorpusError(file, "-", "recorded", "must be true or false")
        blocks += recorded_blocks(reg, seen)
    n_max = raw.get("n_maxspc", 200)
    if not isinstance(n_max, int) or n_max < 1:
        raise CorpusError(file, "-", "n_maxspc", "must be a positive integer")
    return Corpus(str(raw.get("name", Path(file).stem)), blocks, file, n_max, raw, reg)


# A recorded operator's block takes one tensor and feeds up to five, like the corpus's own.
RECORDED_OUT = frozenset(range(6))


def recorded_blocks(reg: Registry, listed: set[str]) -> list[Block]:
    """An operator block for every operator the registry knows only from recorded instances
    (``recorded: true``; ops.recorded), but those the corpus lists itself."""
    return [Block(op, (op,), (), frozenset({1}), RECORDED_OUT, ({},)) for op, spec in reg.specs.items()
            if isinstance(spec, RecordedSpec) and op not in listed]


def _parse_block(rb: Any, i: int, file: str, specs: dict[str, Spec]) -> Block:
    if not isinstance(rb, dict) or not isinstance(rb.get("name"), str):
        raise CorpusError(file, f"#{i}", "name", "each block is a mapping with a string 'name'")
    name = rb["name"]

    def err(fld: str, msg: str) -> CorpusError:
        return CorpusError(file, name, fld, msg)

    ops = rb.get("ops", [name])
    if not isinstance(ops, list) or not ops:
        raise err("ops", "must be a non-empty list of operator names")
    for op in ops:
        if op not in specs:
            raise err("ops", f"unknown operator {op!r} (known: {', '.join(sorted(specs))})")
    edges = _parse_edges(rb.get("inner_edges", []), len(ops), err)
    in_deg = _degrees(rb.get("in_degree"), "in_degree", err, lo=1)
    out_deg = _degrees(rb.get("out_degree"), "out_degree", err, lo=0)
    params = _parse_params(rb.get("params", {}), ops, err, specs)
    block = Block(name, tuple(ops), edges, in_deg, out_deg, params)
    _check_arity(block, err, specs)
    return block


def _parse_edges(raw: Any, n: int, err: Callable[[str, str], Exception]) -> tuple[tuple[int, int], ...]:
    if not isinstance(raw, list):
        raise err("inner_edges", "must be a list of [src, dst] pairs")
    edges = []
    for e in raw:
        if not (isinstance(e, list) and len(e) == 2 and all(isinstance(x, int) for x in e)):
            raise err("inner_edges", f"{e!r} is not a [src, dst] pair of integers")
        s, d = e
        if not (0 <= s < n and 0 <= d < n):
            raise err("inner_edges", f"edge {e} out of range: the block has {n} operators (0..{n - 1})")
        if s >= d:
            raise err("inner_edges", f"edge {e} must go forward (src < dst) so the block is acyclic")
        edges.append((s, d))
    if n > 1:
        srcs = {s for s, _ in edges}
        sinks = [i for i in range(n) if i not in srcs]
        if len(sinks) != 1:
            raise err("inner_edges", f"a subgraph needs exactly one output operator, found {sinks}")
    return tuple(edges)


def _degrees(raw: Any, fld: str, err: Callable[[str, str], Exception], lo: int) -> frozenset[int]:
    if not isinstance(raw, list) or not raw:
        raise err(fld, "must be a non-empty list of integers")
    if not all(isinstance(x, int) and not isinstance(x, bool) and lo <= x <= 8 for x in raw):
        raise err(fld, f"degrees must be integers in {lo}..8, got {raw}")
    return frozenset(raw)


def _parse_params(raw: Any, ops: list[str], err: Callable[[str, str], Exception], specs: dict[str, Spec]) -> tuple[dict[str, Domain], ...]:
    per_op: list[dict[str, Domain]] = [{} for _ in ops]
    if not isinstance(raw, dict):
        raise err("params", "must be a mapping")
    if len(ops) == 1 and raw and not all(str(k).isdigit() for k in raw):
        raw = {0: raw}  # an operator block may give its domains directly
    for k, doms in raw.items():
        idx = int(k) if str(k).isdigit() else -1
        if not 0 <= idx < len(ops) or not isinstance(doms, dict):
            raise err("params", f"key {k!r} must be an operator index 0..{len(ops) - 1} with a mapping")
        spec = specs[ops[idx]]
        for pname, pdom in doms.items():
            if pname not in spec.domains:
                raise err(f"params.{pname}", f"{ops[idx]} has no parameter {pname!r} "
                          f"(known: {', '.join(sorted(spec.domains)) or 'none'})")
            try:
                per_op[idx][pname] = parse_domain(pdom, spec.domains[pname])
            except ValueError as e:
                raise err(f"params.{pname}", str(e)) from None
    return tuple(per_op)


def subgraph_problem(b: Block, specs: dict[str, Spec] | None = None) -> str | None:
    """Why a (possibly mutated) subgraph block is malformed, or None if it is fine.

    ``specs``: the corpus's registry (TensorFlow's by default)."""
    specs = TF.specs if specs is None else specs
    n = len(b.ops)
    if any(not (0 <= s < d < n) for s, d in b.inner_edges):
        return "inner edges must go forward between existing operators"
    srcs = {s for s, _ in b.inner_edges}
    if n > 1 and len([i for i in range(n) if i not in srcs]) != 1:
        return "a subgraph needs exactly one output operator"
    for i, op in enumerate(b.ops):
        k = len(b.inner_preds(i)) or 1
        if k not in specs[op].arity:
            return f"operator {i} ({op}) gets {k} inputs, it takes {sorted(specs[op].arity)}"
    if n > 1 and max(b.in_degree) > len(b.entries):
        return f"the subgraph has {len(b.entries)} entry operators, so at most {len(b.entries)} inputs"
    return None


def _check_arity(b: Block, err: Callable[[str, str], Exception], specs: dict[str, Spec]) -> None:
    if not b.is_subgraph:
        bad = sorted(b.in_degree - specs[b.ops[0]].arity)
        if bad:
            raise err("in_degree", f"{b.ops[0]} cannot take {bad} inputs (it takes {sorted(specs[b.ops[0]].arity)})")
        return
    n_entries = len(b.entries)
    if max(b.in_degree) > n_entries:
        raise err("in_degree", f"the subgraph has {n_entries} entry operators, so at most {n_entries} inputs")
    for i, op in enumerate(b.ops):
        k = len(b.inner_preds(i)) or 1
        if k not in specs[op].arity:
            raise err("inner_edges", f"operator {i} ({op}) gets {k} inputs, it takes {sorted(specs[op].arity)}")
