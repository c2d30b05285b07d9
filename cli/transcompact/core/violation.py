"""What `check` finds: a rule broken, with its id, severity and where (the rules: `ops.validity.check`
and each log format's own)."""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Violation:
    rule: str
    severity: str
    text: str
    index: int | None = None  # message index in the transcript
    line: int | None = None  # 1-based line, for JSON Lines formats

    def as_dict(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "message": self.text, "index": self.index, "line": self.line}
