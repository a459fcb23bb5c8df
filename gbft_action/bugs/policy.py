"""What happens to each symptom class of root cause: filed, summarised, or ignored.

  report   one issue per root cause (within the run's quota)
  summary  not filed one by one: listed in the job summary (precision and NaN/Inf differences
           and unsupported operators also in one tracking issue each)
  ignore   counted in the job summary, not listed

``DEFAULT_POLICY`` is the campaign's default; a user overrides classes with
``symptom-policy`` (action) or ``--symptom-policy`` (``gbft fuzz``), both parsed
here by ``parse_policy`` so the two cannot disagree.

May import: the standard library only (the action's config reads it).
"""

from __future__ import annotations

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


# Listed, not filed, yet failing a pull request that introduces one: a change that takes an
# operator's support away breaks every model of its users that has it.
FAILS_WHEN_SUMMARISED = ("unsupported",)


def fails_pull_request(symptom: str, policy: str) -> bool:
    """Whether a new root cause of ``symptom`` under ``policy`` fails the pull request."""
    return policy == "report" or (policy == "summary" and symptom in FAILS_WHEN_SUMMARISED)


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


def policy_for(symptom: str, overrides: dict[str, str] | None = None) -> str:
    """The policy of one symptom class.  A class this version does not know is reported:
    a new kind of defect should reach a maintainer, not vanish."""
    return (overrides or {}).get(symptom) or DEFAULT_POLICY.get(symptom, "report")
