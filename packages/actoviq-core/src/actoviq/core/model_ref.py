"""Model references: ``"provider:model"`` strings or ``{provider, model}`` (spec 02 §1.3)."""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from actoviq.core.errors import ModelRefError

__all__ = ["ModelRef", "ModelRefParts", "model_ref_parts", "parse_model_ref"]


@attrs.frozen(kw_only=True, slots=True)
class ModelRefParts:
    """A resolved reference: which provider, which model."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"

    def to_json(self) -> dict[str, str]:
        """Wire form ``{provider, model}``."""
        return {"provider": self.provider, "model": self.model}


ModelRef: TypeAlias = "str | ModelRefParts"
"""A model reference: `"provider:model"` text or `ModelRefParts`."""


def model_ref_parts(ref: Any, default_provider_id: str | None = None) -> ModelRefParts:
    """Split a reference on its **first** colon.

    ``"openai-responses:ft:gpt-4o:org:x"`` is provider ``openai-responses``, model
    ``ft:gpt-4o:org:x``. A string without a colon uses ``default_provider_id``.

    Raises:
        ModelRefError: empty parts, no provider and no default, or a value of another type.
    """
    if isinstance(ref, ModelRefParts):
        provider, model = ref.provider, ref.model
    elif isinstance(ref, dict):
        provider = ref.get("provider")  # type: ignore[union-attr]
        model = ref.get("model")  # type: ignore[union-attr]
        if not isinstance(provider, str) or not isinstance(model, str):
            raise ModelRefError("A model reference object needs string 'provider' and 'model'.")
    elif isinstance(ref, str):
        text = ref.strip()
        if not text:
            raise ModelRefError("A model reference must be a non-empty string.")
        head, sep, tail = text.partition(":")
        if sep:
            provider, model = head.strip(), tail.strip()
        elif default_provider_id is not None:
            provider, model = default_provider_id, text
        else:
            raise ModelRefError(
                f"Model reference {ref!r} has no provider prefix and no default provider is set; "
                "write it as 'provider:model'."
            )
    else:
        raise ModelRefError(
            f"A model reference must be a string or {{provider, model}}, got {type(ref).__name__}."
        )
    if not provider.strip() or not model.strip():
        raise ModelRefError(f"Model reference {ref!r} needs a non-empty provider and model.")
    return ModelRefParts(provider=provider, model=model)


parse_model_ref = model_ref_parts
"""Alias of `model_ref_parts`: split a model reference into provider and model."""
