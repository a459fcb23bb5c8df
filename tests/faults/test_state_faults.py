"""The fault suite (issue 15): a corrupt or truncated state file is a one-line error naming it,
with a copy kept, never a silent reset (which would report every known bug as new again)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gbft_action.campaign import Campaign
from gbft_action.records.state import STATE_FILE

from gbft_action.records.config import Config
from gbft_action.statefile import StateFileError

from ..conftest import gbft_cmd


def _state_dir(tmp_path, name: str, text: str):
    d = tmp_path / "state"
    d.mkdir()
    (d / name).write_text(text)
    return d


@pytest.mark.parametrize("name, text", [
    ("known_bugs.json", '{"c8c87aeed8f9": {"title": "DCF: wrong'),  # cut mid-write
    (STATE_FILE, '{"coverage": '),
    (STATE_FILE, '["not", "an", "object"]'),
    (STATE_FILE, '{"unexpected": 1}'),  # valid JSON, not a search state
])
def test_a_corrupt_state_file_is_named_and_kept(tmp_path, name, text):
    d = _state_dir(tmp_path, name, text)
    if name != STATE_FILE:
        (d / STATE_FILE).write_text(json.dumps(Campaign(Config(out=tmp_path / "x")).source.state()))
    with pytest.raises(StateFileError) as e:
        Campaign(Config(out=tmp_path / "o", state=str(d)))
    msg = str(e.value)
    assert str(d / name) in msg and "\n" not in msg and "corrupt or truncated" in msg
    assert (d / name).read_text() == text and (d / (name + ".corrupt")).read_text() == text


def test_resuming_over_a_truncated_campaign_record_says_which_file(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "campaign.json").write_text('{"identity": {"seed": 0')
    p = subprocess.run([*gbft_cmd(), "fuzz", "--resume", str(out), "--budget", "5", "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and str(out / "campaign.json") in p.stderr
    assert p.stderr.strip().count("\n") == 0, p.stderr  # one line
    assert (out / "campaign.json.corrupt").exists()
