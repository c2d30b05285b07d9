"""An agent's real CLI from the npm registry, pinned, installed into `.venv/agents/<name>/<version>`.

The resume tests (test_*_resume.py) make each agent whose format transcompact writes the judge of
what we write. `make agents` installs them all (`python -m tests.npm_agent`); without an agent, or
without node, its tests skip, except under `CI=true`, where the first test that needs it installs it
with npm and fails if it cannot. `make agents-latest` (`python -m tests.npm_agent --latest`) installs
the newest release of each (npm's `latest` tag) and runs the resume tests against them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import ROOT, in_ci

AGENTS_DIR = ROOT / ".venv" / "agents"


@dataclass(frozen=True)
class Layout:
    """How a release of a package runs once installed."""

    entry: str  # the file under the package that runs it (a JavaScript file, or a native binary)
    omit_optional: bool = False  # leave out optional packages (a native binary may be one: then keep them)


def release(version: str) -> tuple[int, ...]:
    """A version's numbers, to compare releases (`2.1.112` < `2.1.332`); a pre-release's suffix aside."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("-", 1)[0]))


NATIVE = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"MZ")  # the first bytes of an executable: Linux, macOS, Windows


@dataclass(frozen=True)
class NpmAgent:
    """One agent's npm package at a pinned version, and how its command is run once installed."""

    name: str  # a short name: the folder, the environment variable that picks another version
    package: str  # the npm package
    pinned: str
    layout: Layout  # how the pinned release (and every later one) runs
    older: tuple[tuple[str, Layout], ...] = ()  # (a release, how the releases before it run), newest first

    @property
    def variable(self) -> str:
        """The environment variable that picks another release: CLAUDE_CODE_VERSION, CODEX_VERSION, …"""
        return f"{self.name.upper().replace('-', '_')}_VERSION"

    @property
    def version(self) -> str:
        return os.environ.get(self.variable, self.pinned)

    @property
    def runs(self) -> Layout:
        """How the release asked for runs."""
        runs = self.layout
        for since, before in self.older:
            if release(self.version) < release(since):
                runs = before
        return runs

    @property
    def entry(self) -> str:
        return self.runs.entry

    @property
    def prefix(self) -> Path:
        return AGENTS_DIR / self.name / self.version

    @property
    def directory(self) -> Path:
        return self.prefix / "node_modules" / self.package

    def npm_install(self) -> list[str]:
        return ["npm", "install", "--prefix", str(self.prefix), "--no-save", "--no-audit", "--no-fund", "--loglevel=error",
                *(["--omit=optional"] if self.runs.omit_optional else []), f"{self.package}@{self.version}"]

    def installed(self) -> list[str] | None:
        """The command that runs the installed release; None when it is not installed (or node is missing)."""
        try:
            version = json.loads((self.directory / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None
        entry = self.directory / self.entry
        if version != self.version or not entry.is_file():
            return None
        if entry.suffix in (".js", ".mjs", ".cjs"):
            node = shutil.which("node")
            return [node, str(entry)] if node else None
        # A native binary; not the stand-in a package ships until its postinstall puts the binary there
        # (Claude Code's `bin/claude.exe` is a shell script that says the binary is missing).
        with open(entry, "rb") as file:
            native = file.read(4).startswith(NATIVE)
        return [str(entry)] if native and os.access(entry, os.X_OK) else None

    def install(self) -> list[str]:
        """Install the pinned release with npm; the command that runs it. The test processes
        (`pytest -n`) take turns: the first installs, the others find it installed."""
        import fcntl

        self.prefix.mkdir(parents=True, exist_ok=True)
        with open(self.prefix / ".installing", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            command = self.installed()
            if command is not None:
                return command
            done = subprocess.run(self.npm_install(), capture_output=True, text=True, timeout=900, check=False)
            command = self.installed()
        if done.returncode != 0 or command is None:
            raise RuntimeError(f"npm could not install {self.package}@{self.version}:\n{done.stdout[-1000:]}{done.stderr[-2000:]}")
        return command

    def command(self) -> list[str]:
        """For a test: the command that runs the agent; skips when it cannot (under CI=true installs it, or fails)."""
        command = self.installed()
        if command is not None:
            return command
        if not in_ci():
            if shutil.which("node") is None:
                pytest.skip(f"node is not installed: the real {self.package} cannot run")
            pytest.skip(f"{self.package} {self.version} is not installed in {self.prefix.relative_to(ROOT)}: "
                        "run `make agents` (under CI=true the tests install it)")
        if shutil.which("node") is None or shutil.which("npm") is None:
            pytest.fail(f"CI=true: node and npm are needed to install and run {self.package}")
        try:
            return self.install()
        except RuntimeError as error:
            pytest.fail(str(error))


@dataclass(frozen=True)
class Release(NpmAgent):
    """An agent at one release whatever its *_VERSION variable says: the release a recorded log was
    made with, which sends the system prompt and tools that log's usage counted."""

    @property
    def version(self) -> str:
        return self.pinned


def at_release(agent: NpmAgent, version: str) -> Release:
    return Release(agent.name, agent.package, version, agent.layout, agent.older)


# The judges, each pinned to the newest release (npm's `latest`) when the pins were last moved: the
# releases users run. From 2.1.113 on, Claude Code's package is a native binary: its platform's
# optional package (`@anthropic-ai/claude-code-linux-x64`, …) holds it, and the package's postinstall
# puts it at `bin/claude.exe`, which is what `claude` runs (no node); before, `cli.js` ran with node
# and needed none of its optional packages (sharp, for images). Codex's JavaScript launcher runs the
# native binary of its platform package, an optional one.
CLAUDE_CODE = NpmAgent("claude-code", "@anthropic-ai/claude-code", "2.1.332", Layout("bin/claude.exe"),
                       older=(("2.1.113", Layout("cli.js", omit_optional=True)),))
CODEX = NpmAgent("codex", "@openai/codex", "0.171.0", Layout("bin/codex.js"))
GEMINI_CLI = NpmAgent("gemini-cli", "@google/gemini-cli", "0.61.0", Layout("bundle/gemini.js"))
PI = NpmAgent("pi", "@mariozechner/pi-coding-agent", "0.73.1", Layout("dist/cli.js"))
AGENTS = (CLAUDE_CODE, CODEX, GEMINI_CLI, PI)
# The Claude Code release that recorded tests/recorded/claude-code/ (tests/recorded/README.md: its
# logs hold only the session; 2.1.332 adds about 60 KB of request snapshots per turn).
CLAUDE_CODE_RECORDED = "2.1.112"


def latest(agent: NpmAgent) -> str:
    """The release npm's `latest` tag names now."""
    done = subprocess.run(["npm", "view", f"{agent.package}@latest", "version"], capture_output=True, text=True,
                          timeout=120, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"npm could not say which release of {agent.package} is the latest:\n{done.stderr[-1000:]}")
    return done.stdout.strip().splitlines()[-1].strip().strip("'")


def main(arguments: list[str]) -> None:
    """`make agents`: install every pinned agent that is not installed yet (or the release its
    *_VERSION variable names). With `--latest` (`make agents-latest`), the newest release of each
    instead, and print on stdout the variables that pick them (`CLAUDE_CODE_VERSION=2.1.332` …)."""
    newest = "--latest" in arguments
    chosen = []
    for agent in AGENTS:
        if newest:
            os.environ[agent.variable] = latest(agent)
        if agent.installed() is None:
            print(f"installing {agent.package}@{agent.version} into {agent.prefix.relative_to(ROOT)}", file=sys.stderr)
            agent.install()
        print(f"{agent.package}@{agent.version}{'' if agent.version == agent.pinned else f' (pinned: {agent.pinned})'}: "
              f"{' '.join(agent.installed() or [])}", file=sys.stderr if newest else sys.stdout)
        chosen.append(f"{agent.variable}={agent.version}")
    if newest:
        print(" ".join(chosen))


if __name__ == "__main__":
    main(sys.argv[1:])
