"""The knobs the CLI and the action share (gbft_action.knobs): declared once, one set of ranges,
the same value from a flag and from an input, the same words when it is bad."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gbft_action.action.config import ActionConfig, ConfigError
from gbft_action.campaign import FuzzConfig
from gbft_action.cli import build_parser
from gbft_action.knobs import KNOBS, check_all


def _fuzz(*flags: str):
    return build_parser().parse_args(["fuzz", *flags])


def test_every_knob_is_a_flag_and_an_input_with_one_default():
    args = _fuzz()
    action = ActionConfig.from_env({}).validate().knob_values()
    for k in KNOBS:
        assert getattr(args, k.field) == k.value == action[k.field], k.name
        k.check(k.value)


@pytest.mark.parametrize("name, text, value", [
    ("seed", "42", 42), ("blocks", "3-7", (3, 7)), ("blocks", "5", (5, 5)), ("special-share", "0.25", 0.25),
    ("chooser", "random", "random"), ("list-only", "precision,nan-inf", ("precision", "nan-inf")),
    ("symptom-policy", "precision=report", {"precision": "report"})])
def test_a_flag_and_an_input_of_the_same_text_give_the_same_value(name, text, value):
    field = next(k.field for k in KNOBS if k.name == name)
    assert getattr(_fuzz(f"--{name}", text), field) == value
    assert ActionConfig.from_env({f"INPUT_{name.upper()}": text}).validate().knob_values()[field] == value


@pytest.mark.parametrize("name, text, words", [
    ("seed", "-1", ["from 0 to 2147483647"]), ("blocks", "5-2", ["MIN-MAX", "<= 100"]),
    ("blocks", "1-101", ["<= 100"]), ("special-share", "1.5", ["from 0 to 1"]),
    ("chooser", "smart", ["mcts, random, learned"]), ("list-only", "precison", ["unknown symptom class"])])
def test_a_bad_text_is_refused_alike_by_the_cli_and_the_action(name, text, words, capsys):
    with pytest.raises(SystemExit):
        _fuzz(f"--{name}", text)
    err = capsys.readouterr().err
    assert f"--{name}" in err and all(w in err for w in words)
    with pytest.raises(ConfigError) as e:
        ActionConfig.from_env({f"INPUT_{name.upper()}": text}).validate()
    assert str(e.value).startswith(f"input '{name}': ") and all(w in str(e.value) for w in words)


def test_a_config_built_otherwise_is_held_to_the_same_ranges(tmp_path: Path):
    cfg = FuzzConfig(out=tmp_path)
    check_all(cfg)
    for field, bad, words in (("blocks", (0, 3), "--blocks: must be MIN-MAX"), ("seed", -5, "--seed: must be"),
                              ("special_share", 2.0, "--special-share: must be"), ("chooser", "x", "--chooser:"),
                              ("list_only", ("nope",), "--list-only:")):
        with pytest.raises(ValueError, match=words):
            replace(cfg, **{field: bad}).validate()
