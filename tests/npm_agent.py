"""An agent's real CLI from the npm registry, pinned, installed into `.venv/agents/<name>/<version>`.

The resume tests (test_*_resume.py) make each agent whose format transcompact writes the judge of
what we write. `make agents` installs them all (`python -m tests.npm_agent`); without an agent, or
without node, its tests skip, except under `CI=true`, where the first test that needs it installs it
with npm and fails if it cannot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import ROOT, in_ci

AGENTS_DIR = ROOT / ".venv" / "agents"


@dataclass(frozen=True)
class NpmAgent:
    """One agent's npm package at a pinned version, and how its command is run once installed."""

    name: str  # a short name: the folder, the environment variable that picks another version
    package: str  # the npm package
    pinned: str
    entry: str  # the file under the package that runs it (a JavaScript file, or a native binary)
    omit_optional: bool = False  # leave out optional packages (a native binary may be one: then keep them)

    @property
    def version(self) -> str:
        return os.environ.get(f"{self.name.upper().replace('-', '_')}_VERSION", self.pinned)

    @property
    def prefix(self) -> Path:
        return AGENTS_DIR / self.name / self.version

    @property
    def directory(self) -> Path:
        return self.prefix / "node_modules" / self.package

    def npm_install(self) -> list[str]:
        return ["npm", "install", "--prefix", str(self.prefix), "--no-save", "--no-audit", "--no-fund", "--loglevel=error",
                *(["--omit=optional"] if self.omit_optional else []), f"{self.package}@{self.version}"]

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
        return [str(entry)] if os.access(entry, os.X_OK) else None

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


# The judges, each pinned to the release the resume tests were written against (docs/formats.md names them).
# The JavaScript release of Claude Code needs none of its optional packages (sharp, for images); from
# 2.1.113 on, the package installs a native binary instead. Codex's JavaScript launcher runs the native
# binary of its platform package, an optional one.
CLAUDE_CODE = NpmAgent("claude-code", "@anthropic-ai/claude-code", "2.1.112", "cli.js", omit_optional=True)
CODEX = NpmAgent("codex", "@openai/codex", "0.171.0", "bin/codex.js")
GEMINI_CLI = NpmAgent("gemini-cli", "@google/gemini-cli", "0.61.0", "bundle/gemini.js")
PI = NpmAgent("pi", "@mariozechner/pi-coding-agent", "0.73.1", "dist/cli.js")
AGENTS = (CLAUDE_CODE, CODEX, GEMINI_CLI, PI)


if __name__ == "__main__":  # `make agents`: install every pinned agent that is not installed yet
    for agent in AGENTS:
        if agent.installed() is None:
            print(f"installing {agent.package}@{agent.version} into {agent.prefix.relative_to(ROOT)}", file=sys.stderr)
            agent.install()
        print(f"{agent.package}@{agent.version}: {' '.join(agent.installed() or [])}")
