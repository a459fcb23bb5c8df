"""The knobs the CLI and the action share (records.config.KNOBS): declared once, one set of ranges,
the same value from a flag and from an input, the same words when it is bad; and the one
configuration record they all end in (records.config.Config)."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest

from gbft_action.action.config import ActionConfig, ConfigError
from gbft_action.cli import build_parser
from gbft_action.knobs import knob
from gbft_action.knowledge.builds import EngineBuild
from gbft_action.records import RecordError, Tolerance
from gbft_action.records.campaign import CampaignRecord
from gbft_action.records.config import KNOBS, Config, Timeouts, check_knobs, configure


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
    cfg = Config(out=tmp_path)
    check_knobs(cfg)
    for field, bad, words in (("blocks", (0, 3), "--blocks: must be MIN-MAX"), ("seed", -5, "--seed: must be"),
                              ("special_share", 2.0, "--special-share: must be"), ("chooser", "x", "--chooser:"),
                              ("list_only", ("nope",), "--list-only:")):
        with pytest.raises(ValueError, match=words):
            replace(cfg, **{field: bad}).validate()


def test_a_knob_is_one_field_whose_default_flag_and_input_come_from_its_declaration(tmp_path: Path):
    cfg = Config(out=tmp_path)
    for k in KNOBS:
        assert getattr(cfg, k.field) == k.value, k.name
    # A newcomer's knob: one field declared with knob(); its default is the knob's.
    from dataclasses import dataclass, fields

    @dataclass(frozen=True)
    class Newer:
        depth: int = knob("depth", "3", int, lambda v: None, "how deep")

    (f,) = fields(Newer)
    assert Newer().depth == 3 and f.metadata["knob"].name == "depth"


def test_the_config_is_stored_typed_and_reads_back_equal(tmp_path: Path):
    cfg = Config(out=tmp_path, seed=9, blocks=(2, 5), chooser="random", symptom_policy={"precision": "report"},
                 list_only=(), timeouts=Timeouts(1.0, 2.0, 3.0), tolerance=Tolerance(1e-2, 1e-4, 0.99),
                 base=EngineBuild("mnn", "/v/bin/python", {"A": "1"}, "MNN-3.5.0.whl"), shard=(2, 3),
                 frontend="onnx", opsets=(22, 17), engine_env={"MNN_PRECISION": "low"})
    d = cfg.to_json()
    assert d["version"] == 1 and d["shard"] == "2/3" and d["base"]["source"] == "MNN-3.5.0.whl"
    assert Config.from_json(d) == cfg
    # Written before the config was a record: no version, one opset, no list-only: the defaults.
    old = {k: v for k, v in d.items() if k not in ("version", "opsets", "list_only")} | {"opset": 20}
    back = Config.from_json(old)
    assert back.opsets == (20,) and back.list_only == Config(out=tmp_path).list_only
    with pytest.raises(RecordError, match="config: 'seed' must be a whole number"):
        Config.from_json({**d, "seed": "9"})


def test_every_field_of_the_config_reads_back_from_its_file(tmp_path: Path):
    """Config.from_json names each field: one it forgets would go back to its default on
    --resume and in merge.  Every field here differs from its default (a field added later
    fails the first assertion until it is given a value here too)."""
    import json

    cfg = Config(out=tmp_path / "o", engine="onnxruntime", budget=7.5, max_models=3, seed=9, blocks=(2, 5),
                 special_share=0.2, chooser="random", guide="g.onnx", symptom_policy={"precision": "report"},
                 list_only=(), graph="rn", jobs=3, corpus="c.yaml", timeouts=Timeouts(1.0, 2.0, 3.0),
                 tolerance=Tolerance(1e-2, 1e-4, 0.99), engine_mem_mb=1024, mutations=False, state="s.json",
                 minimize_share=0.5, minimize_limit=5.0, engine_python="/v/bin/python",
                 engine_env={"MNN_PRECISION": "low"}, base=EngineBuild("mnn", "/b/bin/python", {"A": "1"}, "w.whl"),
                 confirm_rounds=2, platform_label="arm", platforms=("arm64-qemu",), arm_root="/r", frontend="onnx",
                 shard=(2, 3), threads_oracle=True, engine_coverage=True, opsets=(22,))
    dflt = Config(out=tmp_path)
    assert [f.name for f in fields(Config) if getattr(cfg, f.name) == getattr(dflt, f.name)] == []
    assert Config.from_json(json.loads(json.dumps(cfg.to_json()))) == cfg


def test_resume_takes_the_identity_from_the_record_and_the_rest_from_the_command_line(tmp_path: Path):
    old = configure({"out": tmp_path, "seed": 7, "blocks": (3, 4), "frontend": "onnx", "opsets": (20,),
                     "engine_env": {"A": "old"}, "budget": 10.0})
    now = configure({"out": tmp_path, "seed": 1, "budget": 99.0, "jobs": 1, "engine_env": {"B": "new"}})
    cfg = configure({"out": tmp_path, "seed": 1, "budget": 99.0, "jobs": 1, "engine_env": {"B": "new"}}, resume=old)
    assert cfg == now.resumed(old)
    assert (cfg.seed, cfg.blocks, cfg.frontend, cfg.opsets) == (7, (3, 4), "onnx", (20,))
    assert (cfg.budget, cfg.jobs) == (99.0, 1) and cfg.engine_env == {"A": "old", "B": "new"}


def test_a_campaign_record_without_a_config_is_refused_in_one_line(tmp_path: Path):
    (tmp_path / "campaign.json").write_text('{"identity": {}, "config": {}}')
    with pytest.raises(RecordError, match="no config in it"):
        CampaignRecord.read(tmp_path)


def test_a_stored_config_is_taken_as_stored_a_new_one_is_checked(tmp_path: Path):
    """merge builds its config over the shards' record without checking it again: a range
    tightened since an output was made must not refuse that output."""
    stored = replace(Config(tmp_path), blocks=(1, 200))
    assert configure({"out": tmp_path / "merged"}, on=stored).blocks == (1, 200)
    with pytest.raises(ValueError, match="--blocks"):
        configure({"out": tmp_path, "blocks": (1, 200)})
