"""What a campaign writes to disk, as typed records: one reader and one writer each.

Every file the campaign, merge and the reporter exchange is a frozen dataclass here with a
schema version, ``to_json`` and ``from_json``.  ``from_json`` is where validation lives: a
file that is not what it should be is a one-line ``RecordError`` naming it and the field;
today's files without a version are read as version 0.  The enums the records' fields take
(Status, Symptom, Verdict, Policy, StopReason and its Stop) live here, at the bottom of the house, so that
every layer shares one type for them.

Layer 0 (foundation).
"""

from __future__ import annotations

from .bundle import BUNDLE_VERSION, BundleMeta, EngineInfo, MinimizeStats
from .enums import Policy, Status, Stop, StopReason, Symptom, Verdict
from .io import RecordError, read_record, write_record
from .keys import SPECIAL_INPUT, Fingerprint, RootKey, same_class
from .summary import (SUMMARY_VERSION, FailureRow, HarnessErrors, RootCauseRow, Summary, TriageSummary,
                      VerdictRow)
from .tolerance import Tolerance

__all__ = ["BUNDLE_VERSION", "BundleMeta", "EngineInfo", "FailureRow", "Fingerprint", "HarnessErrors",
           "MinimizeStats", "Policy", "RecordError", "RootCauseRow", "RootKey", "SPECIAL_INPUT", "SUMMARY_VERSION",
           "Status", "Stop", "StopReason", "Summary", "Symptom", "Tolerance", "TriageSummary", "Verdict", "VerdictRow",
           "read_record", "same_class", "write_record"]
