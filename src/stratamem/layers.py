"""Layer rules: which identifiers each layer requires and the order in which layers are resolved.

* which identifiers each layer needs,
* which layers a set of identifiers can reach,
* precedence for merging (agent first, company last; ``object`` ranks right after ``session`` and is
  never searched unless named),
* the storage scope key of a (layer, identifiers) pair.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from .errors import ErrorCode, MemoryError
from .model import Layer, LayerIdentifiers
from .scopes import LAYER_ALIASES

#: Required identifiers per layer (snake_case field names of :class:`LayerIdentifiers`).
REQUIRED_IDENTIFIERS: dict[Layer, tuple[str, ...]] = {
    Layer.AGENT: ("agent_id", "user_id"),
    Layer.USER: ("user_id",),
    Layer.SESSION: ("user_id", "session_id"),
    Layer.PROJECT: ("project_id",),
    Layer.TEAM: ("team_id",),
    Layer.ORG: ("org_id",),
    Layer.COMPANY: ("company_id",),
    Layer.OBJECT: ("object_type", "object_id"),
}

#: Merge order, most specific first. ``object`` is lateral: it ranks after ``session``.
PRECEDENCE_ORDER: tuple[Layer, ...] = (
    Layer.AGENT,
    Layer.USER,
    Layer.SESSION,
    Layer.OBJECT,
    Layer.PROJECT,
    Layer.TEAM,
    Layer.ORG,
    Layer.COMPANY,
)

#: The seven hierarchical layers searched implicitly (``object`` must be named).
HIERARCHICAL_LAYERS: tuple[Layer, ...] = tuple(layer for layer in PRECEDENCE_ORDER if layer != Layer.OBJECT)

_CAMEL = {name: field.alias for name, field in LayerIdentifiers.model_fields.items()}


#: Precedence (1 = highest priority); ``object`` sits between session and project.
LAYER_PRECEDENCE: dict[Layer, float] = {
    Layer.AGENT: 1,
    Layer.USER: 2,
    Layer.SESSION: 3,
    Layer.OBJECT: 3.5,
    Layer.PROJECT: 4,
    Layer.TEAM: 5,
    Layer.ORG: 6,
    Layer.COMPANY: 7,
}


#: Layers whose memories are about the user: the write gate writes a first-person fact into them
#: about the user, and a search may ask them a first-person question about the user
#: (``retrieval/voice.py``).
PERSONAL_LAYERS = frozenset({Layer.AGENT, Layer.USER, Layer.SESSION})


def precedence(layer: Layer) -> float:
    """1 for agent … 7 for company; lower sorts first."""
    return LAYER_PRECEDENCE[layer]


def parse_layer(value: Any, operation: str = "") -> Layer:
    try:
        if value is None:
            raise ValueError
        name = str(value).strip().lower()
        return Layer(LAYER_ALIASES.get(name, name))
    except ValueError:
        raise MemoryError(
            ErrorCode.INVALID_LAYER,
            f"unknown layer {value!r}; expected one of {', '.join(layer.value for layer in Layer)} "
            f"(or {', '.join(f'{k} for {v}' for k, v in LAYER_ALIASES.items())})",
            operation=operation,
            details={"layer": str(value), "valid_layers": [layer.value for layer in Layer]},
            retryable=False,
        ) from None


def parse_layers(values: Iterable[Any] | None, operation: str = "") -> list[Layer] | None:
    if values is None:
        return None
    if isinstance(values, str | Layer):
        values = [values]
    out: list[Layer] = []
    for v in values:
        layer = parse_layer(v, operation)
        if layer not in out:
            out.append(layer)
    return out


def parse_identifiers(value: LayerIdentifiers | Mapping[str, Any] | None, operation: str = "") -> LayerIdentifiers:
    """Accept a model, a dict with snake_case or camelCase keys, or None."""
    if value is None:
        return LayerIdentifiers()
    if isinstance(value, LayerIdentifiers):
        return value
    if not isinstance(value, Mapping):
        raise MemoryError(ErrorCode.INVALID_PARAMS, "identifiers must be an object", operation=operation)
    try:
        return LayerIdentifiers.model_validate(dict(value))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise MemoryError(
            ErrorCode.INVALID_PARAMS,
            f"invalid identifiers: {where or 'value'}: {err.get('msg')}",
            operation=operation,
            details={"field": where},
        ) from None


def require_identifiers(layer: Layer, identifiers: LayerIdentifiers, operation: str = "") -> None:
    """Raise MISSING_IDENTIFIER naming the first identifier ``layer`` needs and did not get."""
    for name in REQUIRED_IDENTIFIERS[layer]:
        if getattr(identifiers, name) is None:
            raise MemoryError(
                ErrorCode.MISSING_IDENTIFIER,
                f"layer '{layer.value}' requires identifier '{_CAMEL[name]}' ({name})",
                operation=operation,
                details={
                    "layer": layer.value,
                    "identifier": _CAMEL[name],
                    "required": [_CAMEL[n] for n in REQUIRED_IDENTIFIERS[layer]],
                },
                retryable=False,
            )


def get_accessible_layers(identifiers: LayerIdentifiers | Mapping[str, Any] | None) -> list[Layer]:
    """Layers these identifiers can reach, in precedence order.

    ``object`` is never included: it is only searched when named explicitly.
    """
    ids = parse_identifiers(identifiers)
    return [
        layer
        for layer in HIERARCHICAL_LAYERS
        if all(getattr(ids, name) is not None for name in REQUIRED_IDENTIFIERS[layer])
    ]


def scoped_identifiers(layer: Layer, identifiers: LayerIdentifiers) -> LayerIdentifiers:
    """Only the identifiers that define the layer's scope (what an entry stores)."""
    return LayerIdentifiers(**{name: getattr(identifiers, name) for name in REQUIRED_IDENTIFIERS[layer]})


def scope_key(layer: Layer, identifiers: LayerIdentifiers) -> str:
    """Canonical, collision-free storage key of one layer scope (JSON array of the identifier values)."""
    return json.dumps([getattr(identifiers, name) for name in REQUIRED_IDENTIFIERS[layer]], ensure_ascii=False)
