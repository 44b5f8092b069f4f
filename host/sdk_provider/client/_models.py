"""Pydantic wire model of the ``initialize`` params (docs/behaviour.md#sdk-methods): snake_case fields, camelCase
keys."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["InitializeParams"]


class InitializeParams(BaseModel):
    """``initialize`` params; the optional keys are omitted when unset."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    cwd: str
    """The absolute cwd of the runtime (and of every session it creates)."""
    provider: str
    """The model provider."""
    model: str
    """The model."""
    reasoning_effort: str | None = Field(default=None, serialization_alias="reasoningEffort")
    """Only when the request set it."""
    max_tokens: int | None = Field(default=None, serialization_alias="maxTokens")
    """Only when the request or the entry set it."""

    def to_wire(self) -> dict[str, Any]:
        """The params object, with camelCase keys and no ``null`` members."""
        return self.model_dump(by_alias=True, exclude_none=True)
