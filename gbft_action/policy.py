"""What happens to each symptom class of root cause: filed, summarised, or ignored.

  report   one issue per root cause (within the run's quota)
  summary  not filed one by one: listed in the job summary (precision and NaN/Inf differences
           and unsupported operators also in one tracking issue each)
  ignore   counted in the job summary, not listed

``DEFAULT_POLICY`` is the campaign's default; a user overrides classes with
``symptom-policy`` (action) or ``--symptom-policy`` (``gbft fuzz``), both parsed
here by ``parse_policy`` so the two cannot disagree.  With a base build the policy decides issues
and tracking issues, and nothing else: what fails a pull request is ``fails_check``.
"""

from __future__ import annotations

from .records.enums import Policy

# Replays on both builds before a new failure is blamed on a pull request (bugs.triage says why 6).
CONFIRM_ROUNDS = 6

SYMPTOMS = ("wrong-result", "nan-inf", "crash", "conversion-error", "unsupported", "api-error", "timeout",
            "nondeterministic", "precision", "heap-damage", "tie", "reference-disagreement")
POLICIES = ("report", "summary", "ignore")
DEFAULT_POLICY: dict[str, str] = {
    "wrong-result": "report", "crash": "report", "conversion-error": "report",
    "api-error": "report", "timeout": "report", "nondeterministic": "report",
    # An operator (or attribute value) the converter says it does not support: a gap in the
    # engine's coverage, not a defect; with every ONNX operator generated there are dozens.
    # One tracking issue lists them (and the support matrix shows them), not an issue each.
    "unsupported": "summary",
    # Many, and rarely worth an issue each: listed (precision and NaN/Inf semantics each in one
    # tracking issue, as maintainers triage them: one per operator and special value would be
    # a third of an ONNX campaign's issues), not filed one by one.
    "precision": "summary", "nan-inf": "summary", "heap-damage": "summary",
    # TensorFlow and ONNX Runtime disagree: a question for the reference, listed, never filed.
    "reference-disagreement": "summary",
    # Not a defect the engine's maintainers can act on: counted only.
    "tie": "ignore",
}


# The pull request's verdict is another question than the policy's: not "is this old defect worth
# an issue of its own?" but "did this change break something that worked?".  A confirmed
# regression fails the check whatever its class (a division by zero that newly gives NaN is the
# defect a later MNN release fixed), but for the classes a team lists: those are shown, not failed.
# By default only a reference disagreement (TensorFlow and ONNX Runtime disagree among
# themselves, so no build can be judged).
DEFAULT_LIST_ONLY: tuple[str, ...] = ("reference-disagreement",)
LIST_ONLY_WHY: dict[str, str] = {
    "reference-disagreement": "the references disagree among themselves, so no build can be judged",
}
# Never a failure of the engine, listed or not: ties and undefined behaviour (counted only).
NOT_DEFECTS = ("tie",)


def fails_check(symptom: str, new: bool, list_only: tuple[str, ...] | frozenset[str] = DEFAULT_LIST_ONLY,
                against_base: bool = True, policy: Policy = Policy.REPORT) -> bool:
    """The one rule that fails the check (fail-on: new).  ``new``: with a base build
    (``against_base``), a confirmed regression (models the base build passes and this build
    fails, on every replay), whatever its class but those listed (``list_only``), the symptom
    policy playing no part.  Without a base build, a root cause not seen before (--state): then
    nothing says the engine changed, so only what the policy files fails it (and an operator
    whose support went away); a precision or NaN/Inf difference met for the first time is an
    old imprecision as likely as a new one."""
    if not new or symptom in NOT_DEFECTS or symptom in list_only:
        return False
    return against_base or Policy(policy) is Policy.REPORT or symptom == "unsupported"


def listed_line(list_only: tuple[str, ...] | list[str]) -> str:
    """What the job summary says of the classes listed rather than failed, and why each."""
    if not list_only:
        return "Listed, not failing: no class (every confirmed regression fails this check)."
    why = [f"{c} ({LIST_ONLY_WHY.get(c, 'chosen by this workflow: input list-only')})" for c in list_only]
    return ("Listed, not failing: " + "; ".join(why) + ". Every other confirmed regression fails this check, "
            "whatever its class.")


def parse_list_only(text: str) -> tuple[str, ...]:
    """``"precision,nan-inf"`` -> the classes listed, not failed; "none" (or "") -> none at all:
    every confirmed regression fails; a ValueError is one line naming the bad class."""
    out: list[str] = []
    if text.strip() == "none":
        return ()
    for part in (p.strip() for p in text.replace("\n", ",").split(",")):
        if part and part not in SYMPTOMS:
            raise ValueError(f"unknown symptom class {part[:40]!r} (allowed: {', '.join(SYMPTOMS)})")
        if part and part not in out:
            out.append(part)
    return tuple(out)


def parse_policy(text: str) -> dict[str, str]:
    """``"precision=report,nan-inf=summary"`` -> overrides; "" -> {}.  A ValueError is one line
    naming the bad part and what it may be."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.replace("\n", ",").split(",")):
        if not part:
            continue
        cls, eq, pol = (s.strip() for s in part.partition("="))
        if not eq or not cls or not pol:
            raise ValueError(f"symptom policy {part[:60]!r} is not CLASS=POLICY (e.g. precision=report)")
        if cls not in SYMPTOMS:
            raise ValueError(f"unknown symptom class {cls[:40]!r} (allowed: {', '.join(SYMPTOMS)})")
        if pol not in POLICIES:
            raise ValueError(f"unknown policy {pol[:40]!r} for {cls} (allowed: {', '.join(POLICIES)})")
        out[cls] = pol
    return out


def policy_for(symptom: str, overrides: dict[str, str] | None = None) -> Policy:
    """The policy of one symptom class.  A class this version does not know is reported:
    a new kind of defect should reach a maintainer, not vanish."""
    return Policy((overrides or {}).get(symptom) or DEFAULT_POLICY.get(symptom, Policy.REPORT))
