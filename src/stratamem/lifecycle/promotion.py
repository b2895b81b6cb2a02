"""Promotion: copying a memory to a broader layer, after a sensitivity check, keeping provenance.

Upward only: a broader layer than the source (``session``/``agent`` → ``user`` → ``project`` →
``team`` → ``org`` → ``company``); ``object`` is lateral: ``session → object`` and ``object →
user/project/team/org/company``. Anything else raises INVALID_SCOPE_PROMOTION. Promoted content is
PII-redacted; ``sensitive: true`` / ``private: true`` entries are never promoted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ErrorCode, MemoryError
from ..hygiene.pii import redact_pii
from ..layers import parse_layer, require_identifiers
from ..model import AddMemoryInput, Layer, LayerIdentifiers, MemoryEntry

#: How broad a layer is; promotion must strictly increase it (object handled separately).
BREADTH: dict[Layer, int] = {
    Layer.AGENT: 0,
    Layer.SESSION: 0,
    Layer.USER: 1,
    Layer.PROJECT: 2,
    Layer.TEAM: 3,
    Layer.ORG: 4,
    Layer.COMPANY: 5,
}


def parse_target(value: Any, operation: str = "promote") -> Layer:
    """The target layer; other APIs' scope names (``workspace``, ``global``) are understood by the
    layer parser itself (``stratamem.scopes``)."""
    return parse_layer(value, operation)


def can_promote(source: Layer, target: Layer) -> bool:
    if source == target:
        return False
    if target == Layer.OBJECT:
        return source == Layer.SESSION
    if source == Layer.OBJECT:
        return target in (Layer.USER, Layer.PROJECT, Layer.TEAM, Layer.ORG, Layer.COMPANY)
    return BREADTH[target] > BREADTH[source]


def allowed_targets(source: Layer) -> list[str]:
    return [layer.value for layer in Layer if can_promote(source, layer)]


def check_promotion(source: Layer, target: Layer, operation: str = "promote") -> None:
    if not can_promote(source, target):
        raise MemoryError(
            ErrorCode.INVALID_SCOPE_PROMOTION,
            f"cannot promote from '{source.value}' to '{target.value}': promotion is only valid upward "
            f"(allowed from '{source.value}': {', '.join(allowed_targets(source)) or 'none'})",
            operation=operation,
            details={"source_layer": source.value, "target_layer": target.value, "allowed": allowed_targets(source)},
            retryable=False,
        )


def sensitivity(metadata: Mapping[str, Any]) -> str | None:
    """``"sensitive"`` or ``"private"`` when the entry is flagged so (never promoted), else None."""
    for flag in ("sensitive", "private"):
        if metadata.get(flag) is True:
            return flag
    return None


def build_promotion(
    source: MemoryEntry,
    target: Layer,
    identifiers: LayerIdentifiers,
    *,
    content: str | None = None,
    tags: list[str] | None = None,
    redact: bool = True,
    operation: str = "promote",
) -> AddMemoryInput:
    """The new entry at ``target``: source content (redacted), metadata and provenance, linked by
    ``promotedFromId``. Target identifiers default to the source's (e.g. its userId)."""
    check_promotion(source.layer, target, operation)
    merged = LayerIdentifiers(**{**source.identifiers.present(), **identifiers.present()})
    require_identifiers(target, merged, operation)
    text = source.content if content is None else content
    if redact:
        text = redact_pii(text)
    metadata = dict(source.metadata)
    if tags is not None:
        metadata["tags"] = list(tags)
    metadata["promotedFromId"] = source.id
    provenance = source.provenance.model_copy(
        update={"promoted_from_id": source.id, "conflict": False, "conflict_of": None}
    )
    return AddMemoryInput(
        content=text, layer=target.value, identifiers=merged, metadata=metadata, tier=source.tier, provenance=provenance
    )
