"""The campaign's knobs the CLI and the action share, each declared once (issue 39, item 2).

A ``Knob`` is one setting: its name (``gbft fuzz --NAME`` and the action's input ``NAME``), the
``FuzzConfig`` field it sets, its default (as the text an input holds), what it must be, and its
help.  ``parse`` reads a text (a flag, an input) into a value; ``check`` judges a value however
it was built (a resumed campaign's, a test's), by the same rule: one set of ranges.  The CLI
adds one flag per knob (``add_flags``), the action reads one input per knob (``from_texts``),
and ``FuzzConfig.validate`` calls ``check_all``.  Adding a knob is one entry here and the code
that uses its field.

May import: the standard library, bugs.policy (its classes and parsers).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .bugs.policy import DEFAULT_LIST_ONLY, POLICIES, SYMPTOMS, parse_list_only, parse_policy

CHOOSERS = ("mcts", "random", "learned")  # search.guided's block choosers
MAX_BLOCKS = 100
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class Knob:
    name: str  # --name, and the action's input
    field: str  # FuzzConfig's
    default: str  # as text
    parse: Callable[[str], Any]  # a text -> its value; ValueError: what it must be
    check: Callable[[Any], None]  # a value -> ValueError when it is out of range
    help: str
    metavar: str | None = None
    # Part of the campaign's identity: ``--resume`` takes it from the output, not the command line.
    resumed: bool = False

    @property
    def value(self) -> Any:
        """The default as a value."""
        return self.parse(self.default)


def _number(kind: type, lo: float, hi: float, want: str) -> tuple[Callable[[str], Any], Callable[[Any], None]]:
    def check(v: Any) -> None:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi or (kind is int and v != int(v)):
            raise ValueError(f"must be {want}, got {v!r}")

    def parse(text: str) -> Any:
        try:
            v = kind(text.strip())
        except ValueError:
            raise ValueError(f"must be {want}, got {text!r}") from None
        check(v)
        return v
    return parse, check


def _blocks_check(v: Any) -> None:
    ok = isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v)
    if not ok or not 1 <= v[0] <= v[1] <= MAX_BLOCKS:
        got = f"{v[0]}-{v[1]}" if ok else repr(v)
        raise ValueError(f"must be MIN-MAX with 1 <= MIN <= MAX <= {MAX_BLOCKS} (e.g. 1-30), got {got}")


def _blocks(text: str) -> tuple[int, int]:
    lo, _, hi = text.strip().partition("-")
    try:
        v = (int(lo), int(hi or lo))
    except ValueError:
        raise ValueError(f"must be MIN-MAX with 1 <= MIN <= MAX <= {MAX_BLOCKS} (e.g. 1-30), got {text!r}") from None
    _blocks_check(v)
    return v


def _chooser_check(v: Any) -> None:
    if v not in CHOOSERS:
        raise ValueError(f"must be one of {', '.join(CHOOSERS)}; got {v!r}")


def _chooser(text: str) -> str:
    _chooser_check(text.strip())
    return text.strip()


def _policy_check(v: Any) -> None:
    if not isinstance(v, Mapping) or any(c not in SYMPTOMS or p not in POLICIES for c, p in v.items()):
        raise ValueError(f"must be CLASS=POLICY pairs (classes: {', '.join(SYMPTOMS)}; policies: "
                         f"{', '.join(POLICIES)}), got {v!r}")


def _list_only_check(v: Any) -> None:
    if not isinstance(v, (tuple, list)) or any(c not in SYMPTOMS for c in v):
        raise ValueError(f"must be symptom classes ({', '.join(SYMPTOMS)}), got {v!r}")


def _text(text: str) -> str:
    return text.strip()


def _any_text(v: Any) -> None:
    if not isinstance(v, str):
        raise ValueError(f"must be text, got {v!r}")


KNOBS: tuple[Knob, ...] = (
    Knob("seed", "seed", "0", *_number(int, 0, MAX_SEED, f"an integer from 0 to {MAX_SEED}"),
         help="the campaign's seed: the same seed, corpus and engine give the same models", resumed=True),
    Knob("blocks", "blocks", "1-30", _blocks, _blocks_check, "blocks per model, MIN-MAX", "MIN-MAX", True),
    Knob("special-share", "special_share", "0.1", *_number(float, 0.0, 1.0, "a number from 0 to 1"),
         help="share of models that feed special values (NaN, Inf, -0, zero divisors) on purpose", resumed=True),
    Knob("chooser", "chooser", "mcts", _chooser, _chooser_check,
         "block chooser: mcts, random, or learned (a policy and a predictor of the engine's code each model runs, "
         "trained on a coverage build by gbft learn; models of negative test value are not run)", resumed=True),
    Knob("guide", "guide", "", _text, _any_text,
         "the learned chooser's guide folder (gbft learn train); default: the one gbft ships", "DIR", True),
    Knob("symptom-policy", "symptom_policy", "", parse_policy, _policy_check,
         "report, summary or ignore per symptom class, e.g. precision=report,nan-inf=summary "
         "(default: gbft_action.bugs.policy.DEFAULT_POLICY)", "CLASS=POLICY,..."),
    Knob("list-only", "list_only", ",".join(DEFAULT_LIST_ONLY), parse_list_only, _list_only_check,
         "symptom classes whose new failures against the base build are listed, not failing the check, "
         "e.g. precision,nan-inf ('none' for none; default: reference-disagreement)", "CLASS,..."),
)


def resume(cfg: Any, old: Mapping[str, Any]) -> None:
    """Set the identity's knobs of ``cfg`` as a campaign record's config (``old``) has them; one
    an older record lacks keeps its default (it was made before the knob existed)."""
    for k in KNOBS:
        if k.resumed:
            v = old.get(k.field, k.value)
            setattr(cfg, k.field, tuple(v) if isinstance(v, list) else v)


def check_all(cfg: Any) -> None:
    """Every knob's value in ``cfg`` (a FuzzConfig) against its range: a ValueError naming it."""
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


def from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs' values from parsed flags, by FuzzConfig field."""
    return {k.field: getattr(args, k.field) for k in KNOBS}


def from_texts(texts: Mapping[str, str]) -> dict[str, Any]:
    """The knobs' values from inputs by name (an empty or absent input is the default); a
    ValueError names the input."""
    out = {}
    for k in KNOBS:
        text = texts.get(k.name, "").strip() or k.default
        try:
            out[k.field] = k.parse(text)
        except ValueError as e:
            raise ValueError(f"input '{k.name}': {e}") from None
    return out
