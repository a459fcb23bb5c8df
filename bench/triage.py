"""How well a campaign's reported keys map to known MNN defects (issue 13's triage benchmark).

    .venv/bin/python bench/triage.py --out DIR [--json] [--catalogue PATH ...]
    .venv/bin/python bench/triage.py --budget 60 --seed 0 [--frontend onnx] [--platforms P --arm-root R] --out DIR [--json]

With only ``--out``, analyses an existing ``gbft fuzz`` output; with ``--budget``, runs the
campaign first (``python -m gbft_action.cli fuzz --engine mnn ... --quiet`` with this
interpreter, so ``PYTHONPATH`` chooses the code that runs: a worktree of an older commit
gives the "before" figures).

The reported keys are the summary's root causes with policy ``report`` when it has root
causes, else every fingerprint (outputs of the code before root causes).  Each key is
mapped to the first defect of its front end's catalogue whose rules match its symptom class, operators, title/detail words, (fingerprints only) its
mismatch kind and its minimised model (the canonical bundle's ``minimized.json``, when
the minimiser finished: a key blamed on the wrong operator still has the model that shows
the defect).  Real defects are tried first, then the catalogue's artefacts (differences that
are not MNN defects: TensorFlow's own behaviour, undefined cases), then the controls.  A fingerprint's symptom class is read from its status and kind: a value
mismatch is a wrong result, a NaN/Inf mismatch nan-inf, a signal a crash, "not supported"
unsupported, a missing output or any other converter failure a conversion error, any
other inference error an API error.

ONNX and mixed (``--frontend tf,onnx``) campaigns: a key of the ONNX front end (a title
starting with "[onnx]", or a fingerprint whose front end is onnx) is matched against the
ONNX catalogue (``bench/catalogue/mnn-3.6.1-onnx.yaml``), any other against the TensorFlow
one (``mnn-3.6.1.yaml``; tflite models are TensorFlow graphs); the catalogues are the
defaults of the front ends the output's keys name, or those given with ``--catalogue``
(each file's ``frontend:`` says whose keys it takes).  With keys of both front ends, the
defects are named ``tf:ID`` and ``onnx:ID`` (both catalogues have a ``control``).

Printed: fingerprints, reported keys, per known defect the keys and fingerprints that match
it, the keys matching no defect (with their titles, to inspect by hand), the keys blamed on
an operator the catalogue shows correct alone (controls), reported keys per matched defect,
and the share of reported keys that match a real (non-control) defect.  With root causes,
also the root causes whose fingerprints belong to more than one defect (over-merged).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogue import CATALOGUE, ONNX_CATALOGUE, Catalogue, Defect, Model, load  # noqa: E402

from gbft_action.records import Policy, RootCauseRow  # noqa: E402
from gbft_action.report.reporter import UNISOLATED, tracking_class  # noqa: E402

DEFAULT_CATALOGUES = {"tf": CATALOGUE, "onnx": ONNX_CATALOGUE}
TRACKED = ("precision", "nan-inf")  # classes whose root causes a tracking issue lists


@dataclass
class Key:
    """One reported key (a root cause, or a fingerprint) as the rules see it."""

    id: str
    title: str
    symptom: str
    ops: list[str]
    text: str  # title, detail, message: what ``text`` rules search
    mismatch: str = ""  # fingerprints only
    fingerprints: list[str] = field(default_factory=list)
    count: int = 0  # cases
    policy: str = "report"
    defect: str = ""  # the matched defect's (or artefact's) id ("" for none)
    model: Model = field(default_factory=Model)  # its minimised model, as rules read it
    bundle: str = ""  # the bundle the model came from
    frontend: str = "tf"  # whose catalogue it is matched against: tf (tf, tflite) or onnx


# --------------------------------------------------------------------------- reading an output


def fingerprint_details(out: Path) -> dict[str, dict[str, Any]]:
    """Fingerprint id -> its fields (status, kind, code, op, title), from the bundles' meta.json
    and, for fingerprints without a bundle, the first case that showed them (cases.jsonl)."""
    fps: dict[str, dict[str, Any]] = {}
    bugs = out / "bugs"
    if bugs.is_dir():
        for meta in sorted(bugs.glob("*/meta.json")):
            try:
                fp = json.loads(meta.read_text()).get("fingerprint") or {}
            except json.JSONDecodeError:
                continue
            if fp.get("id"):
                fps.setdefault(fp["id"], fp)
    cases = out / "cases.jsonl"
    if cases.exists():
        for line in cases.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            for r in [rec, *rec.get("others", [])]:
                fp = r.get("fingerprint")
                if fp and fp.get("id"):
                    fps.setdefault(fp["id"], fp)
    return fps


def bundle_models(out: Path) -> dict[str, dict[str, Any]]:
    """Bundle id -> its minimised model (minimized.json), as JSON; only bundles whose meta.json
    says the minimiser finished (an unminimised model holds operators that have nothing to do
    with the failure, which the model rules would read as evidence)."""
    models: dict[str, dict[str, Any]] = {}
    bugs = out / "bugs"
    if not bugs.is_dir():
        return models
    for d in sorted(bugs.iterdir()):
        try:
            if not json.loads((d / "meta.json").read_text()).get("minimized"):
                continue
            models[d.name] = json.loads((d / "minimized.json").read_text())
        except (OSError, json.JSONDecodeError):
            continue
    return models


def fingerprint_symptom(status: str, kind: str, code: str) -> str:
    """The symptom class of a fingerprint, from its status and kind alone (the "before" rule)."""
    if status in ("DCF", "XPF", "XBF", "XTF"):
        return "nan-inf" if code in ("nan", "inf") else "wrong-result"
    if status == "TIMEOUT":
        return "timeout"
    if kind == "signal":
        return "crash"
    if kind == "unsupported":
        return "unsupported"
    if kind == "missing-output" or "outputs" in code or status == "MCF":
        return "conversion-error"
    return "api-error"


def fingerprint_key(f: dict[str, Any], fp: dict[str, Any]) -> Key:
    """A summary failure (one fingerprint) as a key."""
    status = fp.get("status") or f.get("status", "")
    kind, code = fp.get("kind", ""), fp.get("code", "")
    op = fp.get("op") or f.get("op", "")
    title = f.get("title") or fp.get("title", "")
    mismatch = code if kind == "mismatch" else ""
    return Key(f["key"], title, fingerprint_symptom(status, kind, code), [op] if op else [],
               " ".join((title, f.get("message", ""))), mismatch, [f["key"]], int(f.get("count", 0)),
               frontend=key_frontend(title, [fp]))


def root_cause_key(rc: dict[str, Any], fps: dict[str, dict[str, Any]] | None = None) -> Key:
    fronts = [(fps or {}).get(f, {}) for f in rc.get("fingerprints", [])]
    return Key(rc["key"], rc.get("title", ""), rc.get("symptom", ""), list(rc.get("ops", [])),
               " ".join((rc.get("title", ""), rc.get("detail", ""))), "", list(rc.get("fingerprints", [])),
               int(rc.get("count", 0)), _policy(rc), frontend=key_frontend(rc.get("title", ""), fronts))


def _policy(rc: dict[str, Any]) -> str:
    """report, summary, ignore; unsettled (diagnosis cut short: listed, not filed, like a summary
    class); tracked (a wrong result no operator gives alone: in the report's tracking issue)."""
    if not rc.get("settled", True):
        return "unsettled"
    policy = rc.get("policy", "report")
    row = RootCauseRow(str(rc.get("key", "")), str(rc.get("symptom", "")), tuple(rc.get("fingerprints", ())),
                       str(rc.get("canonical", "")), Policy(policy), isolated=bool(rc.get("isolated", True)))
    return "tracked" if tracking_class(row) == UNISOLATED else policy


def key_frontend(title: str, fingerprints: list[dict[str, Any]]) -> str:
    """onnx for a key of the ONNX front end (its title's "[onnx]" prefix, or a fingerprint found
    through it), else tf: an ONNX operator is not the TensorFlow one of the same name (Resize,
    Pad), so each front end's keys go to its own catalogue."""
    if title.lstrip().lower().startswith("[onnx]") or any(fp.get("frontend") == "onnx" for fp in fingerprints):
        return "onnx"
    return "tf"


def match(cat: Catalogue, k: Key) -> Defect | None:
    """The first defect of the catalogue whose rules match the key: real defects, then
    artefacts, then the controls.  A rule on a parameter value in the key's own words (``text:
    ["linear_before_reset=false"]``: a parameter its diagnosis proved it needs) wins over one on
    its canonical model, whose other parameters the diagnosis proved it does not need (a GRU key
    "linear_before_reset=False" whose model also runs in reverse is the linear_before_reset
    defect, not the reverse one)."""
    order = cat.matching_order()
    worded = next((d for d in order for r in d.rules if any("=" in t for t in r.text)
                   and r.matches(k.symptom, k.ops, k.text, k.mismatch, k.model)), None)
    return worded or next((d for d in order if d.matches(k.symptom, k.ops, k.text, k.mismatch, k.model)), None)


class Catalogues:
    """The catalogues of a campaign's front ends (tf, onnx), as one: a key goes to its front end's.
    With more than one, defect ids are qualified by the front end (``onnx:control``), since the
    catalogues share ids (control, exp-clamp, missing-output)."""

    def __init__(self, cats: Catalogue | dict[str, Catalogue]) -> None:
        self.by_frontend = {cats.frontend: cats} if isinstance(cats, Catalogue) else dict(cats)
        self.multi = len(self.by_frontend) > 1

    def qid(self, frontend: str, did: str) -> str:
        return f"{frontend}:{did}" if self.multi else did

    def assign(self, k: Key) -> None:
        """Set the key's defect: the first match in its front end's catalogue ("" without one)."""
        cat = self.by_frontend.get(k.frontend)
        d = match(cat, k) if cat else None
        k.defect = self.qid(k.frontend, d.id) if d else ""

    def ordered(self) -> list[tuple[str, Defect]]:
        """(qualified id, defect) of every catalogue: real defects, then artefacts, then controls."""
        out = []
        for fe, cat in self.by_frontend.items():
            out += [(self.qid(fe, d.id), d) for d in cat.defects if not d.control]
        for fe, cat in self.by_frontend.items():
            out += [(self.qid(fe, a.id), a) for a in cat.artefacts]
        for fe, cat in self.by_frontend.items():
            out += [(self.qid(fe, d.id), d) for d in cat.defects if d.control]
        return out

    def names(self) -> str:
        return ", ".join(f"{fe}: {cat.engine} {cat.version}" for fe, cat in self.by_frontend.items())


# --------------------------------------------------------------------------- the analysis


def analyse(summary: dict[str, Any], fps: dict[str, dict[str, Any]], cats: Catalogue | dict[str, Catalogue],
            models: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The figures for one campaign output (``summary.json``, its fingerprints' details and
    its bundles' minimised models, by bundle id: a root cause's canonical bundle, a
    fingerprint's own), against one catalogue or one per front end (``{"tf": ..., "onnx": ...}``)."""
    models = models or {}
    cs = Catalogues(cats)
    failures = summary.get("failures", [])
    fkeys = {f["key"]: fingerprint_key(f, fps.get(f["key"], {})) for f in failures}
    for k in fkeys.values():
        if k.id in models:
            k.model, k.bundle = Model.of(models[k.id]), k.id
        cs.assign(k)
    has_rc = "root_causes" in summary
    if has_rc:
        causes = [root_cause_key(rc, fps) for rc in summary["root_causes"]]
        keys = [k for k in causes if k.policy == "report"]
        for rc, k in zip(summary["root_causes"], causes):
            canon = rc.get("canonical") or ""
            if canon in models:
                k.model, k.bundle = Model.of(models[canon]), canon
            cs.assign(k)
    else:
        causes = []
        keys = list(fkeys.values())
    ordered = cs.ordered()
    control = {q for q, d in ordered if d.control}
    artefact = {q for q, d in ordered if d.artefact}
    not_real = control | artefact
    real = [q for q, d in ordered if d.real]

    per_defect = []
    for q, d in ordered:
        ks = [k for k in keys if k.defect == q]
        per_defect.append({"defect": q, "control": d.control, "artefact": d.artefact, "keys": len(ks),
                           "fingerprints": sum(len(k.fingerprints) for k in ks), "cases": sum(k.count for k in ks),
                           "titles": [k.title for k in ks]})
    matched_real = [k for k in keys if k.defect and k.defect not in not_real]
    defects_found = sorted({k.defect for k in matched_real}, key=real.index)
    unmatched = sorted((k for k in keys if not k.defect), key=lambda k: (-k.count, k.title, k.id))
    suspects = sorted((k for k in keys if k.defect in control), key=lambda k: (-k.count, k.title, k.id))
    artefacts = sorted((k for k in keys if k.defect in artefact), key=lambda k: (-k.count, k.title, k.id))
    result: dict[str, Any] = {
        "format": "root-causes" if has_rc else "fingerprints",
        "catalogues": cs.names(),
        "keys_by_frontend": _count(k.frontend for k in keys),
        "models": summary.get("models", 0),
        "fingerprints": len(failures),
        "reported_keys": len(keys),
        "per_defect": per_defect,
        "defects_found": len(defects_found),
        "defects_catalogued": len(real),
        "matched_keys": len(matched_real),
        "control_keys": len(suspects),
        "artefact_keys": len(artefacts),
        "unmatched_keys": len(unmatched),
        "keys_per_defect": round(len(keys) / len(defects_found), 2) if defects_found else None,
        "matched_keys_per_defect": round(len(matched_real) / len(defects_found), 2) if defects_found else None,
        "real_share": round(len(matched_real) / len(keys), 3) if keys else None,
        # Issue 13 asks for NaN/Inf differences "one per operator that creates or drops the special
        # value, per special value and direction": counted so, a catalogued family (exp's clamp
        # behind Exp, Sigmoid, Tanh, Selu) is several reports the issue wants, not variants.
        "issue_units": len(units := {(k.defect, k.title if k.symptom == "nan-inf" else "") for k in matched_real}),
        "keys_per_issue_unit": round(len(keys) / len(units), 2) if units else None,
        "unmatched": [_brief(k) for k in unmatched],
        "controls": [_brief(k) for k in suspects],
        "artefacts": [_brief(k) for k in artefacts],
    }
    if has_rc:
        by_policy: dict[str, int] = {}
        for k in causes:
            by_policy[k.policy] = by_policy.get(k.policy, 0) + 1
        result["root_causes"] = len(causes)
        result["root_causes_by_policy"] = dict(sorted(by_policy.items()))
        merged = []
        for k in keys:
            ds = sorted({fkeys[f].defect for f in k.fingerprints if f in fkeys and fkeys[f].defect
                         and fkeys[f].defect not in not_real})
            if len(ds) > 1:
                merged.append({**_brief(k), "defects": ds})
        result["over_merged"] = merged
        # Listed in a tracking issue (precision, NaN/Inf under policy summary, unisolated wrong results): a maintainer
        # sees them on one page, not as issues of their own; counted apart.
        listed = [k for k in causes if k.policy == "summary" and k.symptom in TRACKED or k.policy == "tracked"]
        also = {k.defect for k in listed if k.defect and k.defect not in not_real} - set(defects_found)
        result["tracked_keys"] = len(listed)
        result["defects_found_with_tracked"] = len(defects_found) + len(also)
        # What the same output gives when every fingerprint is a key (the "before" view of it).
        fk = list(fkeys.values())
        fk_real = [k for k in fk if k.defect and k.defect not in not_real]
        fk_found = {k.defect for k in fk_real}
        result["as_fingerprints"] = {"keys": len(fk), "matched_keys": len(fk_real), "defects_found": len(fk_found),
                                     "artefact_keys": sum(k.defect in artefact for k in fk),
                                     "keys_per_defect": round(len(fk) / len(fk_found), 2) if fk_found else None}
    return result


def _count(xs: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


def _brief(k: Key) -> dict[str, Any]:
    return {"key": k.id, "title": k.title, "symptom": k.symptom, "ops": k.ops, "cases": k.count,
            "fingerprints": len(k.fingerprints), **({"defect": k.defect} if k.defect else {})}


def render(r: dict[str, Any], out: Path) -> str:
    lines = [f"{out}: {r['models']} models, {r['fingerprints']} fingerprints, format: {r['format']}"]
    fronts = ", ".join(f"{fe} {n}" for fe, n in r["keys_by_frontend"].items())
    lines.append(f"catalogues: {r['catalogues']} (reported keys by front end: {fronts or '-'})")
    if r["format"] == "root-causes":
        pol = ", ".join(f"{p} {n}" for p, n in r["root_causes_by_policy"].items())
        lines.append(f"root causes: {r['root_causes']} ({pol})")
    lines.append(f"reported keys: {r['reported_keys']}")
    lines.append("")
    lines.append(f"{'defect':40s} {'keys':>5s} {'fingerprints':>12s} {'cases':>6s}")
    for d in r["per_defect"]:
        name = d["defect"] + (" (control)" if d["control"] else " (artefact)" if d.get("artefact") else "")
        lines.append(f"{name:40s} {d['keys']:5d} {d['fingerprints']:12d} {d['cases']:6d}")
    lines.append("")
    kpd = r["keys_per_defect"]
    lines.append(f"catalogued defects found: {r['defects_found']} of {r['defects_catalogued']}"
                 + (f" ({r['defects_found_with_tracked']} with the {r['tracked_keys']} keys of the tracking issues)"
                    if "tracked_keys" in r else ""))
    lines.append(f"reported keys per matched defect: {r['reported_keys']} / {r['defects_found']} = "
                 f"{kpd if kpd is not None else '-'} (keys matching a defect only: {r['matched_keys_per_defect']})")
    lines.append(f"by the issue's unit (a NaN/Inf difference: one per operator, special value and direction): "
                 f"{r['issue_units']} units, {r['reported_keys']} / {r['issue_units']} = {r['keys_per_issue_unit']} "
                 f"reported keys per unit")
    share = r["real_share"]
    lines.append(f"share of reported keys matching a real defect: {r['matched_keys']} / {r['reported_keys']} = "
                 + (f"{100 * share:.1f}%" if share is not None else "-"))
    lines.append(f"keys blamed on a control operator: {r['control_keys']}; known artefacts (not real): "
                 f"{r['artefact_keys']}; keys matching no defect: {r['unmatched_keys']}")
    if r["format"] == "root-causes":
        a = r["as_fingerprints"]
        lines.append(f"the same output keyed by fingerprint: {a['keys']} keys, {a['matched_keys']} matching a real "
                     f"defect, {a['defects_found']} defects, {a['keys_per_defect']} keys per defect")
        lines.append(f"over-merged root causes (fingerprints of several defects): {len(r['over_merged'])}")
        for m in r["over_merged"]:
            lines.append(f"  {m['key']}  {m['title'][:70]}  <- {', '.join(m['defects'])}")
    _key_list(lines, r["artefacts"], "known artefacts, NOT real defects (cases, key, symptom, title <- artefact):",
              70, lambda k: f"  <- {k['defect']}")
    _key_list(lines, r["controls"], "keys blamed on a control operator (cases, key, symptom, title):", 80)
    _key_list(lines, r["unmatched"], "keys matching no defect (cases, key, symptom, title):", 80)
    return "\n".join(lines)


def _key_list(lines: list[str], keys: list[dict[str, Any]], header: str, width: int,
              tail: Any = lambda k: "") -> None:
    """A titled block of keys, one line each (nothing when there are none)."""
    if not keys:
        return
    lines += ["", header]
    lines += [f"  {k['cases']:5d}  {k['key']}  {k['symptom']:16s} {k['title'][:width]}{tail(k)}" for k in keys]


def run_campaign(a: argparse.Namespace) -> None:
    cmd = [sys.executable, "-m", "gbft_action.cli", "fuzz", "--engine", "mnn", "--budget", str(a.budget),
           "--seed", str(a.seed), "--out", str(a.out.resolve()), "--quiet"]
    if a.platforms:
        cmd += ["--platforms", a.platforms]
    if a.arm_root:
        cmd += ["--arm-root", str(a.arm_root.resolve())]
    if a.frontend:
        cmd += ["--frontend", a.frontend]
    print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
    # From a neutral folder: ``python -m`` puts the working folder first on sys.path, ahead of
    # PYTHONPATH, so a run from a checkout would ignore a PYTHONPATH pointing at another one.
    with tempfile.TemporaryDirectory(prefix="gbft-triage-") as cwd:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, cwd=cwd)
    if p.returncode not in (0, 1):  # 1: failures found
        raise SystemExit(f"gbft fuzz exited with {p.returncode}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="a gbft fuzz output folder (written with --budget)")
    ap.add_argument("--catalogue", type=Path, action="append", default=[],
                    help="a catalogue file (repeatable; its frontend: says whose keys it takes); default: "
                         f"{CATALOGUE.name} for TensorFlow keys, {ONNX_CATALOGUE.name} for ONNX keys")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--budget", type=float, default=0, help="run a campaign of this many seconds first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--platforms", default="")
    ap.add_argument("--arm-root", type=Path)
    ap.add_argument("--frontend", default="", help="with --budget: the campaign's front end(s), e.g. onnx or tf,onnx")
    a = ap.parse_args()
    if a.budget:
        run_campaign(a)
    summary_path = a.out / "summary.json"
    if not summary_path.exists():
        print(f"{summary_path}: not found (run a campaign with --budget, or point --out at one)", file=sys.stderr)
        return 2
    summary, fps = json.loads(summary_path.read_text()), fingerprint_details(a.out)
    r = analyse(summary, fps, catalogues(summary, fps, a.catalogue), bundle_models(a.out))
    print(json.dumps(r, indent=2, sort_keys=True) if a.json else render(r, a.out))
    return 0


def catalogues(summary: dict[str, Any], fps: dict[str, dict[str, Any]], given: list[Path]) -> dict[str, Catalogue]:
    """The catalogues to match against, by front end: those given (each file says its front end),
    else the defaults of the front ends the output's keys belong to (TensorFlow's when it has none)."""
    if given:
        cats = [load(p) for p in given]
        return {c.frontend: c for c in cats}
    keys = [fingerprint_key(f, fps.get(f["key"], {})) for f in summary.get("failures", [])]
    keys += [root_cause_key(rc, fps) for rc in summary.get("root_causes", [])]
    fronts = sorted({k.frontend for k in keys}, key=["tf", "onnx"].index) or ["tf"]
    return {fe: load(DEFAULT_CATALOGUES[fe]) for fe in fronts}


if __name__ == "__main__":
    sys.exit(main())
