"""The action's configuration: read once from ``INPUT_*``, validated in one place.

Docker actions get each input as ``INPUT_<NAME>`` with the name upper-cased and
hyphens kept (``budget-seconds`` -> ``INPUT_BUDGET-SECONDS``).  ``validate``
names the bad input and its allowed values in one line, which becomes the
step's error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..knowledge.registry import ENGINES as _REGISTRY
from ..frontends import corpus_file, parse_frontends
from ..frontends import DEFAULT_OPSETS, parse_opsets
from ..records.config import ShardError, parse_shard
from ..records.config import KNOBS, from_texts

ENGINES = tuple(_REGISTRY)  # every registered engine (module:Class adapters are for tests)
REPORTS = ("issues", "summary", "none")
FAIL_ON = ("new", "any", "never")

# input name -> (field, default); the action.yml inputs must be exactly these (a test checks).
INPUTS: dict[str, tuple[str, str]] = {
    "engine": ("engine", "mnn"),
    "frontend": ("frontend", "tf"),
    "onnx-opset": ("onnx_opset", ""),
    "engine-build": ("engine_build", ""),
    "base-build": ("base_build", ""),
    "build-command": ("build_command", ""),
    "base-ref": ("base_ref", ""),
    "ccache-dir": ("ccache_dir", ".gbft-ccache"),
    "converter-command": ("converter_command", ""),
    "runner-command": ("runner_command", ""),
    "budget-seconds": ("budget_seconds", "300"),
    "shard": ("shard", "1/1"),
    "corpus": ("corpus", ""),
    "state-dir": ("state_dir", ""),
    "report": ("report", "summary"),
    "github-token": ("github_token", ""),
    "repository": ("repository", ""),
    "max-new-issues": ("max_new_issues", "5"),
    "fail-on": ("fail_on", "new"),
    "platform-label": ("platform_label", ""),
    "output-dir": ("output_dir", "gbft-out"),
}
# ... and the knobs the CLI shares (records.config.KNOBS), each an input of its own name.
KNOB_INPUTS: dict[str, str] = {k.name: k.default for k in KNOBS}


class ConfigError(ValueError):
    """One line naming the bad input and what it may be."""


@dataclass
class ActionConfig:
    engine: str = "mnn"
    frontend: str = "tf"  # frontends.FRONTENDS, or a comma list of them (a mixed campaign)
    onnx_opset: str = ""  # the opsets the onnx front end writes, e.g. 27 or 27,17 ("": frontends.DEFAULT_OPSETS)
    engine_build: str = ""
    base_build: str = ""
    build_command: str = ""  # builds the engine inside the image (knowledge.source)
    base_ref: str = ""  # with build_command: the base build is of the merge base with this ref
    ccache_dir: str = ".gbft-ccache"
    converter_command: str = ""
    runner_command: str = ""
    budget_seconds: str = "300"
    shard: str = "1/1"  # I/N (records.config.parse_shard)
    corpus: str = ""
    state_dir: str = ""
    report: str = "summary"
    github_token: str = ""
    repository: str = ""
    max_new_issues: str = "5"
    fail_on: str = "new"
    platform_label: str = ""
    output_dir: str = "gbft-out"
    workspace: str = "."
    knobs: dict[str, str] = field(default_factory=dict)  # the shared knobs' inputs, by name, as given

    def __repr__(self) -> str:  # the token must never reach a log
        return f"ActionConfig({repr_safe(self)})"

    @staticmethod
    def from_env(env: dict[str, str] | None = None) -> ActionConfig:
        e = dict(os.environ if env is None else env)
        # An input left empty in the workflow arrives as "": it means the default.
        kw = {fld: e.get(f"INPUT_{name.upper()}", "").strip() or default for name, (fld, default) in INPUTS.items()}
        knobs = {name: e.get(f"INPUT_{name.upper()}", "").strip() or default for name, default in KNOB_INPUTS.items()}
        cfg = ActionConfig(**kw, workspace=e.get("GITHUB_WORKSPACE", "."), knobs=knobs)
        if not cfg.repository:
            cfg.repository = e.get("GITHUB_REPOSITORY", "")
        return cfg

    # -- typed views (valid only after validate) ---------------------------------------
    @property
    def frontends(self) -> str:
        """The front end(s) as the campaign takes them: names, comma separated, normalised."""
        return ",".join(fe.name for fe in parse_frontends(self.frontend))

    @property
    def corpus_file(self) -> str:
        """The input's corpus, else one front end's default; "" when mixed (each its own)."""
        return corpus_file(parse_frontends(self.frontend), str(self.path(self.corpus)) if self.corpus else "")

    @property
    def budget(self) -> float:
        return float(self.budget_seconds)

    @property
    def opsets(self) -> tuple[int, ...]:
        return parse_opsets(self.onnx_opset) if self.onnx_opset else DEFAULT_OPSETS

    @property
    def shard_pair(self) -> tuple[int, int]:
        return parse_shard(self.shard)

    def knob_values(self) -> dict[str, object]:
        """The shared knobs' values by Config field (records.config.KNOBS), the guide's folder
        taken in the workspace; a ConfigError names the bad input."""
        try:
            values = from_texts(self.knobs)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if values["guide"]:
            values["guide"] = str(self.path(values["guide"]))
        return values

    def path(self, p: str) -> Path:
        q = Path(p)
        return q if q.is_absolute() else Path(self.workspace) / q

    def validate(self) -> ActionConfig:
        _choice("engine", self.engine, ENGINES)
        try:
            fes = parse_frontends(self.frontend)
        except ValueError as e:
            raise ConfigError(f"input 'frontend': {e}") from None
        if len(fes) > 1 and self.corpus:
            raise ConfigError(f"input 'corpus' is one front end's blocks: leave it empty with frontend "
                              f"{self.frontend!r} (each front end uses its default corpus)")
        _choice("report", self.report, REPORTS)
        _choice("fail-on", self.fail_on, FAIL_ON)
        _number("budget-seconds", self.budget_seconds, float, 10, 6 * 3600, "a number of seconds from 10 to 21600")
        if self.onnx_opset:
            try:
                parse_opsets(self.onnx_opset, "input 'onnx-opset'")
            except ValueError as e:
                raise ConfigError(str(e)) from None
        _number("max-new-issues", self.max_new_issues, int, 0, 100, "an integer from 0 to 100")
        try:
            parse_shard(self.shard)
        except ShardError as e:
            raise ConfigError(f"input 'shard': {e}") from None
        values = self.knob_values()  # each shared knob by its own range (gbft_action.knobs)
        if self.knobs.get("guide") and values["chooser"] != "learned":
            raise ConfigError("input 'guide' is the learned chooser's: set chooser to learned, or leave guide empty")
        if self.report == "issues" and not self.github_token:
            raise ConfigError("input 'github-token' is required when report is 'issues'")
        if self.report == "issues" and "/" not in self.repository:
            raise ConfigError(f"input 'repository' must be OWNER/NAME for report 'issues', got {self.repository!r}")
        if self.engine == "command" and not (self.converter_command and self.runner_command):
            raise ConfigError("engine 'command' needs inputs 'converter-command' and 'runner-command'")
        self._validate_build()
        return self

    def _validate_build(self) -> None:
        if self.base_ref and not self.build_command:
            raise ConfigError("input 'base-ref' needs 'build-command' (the base is built from source at the merge base)")
        if self.build_command:
            pr = self.path(self.pr_build_dir)
            if pr.exists() and (not pr.is_dir() or any(pr.iterdir())):
                raise ConfigError(f"input 'engine-build': {self.pr_build_dir} is where build-command leaves the "
                                  f"PR's build; it must not exist yet or be an empty folder")
        # With build-command, engine-build is where the PR's build goes, and with base-ref so is
        # base-build: only a folder given to be used as it is must exist.
        given = ["corpus"]
        if not self.build_command:
            given.append("engine-build")
        if not self.base_ref:
            given.append("base-build")
        for name, value in [*((n, getattr(self, INPUTS[n][0])) for n in given), ("guide", self.knobs.get("guide", ""))]:
            if value and not self.path(value).exists():
                raise ConfigError(f"input '{name}': {value} does not exist in the workspace")

    # -- where build-command leaves the builds ---------------------------------------------
    @property
    def pr_build_dir(self) -> str:
        return self.engine_build or ("gbft-build/pr" if self.build_command else "")

    @property
    def base_build_dir(self) -> str:
        return self.base_build or ("gbft-build/base" if self.build_command and self.base_ref else "")

def repr_safe(cfg: ActionConfig) -> dict[str, object]:
    return {f.name: ("***" if f.name == "github_token" and getattr(cfg, f.name) else getattr(cfg, f.name))
            for f in fields(cfg)}


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"input '{name}' must be one of {', '.join(allowed)}; got {value!r}")


def _number(name: str, value: str, kind: type, lo: float, hi: float, what: str) -> None:
    try:
        v = kind(value)
    except ValueError:
        raise ConfigError(f"input '{name}' must be {what}; got {value!r}") from None
    if not lo <= v <= hi:
        raise ConfigError(f"input '{name}' must be {what}; got {value!r}")
