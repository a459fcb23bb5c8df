"""What the host knows of an engine without importing it: how to read its log, how to name
its package, how its repro script runs it.

The adapter (``engines/<name>.py``) runs in the engine worker and imports the engine's
library; the host process never imports it (MNN's converter and TensorFlow abort when
loaded together).  Everything the engine-neutral modules (fingerprints, repro scripts,
issues) need to know about one engine lives in an ``EngineKnowledge`` instead, which the
registry (``knowledge.registry.ENGINES``) holds beside the adapter's ``module:Class``.

``EngineKnowledge`` itself is the generic engine: no log patterns (a failure is the first
line of its message), no package name, a repro stage that says it has to be written.  An
engine with recognisable log formats subclasses it (``knowledge/mnn.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    """One engine failure as its log tells it.

    kind  unsupported | check | missing-output | error (the fingerprint's vocabulary)
    code  what identifies the failure within its kind (raw; fingerprints normalise it)
    op    the operator type it is about; None: the log does not say, the caller's guess
          stands (the failing operator it knows, or one the log names)
    """

    kind: str
    code: str = ""
    op: str | None = None
    message: str = ""  # the log line it was read from, for people


@dataclass(frozen=True)
class Package:
    """How a maintainer installs the engine to run a repro script."""

    pip: str = ""  # the distribution's name on PyPI; "" when it is not pip-installable
    text: str = "the engine"  # what the repro needs, when there is nothing to pip-install

    def needs(self, version: str = "") -> str:
        """The repro's "needs ..." phrase, pinned to ``version`` (the one the bug showed on)
        when it looks like a release number: maintainers ask for a retest on a release."""
        if not self.pip:
            return self.text
        pin = f"=={version}" if re.fullmatch(r"[0-9][0-9A-Za-z.+-]{0,39}", version or "") else ""
        return f"{self.pip} (pip install {self.pip}{pin})"


# A line that reads like an error, in any engine's English (engine-specific phrases are added
# by subclasses); used for the message of a conversion failure, whose adapter only says "failed".
ERROR_WORDS = r"Error|error|Can't|Failed|failed|abort|Segmentation"


class EngineKnowledge:
    """The generic engine's knowledge; subclasses override what their engine says differently."""

    #: the engine's registry name ("" for the generic engine)
    name: str = ""
    package: Package = Package()
    #: the template (under templates/) with the repro script's ``engine(d)`` stage
    repro_template: str = "engine_generic.py.j2"
    #: a log line matching this reads like an error ...
    error_words: re.Pattern[str] = re.compile(f"({ERROR_WORDS})")
    #: ... unless it holds one of these (a summary line that says nothing of the cause)
    not_errors: tuple[str, ...] = ()
    #: log lines that name a node without blaming it (a converter's notes on a model it took)
    notes: re.Pattern[str] | None = None

    def __init__(self, adapter: str = "", package: Package | None = None) -> None:
        #: ``module:Class`` of the adapter, imported by the engine worker only
        self.adapter = adapter
        if package is not None:  # an engine with no log patterns still has a package
            self.package = package

    def explain(self, stage: str, log: str, message: str) -> Failure | None:
        """What failed, read from the worker's log and the adapter's message; None when
        the engine's own words say nothing this knowledge recognises (the fingerprint then
        takes the message's first line as the code)."""
        return None

    def op_named(self, log: str) -> str:
        """An operator type the log names in the engine's own notation ("" if none)."""
        return ""

    def blaming(self, log: str) -> str:
        """The log without its ``notes``: the lines where a node named may be the culprit."""
        if self.notes is None:
            return log
        return "\n".join(line for line in log.splitlines() if not self.notes.search(line))

    #: the adapter's settings a repro and a replay must use too: name -> (the environment
    #: variable the adapter reads it from, the values it takes)
    setting_vars: dict[str, tuple[str, tuple[str, ...]]] = {}

    def settings(self, given: Mapping[str, str]) -> dict[str, str]:
        """Of the settings a bundle says the engine ran with (its adapter's hello, ``settings``),
        those a repro and a replay must use too; only values this knowledge recognises (a
        bundle is untrusted data)."""
        return {name: str(given[name]) for name, (_, allowed) in self.setting_vars.items()
                if str(given.get(name, "")) in allowed}

    def parse_settings(self, text: str) -> dict[str, str]:
        """``name=value,...`` as a user writes it (``--engine-settings``), checked against
        ``setting_vars``; ValueError names the bad part."""
        out: dict[str, str] = {}
        for item in filter(None, (x.strip() for x in text.split(","))):
            name, eq, value = item.partition("=")
            if not eq or name not in self.setting_vars:
                known = ", ".join(sorted(self.setting_vars)) or "none"
                raise ValueError(f"{item!r}: not a setting of {self.name} (name=value; settings: {known})")
            allowed = self.setting_vars[name][1]
            if value not in allowed:
                raise ValueError(f"{item!r}: {name} takes {', '.join(allowed)}")
            out[name] = value
        return out

    #: the settings of the thread-count oracle's second run ({}: the engine has no thread setting)
    threads_oracle: Mapping[str, str] = {}

    #: per front end, groups of operators one code path of the engine's converter handles (one
    #: function for all of them): a defect one of them shows is keyed by the group
    #: (bugs.rootcause.in_unit), as a maintainer would fix it once.
    converter_units: Mapping[str, tuple[tuple[str, ...], ...]] = {}

    #: the engine's modules by source folder, first match wins (engine coverage is counted per
    #: module: engines.coverage.place): (a part of a source file's path, the module's name)
    source_modules: tuple[tuple[str, str], ...] = ()

    def module_of(self, path: str) -> str:
        """The engine module a source file belongs to ("" for none of them)."""
        return next((name for part, name in self.source_modules if part in path), "")

    def unit_of(self, frontend: str, op: str) -> tuple[str, ...]:
        """The group ``op`` is converted in, for ``frontend``'s models (() when it has none)."""
        return next((u for u in self.converter_units.get(frontend, ()) if op in u), ())

    def half_arithmetic(self, settings: Mapping[str, str]) -> bool:
        """Whether the engine computes in float16 with these settings (judged at float16's bound)."""
        return False

    def weight_bits(self, settings: Mapping[str, str]) -> int:
        """The bits the converter quantises weights to with these settings (0: it does not);
        judged against the float model at that quantisation's bound (oracle.bounds_for)."""
        return 0

    def env_for(self, settings: dict[str, str]) -> dict[str, str]:
        """The adapter's environment for ``settings`` (a replay runs the engine as found)."""
        return {self.setting_vars[k][0]: v for k, v in settings.items() if k in self.setting_vars}

    def error_line(self, log: str) -> str:
        """The first line of the log that reads like an error ("" if none)."""
        for line in log.splitlines():
            if self.error_words.search(line) and not any(s in line for s in self.not_errors):
                return line.strip()
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.adapter!r})"


class CommandKnowledge(EngineKnowledge):
    """The command engine: any build, driven by two command templates (engines/command.py).
    Its log is whatever the commands print, so nothing engine-specific is read from it."""

    name = "command"
    package = Package(text="the engine build (GBFT_ENGINE_BUILD)")
    repro_template = "engine_command.py.j2"


GENERIC = EngineKnowledge()
