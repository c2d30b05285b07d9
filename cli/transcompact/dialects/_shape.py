"""What both dialects ask of a message object before reading its content."""

from __future__ import annotations

from typing import Any

from ..core.errors import ShapeError
from ..core.jsondata import kind_of


def message_role(obj: Any, where: str) -> str:
    """The `role` of a message object, or the ShapeError that says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ShapeError(f"{where}: a message must be an object, not {kind_of(obj)}")
    role = obj.get("role")
    if not isinstance(role, str):
        raise ShapeError(f"{where}: a message needs a string `role`")
    return role
