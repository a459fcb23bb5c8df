"""report.json: what ``gbft report`` did with each issue, as ``ReportEntry`` rows per outcome."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportEntry:
    """One issue the report touched (or chose not to): which bug, which issue, and why."""

    fingerprint: str = ""  # the bundle shown ("" for a tracking issue)
    title: str = ""
    root_cause: str = ""  # "" for an output without root causes (one issue per fingerprint)
    issue: int | None = None  # the issue's number, once there is one
    url: str = ""
    reason: str = ""  # why skipped, failed, closed or left open

    @property
    def key(self) -> str:
        """What the issue is keyed by: the root cause, else the fingerprint."""
        return self.root_cause or self.fingerprint

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"fingerprint": self.fingerprint}
        d.update({k: v for k, v in (("title", self.title), ("root_cause", self.root_cause), ("url", self.url),
                                    ("reason", self.reason)) if v})
        return d if self.issue is None else {**d, "issue": self.issue}

    def line(self, kind: str) -> str:
        """The CLI's line for it: ``kind`` (filed, skipped...), key, issue, reason, title."""
        where = f" #{self.issue}" if self.issue else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"{kind:13s} {self.key}{where}{why}  {self.title}"
