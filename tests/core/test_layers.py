"""Layer rules: identifier matrix, accessible layers, precedence (seed 000 Layer Hierarchy)."""

from __future__ import annotations

import pytest

from stratamem import ErrorCode, Layer, MemoryError, get_accessible_layers
from stratamem.layers import (
    LAYER_PRECEDENCE,
    REQUIRED_IDENTIFIERS,
    parse_identifiers,
    parse_layer,
    require_identifiers,
    scope_key,
)


def test_matrix_matches_seed() -> None:
    assert REQUIRED_IDENTIFIERS[Layer.AGENT] == ("agent_id", "user_id")
    assert REQUIRED_IDENTIFIERS[Layer.USER] == ("user_id",)
    assert REQUIRED_IDENTIFIERS[Layer.SESSION] == ("user_id", "session_id")
    assert REQUIRED_IDENTIFIERS[Layer.PROJECT] == ("project_id",)
    assert REQUIRED_IDENTIFIERS[Layer.TEAM] == ("team_id",)
    assert REQUIRED_IDENTIFIERS[Layer.ORG] == ("org_id",)
    assert REQUIRED_IDENTIFIERS[Layer.COMPANY] == ("company_id",)
    assert REQUIRED_IDENTIFIERS[Layer.OBJECT] == ("object_type", "object_id")


def test_precedence_order() -> None:
    order = sorted(Layer, key=lambda layer: LAYER_PRECEDENCE[layer])
    assert order == [
        Layer.AGENT,
        Layer.USER,
        Layer.SESSION,
        Layer.OBJECT,
        Layer.PROJECT,
        Layer.TEAM,
        Layer.ORG,
        Layer.COMPANY,
    ]
    assert [LAYER_PRECEDENCE[x] for x in (Layer.AGENT, Layer.COMPANY)] == [1, 7]


def test_user_and_project_reach_user_and_project_not_agent_or_session() -> None:
    layers = get_accessible_layers({"userId": "u1", "projectId": "p1"})
    assert layers == [Layer.USER, Layer.PROJECT]
    assert Layer.AGENT not in layers and Layer.SESSION not in layers


def test_all_identifiers_reach_all_seven_layers_never_object() -> None:
    ids = {
        "agent_id": "a",
        "user_id": "u",
        "session_id": "s",
        "project_id": "p",
        "team_id": "t",
        "org_id": "o",
        "company_id": "c",
        "object_type": "ticket",
        "object_id": "42",
    }
    assert get_accessible_layers(ids) == [
        Layer.AGENT,
        Layer.USER,
        Layer.SESSION,
        Layer.PROJECT,
        Layer.TEAM,
        Layer.ORG,
        Layer.COMPANY,
    ]


def test_agent_needs_user_too() -> None:
    assert get_accessible_layers({"agentId": "a"}) == []


def test_camel_and_snake_keys_are_equivalent() -> None:
    assert parse_identifiers({"userId": "u1"}) == parse_identifiers({"user_id": "u1"})


def test_unknown_identifier_key_is_invalid_params() -> None:
    with pytest.raises(MemoryError) as err:
        parse_identifiers({"workspace": "w"})
    assert err.value.code is ErrorCode.INVALID_PARAMS


def test_missing_identifier_names_it() -> None:
    with pytest.raises(MemoryError) as err:
        require_identifiers(Layer.SESSION, parse_identifiers({"userId": "u1"}), "add")
    assert err.value.code is ErrorCode.MISSING_IDENTIFIER
    assert err.value.details["identifier"] == "sessionId"
    assert "sessionId" in err.value.message
    assert err.value.retryable is False


@pytest.mark.parametrize("bad", ["bogus", "", None, "Users"])
def test_invalid_layer_is_non_retryable(bad: object) -> None:
    with pytest.raises(MemoryError) as err:
        parse_layer(bad)
    assert err.value.code is ErrorCode.INVALID_LAYER
    assert err.value.retryable is False


def test_layer_names_are_case_insensitive() -> None:
    assert parse_layer("Project") is Layer.PROJECT


def test_scope_keys_do_not_collide() -> None:
    a = scope_key(Layer.AGENT, parse_identifiers({"agentId": "x|y", "userId": "z"}))
    b = scope_key(Layer.AGENT, parse_identifiers({"agentId": "x", "userId": "y|z"}))
    assert a != b
