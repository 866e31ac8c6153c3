"""What a brokered tool call returns, and the two ways it stops early."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ToolResult:
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    allowed: bool = True  # the access decision (actions.jsonl `allowed`)
    reason: str = ""  # what was authorised, or why it was denied (actions.jsonl `reason`)
    edit: str | None = None  # `kubectl edit`, first round: the object for the caller's editor

    def to_wire(self) -> dict[str, object]:
        return {"code": self.code, "stdout": self.stdout, "stderr": self.stderr, "edit": self.edit}


class Denied(Exception):
    """The access surface or RBAC refuses the call; the message is what the tool prints."""


class Failed(Exception):
    """An allowed call that fails (bad arguments, not found, not supported locally)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code
