"""Engine builds from source, inside the action's image (input ``build-command``).

A pull request's engine must be built with the Python, compilers and libc of the image
that runs it: a wheel built on the runner is refused by the image's 3.11 venv, and a
binary built there may need a newer glibc.  So the action builds both trees itself:

  PR    the checked-out workspace;
  base  the pull request's merge base with ``base-ref``, checked out as a git worktree
        inside the workspace.  Its output folder (``base-build``) may come back from
        ``actions/cache`` keyed by the base commit: a folder that already holds a build is
        used as it is, not rebuilt.

The command runs under ``bash -c`` in the tree's root and leaves the build in
``$GBFT_BUILD_OUT``: a wheel, or for the command engine a folder with its converter and
runner.  ccache serves both builds: ``CCACHE_DIR`` is a folder of the workspace (cache it),
``CCACHE_BASEDIR`` makes paths relative so the base worktree hits the PR's objects, and
CMake builds pick it up through ``CMAKE_<LANG>_COMPILER_LAUNCHER``.  A build that fails is
``BuildFailed``: one line naming the build, its command and the end of its log.  It is never
a finding about the engine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

LOG_TAIL_LINES = 15
# git refuses a repository owned by another user (the runner's checkout, mounted into a
# container running as root) unless it is declared safe.
_GIT_SAFE = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


class BuildFailed(RuntimeError):
    """A build that did not produce an engine: one line, naming which build and why."""

    def __init__(self, line: str, log_tail: str = "") -> None:
        super().__init__(line)
        self.log_tail = log_tail


@dataclass(frozen=True)
class SourceBuild:
    name: str  # "PR" or "base", as messages say it
    command: str  # run with bash -c in ``tree``
    tree: Path  # the source tree's root
    out: Path  # $GBFT_BUILD_OUT: where the command leaves the build
    ccache_dir: Path  # shared by both builds
    log: Path  # the command's whole output
    # Holds both trees (the workspace): ccache rewrites paths under it relative to the compile's
    # folder, so the base worktree's compiles hash like the workspace's.
    basedir: Path


@dataclass(frozen=True)
class BuildRecord:
    """What one build cost, for the step's outputs and the job summary."""
    name: str
    seconds: float
    cached: bool  # the output folder already held a build (restored by actions/cache)
    commit: str = ""  # the commit built, when known
    ccache_hits: int = 0
    ccache_misses: int = 0

    @property
    def hit_rate(self) -> float:
        n = self.ccache_hits + self.ccache_misses
        return self.ccache_hits / n if n else 0.0

    def line(self) -> str:
        if self.cached:
            return f"{self.name} build: restored from the cache ({self.commit[:12] or 'no commit'})"
        return (f"{self.name} build: {self.seconds:.0f} s, ccache {self.ccache_hits} hits / "
                f"{self.ccache_misses} misses ({100 * self.hit_rate:.0f}%)")


def holds_build(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def build(b: SourceBuild) -> BuildRecord:
    """Run the build command in its tree; the build must land in its (empty) output folder."""
    if holds_build(b.out):  # else a stale build there would pass for this one
        raise BuildFailed(f"the {b.name} build's output folder {b.out} is not empty")
    b.out.mkdir(parents=True, exist_ok=True)
    b.log.parent.mkdir(parents=True, exist_ok=True)
    before = ccache_counts(b.ccache_dir)
    t0 = time.monotonic()
    rc = _run_logged(["bash", "-c", b.command], b.tree, build_env(b), b.log)
    seconds = time.monotonic() - t0
    if rc != 0:
        _fail(f"the {b.name} build failed (exit {rc})", b)
    if not holds_build(b.out):
        _fail(f"the {b.name} build left nothing in $GBFT_BUILD_OUT ({b.out})", b)
    after = ccache_counts(b.ccache_dir)
    return BuildRecord(b.name, seconds, False, head_commit(b.tree),
                       after[0] - before[0], after[1] - before[1])


def _fail(what: str, b: SourceBuild) -> None:
    tail = log_tail(b.log)
    last = tail.splitlines()[-1] if tail else "(no output)"
    raise BuildFailed(f"{what}: {b.command} | log ({b.log.name}) ends: {last}", tail)


def build_env(b: SourceBuild) -> dict[str, str]:
    env = dict(os.environ)
    # The build is the pull request's code: it gets no action input (github-token is one) and
    # none of the runner's tokens (ACTIONS_RUNTIME_TOKEN reaches container actions).
    for k in [k for k in env if k.startswith(("INPUT_", "ACTIONS_")) or k == "GITHUB_TOKEN"]:
        env.pop(k)
    env.update({"GBFT_BUILD_OUT": str(b.out.resolve()), "CCACHE_DIR": str(b.ccache_dir.resolve()),
                "CCACHE_BASEDIR": str(b.basedir.resolve()), "CCACHE_NOHASHDIR": "true"})
    if shutil.which("ccache"):  # the image has it; elsewhere CMake must not be told to launch it
        env.update({"CMAKE_C_COMPILER_LAUNCHER": "ccache", "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"})
    return env


def _run_logged(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> int:
    """The command's output to ``log``.  Its whole process group ends with it: what a build
    leaves running (a compiler server, a daemon) would take the fuzzing budget's cores, and a
    signal here (a cancelled job) must stop more than bash."""
    with open(log, "wb") as f:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return p.wait()
        finally:
            _kill_group(p)


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing of the group is left
    p.wait()


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def ccache_counts(ccache_dir: Path) -> tuple[int, int]:
    """(hits, misses) so far in this cache; (0, 0) without ccache."""
    env = {**os.environ, "CCACHE_DIR": str(ccache_dir)}
    try:
        r = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0, 0
    stats = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)

    def n(*keys: str) -> int:
        return sum(int(stats.get(k, "0") or 0) for k in keys)

    return n("direct_cache_hit", "preprocessed_cache_hit"), n("cache_miss")


def git(tree: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                       env={**os.environ, **_GIT_SAFE}, timeout=600)
    if r.returncode != 0:
        raise BuildFailed(f"git {' '.join(args)} failed in {tree}: {r.stderr.strip().splitlines()[-1:] or ['?']}")
    return r.stdout.strip()


def head_commit(tree: Path) -> str:
    try:
        return git(tree, "rev-parse", "HEAD")
    except (BuildFailed, OSError):
        return ""


def merge_base_tree(repo: Path, ref: str, dest: Path) -> str:
    """Check out the merge base of HEAD and ``ref`` at ``dest`` (a detached worktree); its commit.

    A shallow checkout has no merge base: fetch the history (``fetch-depth: 0``)."""
    try:
        sha = git(repo, "merge-base", "HEAD", ref)
    except BuildFailed as e:
        raise BuildFailed(f"no merge base of HEAD and {ref!r} (check out with fetch-depth: 0): {e}") from None
    if (dest / ".git").exists():  # a re-run of the job: the worktree is there already
        git(repo, "worktree", "remove", "--force", str(dest))
    git(repo, "worktree", "add", "--detach", "--force", str(dest), sha)
    return sha


BASE_TREE = ".gbft-base-src"  # the base worktree, inside the workspace (ccache's basedir)


@dataclass(frozen=True)
class BuildPlan:
    """Both builds of one step: the PR's from the workspace, the base's (when ``base_ref`` is
    set and ``base_out`` does not already hold a build) from the merge base."""
    command: str
    workspace: Path
    pr_out: Path
    base_out: Path | None  # None: no base build
    base_ref: str  # "" : base_out is used as it is (a prebuilt or restored folder)
    ccache_dir: Path
    log_dir: Path

    def run(self) -> list[BuildRecord]:
        records = [build(self._source("PR", self.workspace, self.pr_out))]
        if self.base_out is not None and self.base_ref:
            records.append(self._base())
        return records

    def _base(self) -> BuildRecord:
        assert self.base_out is not None
        if holds_build(self.base_out):  # restored by actions/cache, keyed by the base commit
            return BuildRecord("base", 0.0, True, git(self.workspace, "merge-base", "HEAD", self.base_ref))
        tree = self.workspace / BASE_TREE
        merge_base_tree(self.workspace, self.base_ref, tree)
        return build(self._source("base", tree, self.base_out))  # its commit: the worktree's HEAD

    def _source(self, name: str, tree: Path, out: Path) -> SourceBuild:
        return SourceBuild(name, self.command, tree, out, self.ccache_dir,
                           self.log_dir / f"build-{name.lower()}.log", self.workspace)
