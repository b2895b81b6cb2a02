"""Secret guards over every stored string (content, metadata keys and values, tier, identifiers), on
normalised text; PII on shared layers. Repros of the issue, through the SDK and over REST."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from stratamem import Memory, MemoryError, TenantContext
from stratamem.hygiene.secret_scan import secret_kinds
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

from .test_safety import _raw_text

ACME = TenantContext(tenant_id="acme")
U1 = {"user_id": "u1"}
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SMK = "smk_0123456789abcdef_" + "Zx9" * 12

HIDDEN = [
    f"key {AWS_ID.lower()} for the bucket",
    "key AKIA IOSF ODNN 7EXA MPLE for the bucket",
    "key " + "".join(chr(ord(c) + 0xFEE0) for c in AWS_ID) + " for the bucket",  # full-width
    f"key {AWS_ID[:10]}\n{AWS_ID[10:]} for the bucket",
    "key " + base64.b64encode(AWS_ID.encode()).decode() + " for the bucket",
    f"aws_secret_access_key = {AWS_SECRET}",
    f"the secret is {AWS_SECRET} ok",
    "pay with 4111.1111.1111.1111 tomorrow",
    "pay with 4111_1111_1111_1111 tomorrow",
    "pay with 4111/1111/1111/1111 tomorrow",
    "pay with 4111 1111 1111 1111",
    "amex 3782 822463 10005 ok",
    "card:4111111111111111",
    f"use {SMK} for the server",
    "my_password = hunter22",
    "authorization: bearer abcdefghijklmnopqrstuvwxyz123456",
    "-----begin openssh private key-----\nb3BlbnNzaC1rZXktdjEAAAAA",
    "token " + base64.b64encode(b"my password is hunter22").decode(),
    "AK\u200bIAIOSFODNN7EXAMPLE",
]

BENIGN = [
    "We expand to Asia in 2025 with two partners",
    "Asia 2 weeks ago we went to Tokyo and Osaka by train",
    "The order id 12345 shipped on 2024-01-15",
    "Release 1.2.3.4 is out",
    "sha256:5743abddddfa08c1e3a99fdebc2e8f3f1108fa12dcd2a8f58a42f141418c22ec",
    "User prefers dark mode",
    "the bearer of bad news",
    "Call 192.168.100.200 for the printer",
    "a8098c1a-f86e-11da-bd1a-00112444be1e",
    "12345678-1234-4123-8123-123456789012",
    "phone +49 30 1234 5678 and fax +49 30 1234 5679",
]


@pytest.mark.parametrize("text", HIDDEN)
def test_hidden_secrets_are_found(text: str) -> None:
    assert secret_kinds(text), text


@pytest.mark.parametrize("text", BENIGN)
def test_no_false_positives(text: str) -> None:
    assert not secret_kinds(text), (text, secret_kinds(text))


@pytest.mark.parametrize("text", HIDDEN)
def test_hidden_secrets_never_reach_storage(open_mem: Callable[..., Memory], db_path: Path, text: str) -> None:
    mem = open_mem()
    with pytest.raises(MemoryError) as err:
        mem.add(ACME, text, layer="user", identifiers=U1)
    assert err.value.code.value == "UNSAFE_CONTENT"
    assert mem.list(ACME).total_count == 0


def test_every_stored_string_is_guarded(open_mem: Callable[..., Memory], db_path: Path) -> None:
    mem = open_mem()
    ok = mem.add(ACME, "Deploys happen on Fridays", layer="user", identifiers=U1, metadata={"owner": "ops"}).memory
    attempts: list[Callable[[], object]] = [
        lambda: mem.add(ACME, "note", layer="user", identifiers=U1, metadata={"aws": AWS_ID}),
        lambda: mem.add(
            ACME, "note", layer="user", identifiers=U1, metadata={"nested": {"list": ["x", f"password: {AWS_SECRET}"]}}
        ),
        lambda: mem.add(ACME, "note", layer="user", identifiers=U1, metadata={AWS_ID: "key as a metadata key"}),
        lambda: mem.add(ACME, "note", layer="user", identifiers=U1, metadata={"card": 4111111111111111}),
        lambda: mem.add(ACME, "note", layer="user", identifiers=U1, tier=AWS_ID),
        lambda: mem.add(ACME, "note", layer="user", identifiers={"user_id": AWS_ID}),
        lambda: mem.add(ACME, "note", layer="team", identifiers={"team_id": "4111-1111-1111-1111"}),
        lambda: mem.add(ACME, "note", layer="user", identifiers=U1, metadata={"k": SMK}),
        lambda: mem.update(ACME, ok.id, metadata={"aws": AWS_ID.lower()}),
        lambda: mem.update(ACME, ok.id, tier=f"x {SMK}"),
        lambda: mem.bulk_add(
            ACME,
            [
                {"content": "fine", "layer": "user", "identifiers": U1},
                {
                    "content": "also fine",
                    "layer": "user",
                    "identifiers": U1,
                    "metadata": {"pw": "my password is hunter22"},
                },
            ],
        ),
    ]
    for attempt in attempts:
        with pytest.raises(MemoryError) as err:
            attempt()
        assert err.value.code.value == "UNSAFE_CONTENT"
    listed = mem.list(ACME).memories
    assert [(m.id, m.version, m.metadata, m.tier) for m in listed] == [(ok.id, 1, {"owner": "ops"}, None)]
    mem.close()
    raw = _raw_text(db_path)
    for needle in (AWS_ID, AWS_ID.lower(), AWS_SECRET, "4111111111111111", SMK, "hunter22"):
        assert needle not in raw


def test_rest_rejects_secrets_in_metadata_tier_and_identifiers(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    key = create_key(mem.engine.provider, "acme", "writer").key
    with TestClient(create_app(mem, ServerSettings(mcp_enabled=False))) as client:
        headers = {"X-API-Key": key}
        for body in [
            {
                "content": "note",
                "layer": "user",
                "identifiers": {"userId": "u1"},
                "metadata": {"p": "password: hunter22x"},
            },
            {"content": "note", "layer": "user", "identifiers": {"userId": "u1"}, "tier": AWS_ID},
            {"content": "note", "layer": "company", "identifiers": {"companyId": AWS_ID.lower()}},
            {"content": "card 4111.1111.1111.1111", "layer": "user", "identifiers": {"userId": "u1"}},
        ]:
            r = client.post("/v1/memories", headers=headers, json=body)
            assert r.status_code == 422 and r.json()["code"] == "UNSAFE_CONTENT", r.text
        found = client.post(
            "/v1/memories/search",
            headers=headers,
            json={"query": "note", "identifiers": {"userId": "u1"}, "threshold": 0},
        )
        assert found.status_code == 200 and found.json()["results"] == []


def test_ids_in_metadata_are_not_secrets(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    ids = ["12345678-1234-4123-8123-123456789012", "41111111-1111-4111-8111-111111111111"]
    stored = mem.add(ACME, "Merged note", layer="user", identifiers=U1, metadata={"sources": ids}).memory
    assert stored.metadata["sources"] == ids


def test_graph_never_sees_a_rejected_secret(open_mem: Callable[..., Memory], db_path: Path) -> None:
    mem = open_mem()
    mem.add(ACME, "Alice Smith runs the Berlin office", layer="user", identifiers=U1)
    with pytest.raises(MemoryError):
        mem.add(ACME, f"Alice Smith uses {SMK} on the Berlin server", layer="user", identifiers=U1)
    with pytest.raises(MemoryError):
        mem.add(ACME, "Alice Smith runs the Berlin office", layer="user", identifiers=U1, metadata={"token": SMK})
    mem.close()
    raw = _raw_text(db_path)
    assert "smk_0123456789abcdef" not in raw and "Zx9Zx9" not in raw


def test_pii_on_shared_layers_is_redacted_by_default(open_mem: Callable[..., Memory]) -> None:
    mem = open_mem()
    shared = mem.add(ACME, "Ask alice@example.com about the launch", layer="team", identifiers={"team_id": "t1"}).memory
    assert shared.content == "Ask [REDACTED_EMAIL] about the launch"
    own = mem.add(ACME, "Ask alice@example.com about the launch", layer="user", identifiers=U1).memory
    assert own.content == "Ask alice@example.com about the launch"  # the user's own layer: tenant policy (allow)
    updated = mem.update(ACME, shared.id, content="Call 123-456-7890 first").memory
    assert updated.content == "Call [REDACTED_PHONE] first"
    mem.policies.set(ACME, shared_pii_mode="reject")
    with pytest.raises(MemoryError) as err:
        mem.add(ACME, "Ask bob@example.com", layer="company", identifiers={"company_id": "acme"})
    assert err.value.code.value == "POLICY_VIOLATION"
    mem.policies.set(ACME, shared_pii_mode="allow")
    kept = mem.add(ACME, "Ask bob@example.com", layer="project", identifiers={"project_id": "p1"}).memory
    assert kept.content == "Ask bob@example.com"
    mem.policies.set(ACME, pii_mode="reject", shared_pii_mode="allow")  # the stricter of the two applies
    with pytest.raises(MemoryError):
        mem.add(ACME, "Ask carol@example.com", layer="project", identifiers={"project_id": "p1"})
