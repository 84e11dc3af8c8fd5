"""Tool effects (ADR-010): what a call may change, which decides retries and reconciliation."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = ["TOOL_EFFECTS", "ToolEffect"]

ToolEffect: TypeAlias = Literal["read", "idempotent-write", "side-effect"]
"""What a tool does to the world; decides whether a resumed call may run again."""
TOOL_EFFECTS: Final[tuple[ToolEffect, ...]] = ("read", "idempotent-write", "side-effect")
