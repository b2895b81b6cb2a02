"""The web console (/console): its assets are served offline, its two API routes answer within the
key's grants, and end to end in a real headless Chromium against a live server (sign in, browse,
edit with If-Match, search with score parts, graph, health, actions, a restricted key)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from stratamem import Memory
from stratamem.embeddings import Embedder
from stratamem.persistence import S3Settings, S3Store
from stratamem.server.app import create_app
from stratamem.server.keys import create_key
from stratamem.server.settings import ServerSettings

from ..conftest import require_service
from ..snapshots.conftest import s3, s3_settings  # noqa: F401  (fixtures)
from .cdp import Browser, chromium_binary
from .conftest import LiveServer, cli_key

#: Namespace URIs that appear in the bundle as identifiers, never fetched.
NAMESPACES = {"http://www.w3.org/2000/svg"}

ALICE_PREF = "Alice prefers dark mode in the editor"
#: The console writes a relevance in standard deviations as "4.20" and a Greek small sigma.
SIGMA = "\u03c3"


def _assets(client: TestClient) -> dict[str, str]:
    index = client.get("/console/")
    assert index.status_code == 200 and "text/html" in index.headers["content-type"]
    refs = re.findall(r'(?:src|href)="([^"]+)"', index.text)
    assert refs, index.text
    out = {"/console/": index.text}
    for ref in refs:
        assert not ref.startswith(("http:", "https:", "//")), ref
        path = "/console/" + ref.removeprefix("./")
        resp = client.get(path)
        assert resp.status_code == 200 and resp.text, path
        out[path] = resp.text
    return out


def test_console_is_served_with_local_assets_only(client: TestClient) -> None:
    assert client.get("/console", follow_redirects=False).status_code in (307, 308)
    assets = _assets(client)
    assert any(p.endswith(".js") for p in assets) and any(p.endswith(".css") for p in assets)
    for path, text in assets.items():
        urls = set(re.findall(r"https?://[^\s\"'`)]+", text)) - NAMESPACES
        assert urls == set(), (path, urls)
    assert "/console" not in json.dumps(client.get("/openapi.json").json()["paths"])


def _seed(client: httpx.Client, headers: dict[str, str]) -> None:
    items = [
        (ALICE_PREF, "user", {"userId": "alice"}, {"tags": ["ui"]}),
        (ALICE_PREF, "project", {"projectId": "web"}, {}),
        ("The web project deploys on Fridays", "project", {"projectId": "web"}, {}),
        ("Bob drinks green tea", "user", {"userId": "bob"}, {}),
    ]
    for content, layer, ids, meta in items:
        r = client.post(
            "/v1/memories",
            json={"content": content, "layer": layer, "identifiers": ids, "metadata": meta},
            headers=headers,
        )
        assert r.status_code == 201, r.text


def test_scope_tree_and_explained_search_keep_to_the_grant(client: TestClient, make_key: Callable[..., str]) -> None:
    admin = {"Authorization": f"Bearer {make_key(role='admin')}"}
    bob = {"Authorization": f"Bearer {make_key(role='reader', userId='bob')}"}
    _seed(client, admin)
    tree = client.get("/v1/scopes", headers=admin).json()
    assert [(x["layer"], x["count"]) for x in tree["layers"]] == [("user", 2), ("project", 2)]
    assert tree["scanned"] == 4 and tree["truncated"] is False
    assert {s["identifiers"]["projectId"]: s["count"] for s in tree["layers"][1]["scopes"]} == {"web": 2}
    only_bob = client.get("/v1/scopes", headers=bob).json()
    assert [(x["layer"], x["count"]) for x in only_bob["layers"]] == [("user", 1)]
    assert "alice" not in json.dumps(only_bob)

    body = {"query": "dark mode editor", "identifiers": {"userId": "alice", "projectId": "web"}, "threshold": 0.1}
    r = client.post("/v1/memories/search/explain", json=body, headers=admin)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["searchedLayers"] == ["user", "project"] and out["threshold"] == 0.1
    top = out["results"][0]
    assert top["layer"] == "user" and top["memory"]["content"] == ALICE_PREF and top["memory"]["embedding"] is None
    parts = top["parts"]
    assert parts["lexical"] > 0 and parts["boostFactor"] == 1.0
    assert parts["dense"] + parts["lexical"] == pytest.approx(parts["relevance"], abs=1e-5)
    assert parts["relevance"] == pytest.approx(top["score"], abs=1e-5)
    plain = client.post("/v1/memories/search", json=body, headers=admin).json()
    assert [x["memory"]["id"] for x in plain["results"]] == [x["memory"]["id"] for x in out["results"]]
    dup = [x for x in out["removed"] if x["reason"] == "duplicate"]
    assert [(x["layer"], x["duplicateOf"]) for x in dup] == [("project", top["memory"]["id"])]
    # a key limited to bob cannot search alice's layer through the explain route either
    denied = client.post("/v1/memories/search/explain", json=body, headers=bob)
    assert denied.status_code == 403 and ALICE_PREF not in denied.text


#: A scope of eight memories sharing "Carol drinks" (the hashing embedder of the live server): a
#: search for one of them finds the rest above the default threshold, and the floor removes them.
CAROL = [
    "Carol drinks green tea",
    "Carol drinks black coffee",
    "Carol drinks sparkling water",
    "Carol drinks orange juice",
    "Carol drinks hot chocolate",
    "Carol drinks red wine",
    "Carol drinks oat milk",
    "Carol drinks mint lemonade",
]

#: A user scope of ten facts (the relevance floor needs ``MIN_ROWS`` = 7 memories in a scope).
DANA = [
    "Dana is a vegetarian",
    "Dana lives in Hamburg",
    "Dana prefers dark mode in every app",
    "Dana's daughter Emma starts school in September",
    "Dana works as a product designer at Figma",
    "Dana is allergic to peanuts",
    "Dana is learning Portuguese on Duolingo",
    "Dana is planning a trip to Lisbon in October",
    "Dana drinks her coffee black",
    "Dana's manager is Lena Fischer",
]


@pytest.mark.model
def test_explained_search_shows_what_the_relevance_floor_removed(
    open_mem: Callable[..., Memory], minilm: Embedder, tmp_path: Path
) -> None:
    """Issue #30: the explanation gives each result its relevance in standard deviations above the
    scope's background, and lists the candidates the floor removed with theirs (DuckDB)."""
    mem = open_mem(tmp_path / "floor.duckdb", embedder=minilm)
    headers = {"Authorization": f"Bearer {create_key(mem.engine.provider, 'acme', 'admin').key}"}
    with TestClient(create_app(mem, ServerSettings(mcp_enabled=False))) as client:
        ids = {"userId": "dana"}
        r = client.post(
            "/v1/memories/bulk",
            json={"items": [{"content": c, "layer": "user", "identifiers": ids} for c in DANA]},
            headers=headers,
        )
        assert r.status_code in (200, 201), r.text
        floor = mem.engine.config.relevance_floor
        assert floor is not None

        # a question the scope cannot answer: every candidate is removed by the floor, with its sigma
        out = client.post(
            "/v1/memories/search/explain",
            json={"query": "which bank does Dana use?", "identifiers": ids},
            headers=headers,
        ).json()
        assert out["results"] == [] and out["relevanceFloor"] == floor
        floored = [x for x in out["removed"] if x["reason"] == "relevance_floor"]
        assert len(floored) >= 3, out["removed"]
        for x in floored:
            assert x["memory"]["content"] in DANA and x["memory"]["embedding"] is None
            assert x["floor"]["sigma"] < floor and x["floor"]["kept"] is False
            assert x["floor"]["floor"] == floor and x["floor"]["identifierException"] is False
        # the plain search agrees: nothing comes back
        plain = client.post(
            "/v1/memories/search", json={"query": "which bank does Dana use?", "identifiers": ids}, headers=headers
        )
        assert plain.json()["results"] == []

        # a question it answers: the answer is kept at sigma >= floor, the rest of the scope is floored
        body = {"query": "which city does Dana live in?", "identifiers": ids}
        out = client.post("/v1/memories/search/explain", json=body, headers=headers).json()
        assert [x["memory"]["content"] for x in out["results"]] == ["Dana lives in Hamburg"]
        top = out["results"][0]["floor"]
        assert top["sigma"] >= floor and top["kept"] is True and top["identifierException"] is False
        removed_ids = {x["memory"]["id"] for x in out["removed"] if x["reason"] == "relevance_floor"}
        assert removed_ids and out["results"][0]["memory"]["id"] not in removed_ids
        plain = client.post("/v1/memories/search", json=body, headers=headers).json()
        assert [x["memory"]["id"] for x in plain["results"]] == [x["memory"]["id"] for x in out["results"]]

        # with a threshold the floor does not apply: no measure, nothing removed by it
        out = client.post("/v1/memories/search/explain", json={**body, "threshold": 0.5}, headers=headers).json()
        assert out["relevanceFloor"] is None and len(out["results"]) > 1
        assert all(x["floor"] is None for x in out["results"])
        assert not [x for x in out["removed"] if x["reason"] == "relevance_floor"]


def test_explained_search_shows_how_a_question_in_the_users_voice_was_asked(
    open_mem: Callable[..., Memory], minilm: Embedder, tmp_path: Path
) -> None:
    """A first-person question is asked of the user layer about the user's name: the explanation
    says so (``askedAs``), and its dense part is measured with those words, as the search scored it."""
    mem = open_mem(tmp_path / "voice.duckdb", embedder=minilm)
    headers = {"Authorization": f"Bearer {create_key(mem.engine.provider, 'acme', 'admin').key}"}
    with TestClient(create_app(mem, ServerSettings(mcp_enabled=False))) as client:
        ids = {"userId": "dana", "projectId": "web"}
        items = [{"content": c, "layer": "user", "identifiers": ids} for c in DANA]
        items.append({"content": "The web project deploys on Fridays", "layer": "project", "identifiers": ids})
        assert client.post("/v1/memories/bulk", json={"items": items}, headers=headers).status_code in (200, 201)
        body = {"query": "where do I live now?", "identifiers": ids, "threshold": 0.0}
        out = client.post("/v1/memories/search/explain", json=body, headers=headers).json()
        assert out["askedAs"] == {"user": "where does Dana live now?"}  # the project: as asked
        first = out["results"][0]
        assert first["memory"]["content"] == "Dana lives in Hamburg"
        plain = client.post("/v1/memories/search", json=body, headers=headers).json()
        assert plain["results"][0]["score"] == first["score"]
        third = client.post(
            "/v1/memories/search/explain", json={**body, "query": "where does Dana live now?"}, headers=headers
        ).json()
        assert third["askedAs"] == {}
        # the same words, the same dense part: the first-person one was measured with the rephrasing
        assert third["results"][0]["memory"]["id"] == first["memory"]["id"]
        assert third["results"][0]["parts"]["dense"] == pytest.approx(first["parts"]["dense"], abs=1e-6)


def test_memory_events_trends_and_maintenance_runs_over_rest(client: TestClient, make_key: Callable[..., str]) -> None:
    admin = {"Authorization": f"Bearer {make_key(role='admin')}"}
    bob = {"Authorization": f"Bearer {make_key(role='reader', userId='bob')}"}
    _seed(client, admin)
    listed = client.get("/v1/memories", params={"layer": "user", "userId": "alice"}, headers=admin).json()
    mid = listed["memories"][0]["id"]
    assert (
        client.patch(f"/v1/memories/{mid}", json={"metadata": {"tags": ["ui", "x"]}}, headers=admin).status_code == 200
    )
    r = client.get(f"/v1/memories/{mid}/events", headers=admin)
    assert r.status_code == 200, r.text
    assert [e["event"] for e in r.json()["events"]] == ["update", "create"]
    assert [e["event"] for e in client.get(f"/v1/memories/{mid}/events?limit=1", headers=admin).json()["events"]] == [
        "update"
    ]
    # outside bob's grant: the same 404 as an id that does not exist
    denied = client.get(f"/v1/memories/{mid}/events", headers=bob)
    missing = client.get("/v1/memories/no-such-id/events", headers=bob)
    assert denied.status_code == missing.status_code == 404
    assert denied.json()["code"] == missing.json()["code"] == "MEMORY_NOT_FOUND" and "alice" not in denied.text
    assert client.get(f"/v1/memories/{mid}/events?limit=0", headers=admin).status_code == 400

    client.post("/v1/memories/search", json={"query": "tea", "identifiers": {"userId": "bob"}}, headers=bob)
    trends = client.get("/v1/health-report/trends", params={"days": 3}, headers=bob).json()
    assert len(trends["days"]) == 3
    today = trends["days"][-1]
    assert (today["writes"], today["searches"], today["rejections"]) == (5, 1, 0)
    # the write-gate decisions one by one
    gate = ("created", "deduplicated", "updated", "deleted", "ignored", "rejected")
    assert [today[k] for k in gate] == [4, 0, 1, 0, 0, 0]
    assert (
        client.post("/v1/process", json={"text": "hi", "identifiers": {"userId": "alice"}}, headers=admin).json()[
            "action"
        ]
        == "ignored"
    )
    today = client.get("/v1/health-report/trends", params={"days": 1}, headers=admin).json()["days"][-1]
    assert today["ignored"] == 1 and today["rejections"] == 1

    # access history: every get or search that returned the memory, by whom and through which operation
    client.get(f"/v1/memories/{mid}", headers=admin)
    found = client.post(
        "/v1/memories/search", json={"query": ALICE_PREF, "identifiers": {"userId": "alice"}, "limit": 1}, headers=admin
    ).json()
    assert [r["memory"]["id"] for r in found["results"]] == [mid]
    r = client.get(f"/v1/memories/{mid}/events", params={"event": "access"}, headers=admin)
    assert r.status_code == 200, r.text
    accesses = r.json()["events"]
    assert [(e["event"], e["details"]["operation"]) for e in accesses] == [("access", "search"), ("access", "get")]
    assert accesses[0]["details"]["rank"] == 1 and accesses[0]["principal"] == accesses[1]["principal"]
    kinds = client.get(f"/v1/memories/{mid}/events", params=[("event", "create"), ("event", "update")], headers=admin)
    assert [e["event"] for e in kinds.json()["events"]] == ["update", "create"]
    bad = client.get(f"/v1/memories/{mid}/events", params={"event": "nonsense"}, headers=admin)
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_PARAMS"

    assert client.get("/v1/maintenance/runs", headers=admin).json()["runs"] == []
    assert client.post("/v1/maintenance", headers=admin).status_code == 200
    runs = client.get("/v1/maintenance/runs", headers=bob).json()["runs"]
    assert len(runs) == 1 and runs[0]["outcome"] == "ok" and runs[0]["errors"] == {}
    assert runs[0]["access_events_pruned"] == 0  # this test's reads are all within the retention


def test_snapshot_status_without_and_with_a_target(
    client: TestClient,
    make_key: Callable[..., str],
    server_mem: Memory,
    s3: S3Store,  # noqa: F811  (fixture)
    s3_settings: S3Settings,  # noqa: F811  (fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("STRATAMEM_S3_URL", "STRATAMEM_S3_BUCKET"):
        monkeypatch.delenv(var, raising=False)
    admin = {"Authorization": f"Bearer {make_key(role='admin')}"}
    reader = {"Authorization": f"Bearer {make_key(role='reader')}"}
    # no target: a plain answer, no S3 call (and no error)
    r = client.get("/v1/snapshots/status", headers=admin)
    assert r.status_code == 200, r.text
    assert r.json() == {"configured": False, "bucket": None, "count": 0, "latest": None}
    assert client.get("/v1/snapshots/status", headers=reader).status_code == 403  # admin only, like the list
    # a target (SeaweedFS): configured, then the newest snapshot once one is pushed
    server_mem.configure_snapshots(s3_settings)
    status = client.get("/v1/snapshots/status", headers=admin).json()
    assert (status["configured"], status["bucket"], status["count"], status["latest"]) == (
        True,
        s3_settings.bucket,
        0,
        None,
    )
    _seed(client, admin)
    pushed = client.post("/v1/snapshots", headers=admin)
    assert pushed.status_code == 201, pushed.text
    status = client.get("/v1/snapshots/status", headers=admin).json()
    assert status["count"] == 1 and status["latest"]["snapshot_id"] == pushed.json()["snapshot_id"]
    assert status["latest"]["rows"] >= 4


def _screens() -> Path | None:
    where = os.environ.get("STRATAMEM_CONSOLE_SCREENSHOTS")
    return Path(where) if where else None


def _sign_in(b: Browser, key: str) -> None:
    b.wait("document.getElementById('signin')")
    b.eval(
        f"document.getElementById('key').value = {json.dumps(key)}; "
        "document.getElementById('signin').requestSubmit(); true"
    )


def _type(b: Browser, element_id: str, value: str) -> None:
    b.eval(f"document.getElementById({json.dumps(element_id)}).value = {json.dumps(value)}; true")


def test_console_end_to_end_in_chromium(live_db: Path, live_server: Callable[[], LiveServer], tmp_path: Path) -> None:
    binary = chromium_binary()
    require_service("chromium", binary is not None, "no chromium binary (apt-get install chromium)")
    assert binary is not None
    admin = cli_key(live_db, "acme", "admin")
    bob = cli_key(live_db, "acme", "reader", "--user-id", "bob")
    other = cli_key(live_db, "floorco", "admin")  # a tenant of its own for the relevance floor
    srv = live_server()
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        _seed(http, {"Authorization": f"Bearer {admin}"})
        for text in ("Alice works on Project A.", "Alice found a memory leak."):
            r = http.post(
                "/v1/memories",
                json={"content": text, "layer": "project", "identifiers": {"projectId": "web"}},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert r.status_code == 201, r.text
        r = http.post(
            "/v1/memories/bulk",
            json={"items": [{"content": c, "layer": "user", "identifiers": {"userId": "carol"}} for c in CAROL]},
            headers={"Authorization": f"Bearer {other}"},
        )
        assert r.status_code == 201, r.text
    shots = _screens() or tmp_path / "screenshots"
    b = Browser(binary)
    try:
        b.navigate(srv.url + "/console/")
        _sign_in(b, admin)

        # Browse: the tree has the layers with counts, the table the stored memories
        b.wait("document.querySelector('#memories tbody tr')")
        b.wait("document.querySelector('.tree') && document.querySelector('.tree').innerText.includes('project')")
        assert ALICE_PREF in b.eval("document.getElementById('memories').innerText")
        assert "projectId=web 4" in b.eval("document.querySelector('.tree').innerText").replace("\n", " ")
        row = "[...document.querySelectorAll('#memories tbody tr')].find(r => r.innerText.includes('Alice prefers'))"
        b.eval(f"{row}.click(); true")
        b.wait("document.getElementById('detail-content')")
        memory_id = b.eval("document.querySelector('#detail h2 .mono').textContent")
        assert "Version" in b.eval("document.getElementById('detail').innerText")
        # the detail pane lists the memory's logged events (the seed's create, by the admin key)
        b.wait("document.querySelector('#detail-events tr.ev-create')")
        assert b.eval("document.querySelectorAll('#detail-events tbody tr').length") == 1
        b.screenshot(shots / "browse.png")
        # the time window goes to the API (since/until): nothing was created tomorrow, everything today
        requested = len(b.requested_urls())
        _type(b, "f-from", "2999-01-01")
        b.eval("document.getElementById('filters').requestSubmit(); true")
        b.wait(
            "document.querySelector('.pager') && document.querySelector('.pager').innerText.includes('0 shown of 0')"
        )
        assert any("since=2999-01-01" in u for u in b.requested_urls()[requested:])
        _type(b, "f-from", "")
        _type(b, "f-order", "newest")
        b.eval("document.getElementById('filters').requestSubmit(); true")
        b.wait("document.querySelector('.pager').innerText.includes('6 shown of 6')")
        first = b.eval("document.querySelector('#memories tbody td.content').textContent")
        assert first == "Alice found a memory leak.", first  # the newest first

        # Search playground: per-layer results with the dense and lexical parts and the threshold line
        b.eval("location.hash = '#search'; true")
        b.wait("document.getElementById('search-form')")
        _type(b, "s-query", "dark mode in the editor")
        _type(b, "s-ids", "userId=alice, projectId=web")
        _type(b, "s-threshold", "0.1")
        b.eval("document.getElementById('search-form').requestSubmit(); true")
        b.wait("document.querySelector('#search-results .result')")
        parts = b.eval("document.querySelector('#search-results .result .parts').textContent")
        assert "dense" in parts and "lexical" in parts, parts
        assert b.eval("document.querySelectorAll('#search-results .scorebar line.threshold').length") >= 1
        assert b.eval("[...document.querySelectorAll('.layer-group')].map(g => g.dataset.layer)") == ["user", "project"]
        removed = b.wait("document.getElementById('removed') && document.getElementById('removed').innerText")
        assert "duplicate" in removed, removed  # the project's copy of alice's preference
        b.screenshot(shots / "search.png")
        # the same search as another principal (bob's key, for this request only) is refused
        _type(b, "s-key", bob)
        b.eval("document.getElementById('search-form').requestSubmit(); true")
        refused = b.wait(
            "document.querySelector('#search-results .error') && "
            "document.querySelector('#search-results .error').textContent"
        )
        assert refused.startswith("FORBIDDEN") and ALICE_PREF not in b.eval("document.body.innerText"), refused
        _type(b, "s-ids", "userId=bob")
        _type(b, "s-query", "green tea")
        b.eval("document.getElementById('search-form').requestSubmit(); true")
        b.wait("document.querySelector('#search-results .result')")
        assert "Bob drinks green tea" in b.eval("document.getElementById('search-results').innerText")
        # default search (no threshold) in a scope of eight: the relevance sigma column, and the rest of
        # the scope listed as removed by the relevance floor with its sigma
        _type(b, "s-key", other)
        _type(b, "s-ids", "userId=carol")
        _type(b, "s-query", "Carol drinks green tea")
        _type(b, "s-threshold", "")
        b.eval("document.getElementById('search-form').requestSubmit(); true")
        floored = b.wait(
            "document.getElementById('removed-floor') && document.getElementById('removed-floor').innerText"
        )
        assert "Removed by the relevance floor (3" in floored and "Carol drinks red wine" in floored, floored
        assert floored.count(SIGMA) >= len(CAROL), floored  # the heading's and each removed memory's
        heads = b.eval("[...document.querySelectorAll('#search-results table.results th')].map(t => t.textContent)")
        assert f"relevance {SIGMA}" in heads, heads
        sigma = b.eval("document.querySelector('#search-results .result td.sigma').textContent")
        assert sigma.endswith(SIGMA) and float(sigma.removesuffix(SIGMA)) >= 3, sigma
        assert "Carol drinks green tea" in b.eval("document.querySelector('#search-results .result').innerText")
        b.screenshot(shots / "search-floor.png")
        _type(b, "s-key", "")
        assert b.eval("sessionStorage.getItem('stratamem.apiKey')") == admin
        b.eval("location.hash = '#browse'; true")
        b.wait("document.getElementById('detail-content')")
        # the access history: the playground's searches returned it (rank 1), the detail pane read it
        b.wait(
            "document.querySelector('#detail-access tr.via-search') && "
            "document.querySelector('#detail-access tr.via-get')"
        )
        reads = b.eval("[...document.querySelectorAll('#detail-access tbody tr')].map(r => r.innerText)")
        assert any("search, rank 1" in r for r in reads) and any("get" in r for r in reads), reads
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            history = http.get(
                f"/v1/memories/{memory_id}/events",
                params={"event": "access", "limit": 20},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()["events"]
        assert len(reads) == len(history) and all(e["principal"] for e in history)

        # Edit with If-Match: the detail shows the new version
        _type(b, "edit-content", "Alice prefers dark mode everywhere")
        b.eval("document.getElementById('save').click(); true")
        b.wait("document.querySelector('#detail-msg .ok')")
        assert "Saved version 2" in b.eval("document.getElementById('detail-msg').innerText")
        b.wait("document.querySelector('#detail-events tr.ev-update')")
        events = b.eval("[...document.querySelectorAll('#detail-events tbody tr')].map(r => r.className)")
        assert events == ["ev ev-update", "ev ev-create"], events
        assert b.eval("document.getElementById('detail-content').textContent") == "Alice prefers dark mode everywhere"
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            got = http.get(f"/v1/memories/{memory_id}", headers={"Authorization": f"Bearer {admin}"}).json()
        assert got["version"] == 2 and got["content"] == "Alice prefers dark mode everywhere"
        # a change behind the console's back: its next save (If-Match version 2) is a 409 CONFLICT
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            r = http.patch(
                f"/v1/memories/{memory_id}",
                json={"content": "Alice prefers light mode"},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert r.status_code == 200 and r.json()["memory"]["version"] == 3
        _type(b, "edit-content", "Alice prefers dark mode, again")
        b.eval("document.getElementById('save').click(); true")
        conflict = b.wait(
            "document.querySelector('#detail-msg .error') && document.querySelector('#detail-msg .error').textContent"
        )
        assert conflict.startswith("CONFLICT"), conflict

        # Admin actions from the detail pane: delete (two clicks, If-Match) and promote
        def open_row(text: str) -> str:
            """Open the first row showing the text; returns its memory id once the detail shows it."""
            row = f"[...document.querySelectorAll('#memories tbody tr')].find(r => r.innerText.includes({text!r}))"
            mid = str(b.wait(f"{row} && {row}.dataset.id"))
            b.eval(f"{row}.click(); true")
            b.wait(
                f"document.querySelector('#detail h2 .mono') && "
                f"document.querySelector('#detail h2 .mono').textContent === {mid!r} && "
                "document.getElementById('detail-graph')"
            )
            return mid

        fridays = open_row("deploys on Fridays")
        b.eval("document.getElementById('delete').click(); true")
        assert b.eval("document.getElementById('delete').textContent") == "Confirm delete"
        b.eval("document.getElementById('delete').click(); true")
        b.wait("document.getElementById('deleted-msg')")
        b.wait("!document.getElementById('memories').innerText.includes('deploys on Fridays')")
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            gone = http.get(f"/v1/memories/{fridays}", headers={"Authorization": f"Bearer {admin}"})
        assert gone.status_code == 404, gone.text
        project_a = open_row("Alice works on Project A.")
        b.eval("document.getElementById('promote-layer').value = 'team'; true")
        _type(b, "promote-ids", "teamId=core")
        b.eval("document.getElementById('promote').click(); true")
        promoted = b.wait(
            "document.getElementById('promoted-msg') && document.getElementById('promoted-msg').innerText"
        )
        assert "Promoted to team (teamId=core)" in promoted, promoted
        b.wait(
            "[...document.querySelectorAll('#memories tbody tr')]"
            ".filter(r => r.innerText.includes('Alice works on Project A.')).length === 2"
        )
        b.eval("document.getElementById('promoted-link').click(); true")
        b.wait(
            "document.querySelector('#detail .prov') && "
            "document.querySelector('#detail .prov').innerText.includes('Promoted from')"
        )
        assert project_a in b.eval("document.querySelector('#detail .prov').innerText")
        assert b.eval("document.getElementById('detail').innerText").count("team") >= 1

        # A memory's graph neighbourhood, from its detail pane (the memory is the centre)
        opened = open_row("Alice works on Project A.")  # the newest first: the promoted copy
        b.eval("document.getElementById('detail-graph').click(); true")
        b.wait("document.querySelectorAll('#graph-svg .node').length > 1")
        assert b.eval("document.getElementById('g-node').value") == opened  # the memory is the start
        centre = b.eval("[...document.querySelectorAll('#graph-svg .node.centre title')].map(t => t.textContent)")
        assert any("Alice works on Project A." in c for c in centre), centre
        labels = b.eval("[...document.querySelectorAll('#graph-svg .node.entity title')].map(t => t.textContent)")
        assert any("Alice" in x for x in labels) and any("Project A" in x for x in labels), labels

        # Graph view: the neighbourhood of an entity, and a path between two entities
        b.eval("location.hash = '#graph'; true")
        b.wait("document.getElementById('graph-form')")
        _type(b, "g-node", "Alice")
        b.eval("document.getElementById('graph-form').requestSubmit(); true")
        b.wait("document.querySelectorAll('#graph-svg .node').length > 1")
        b.screenshot(shots / "graph.png")
        _type(b, "g-a", "Project A")
        _type(b, "g-b", "memory leak")
        b.eval("document.getElementById('path-form').requestSubmit(); true")
        reasoning = b.wait(
            "document.getElementById('path-reasoning') && document.getElementById('path-reasoning').textContent"
        )
        assert "Alice" in reasoning and "memory leak" in reasoning

        # Health: the trend chart of writes, searches and rejected writes, and the maintenance runs
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            assert http.post("/v1/maintenance", headers={"Authorization": f"Bearer {admin}"}).status_code == 200
        b.eval("location.hash = '#health'; true")
        b.wait("document.querySelectorAll('#health .card').length >= 4")
        assert "memories" in b.eval("document.getElementById('health').innerText")
        b.wait("document.querySelector('#trends svg.trend')")
        lines = b.eval("[...document.querySelectorAll('#trends polyline')].map(p => p.dataset.series)")
        assert lines == ["writes", "searches", "rejections"], lines
        assert b.eval("document.querySelectorAll('#trends circle').length") == 3 * 14
        totals = b.eval(
            "Object.fromEntries([...document.querySelectorAll('#trends [data-total]')]"
            ".map(e => [e.dataset.total, Number(e.textContent)]))"
        )
        # 6 creates, 2 updates (the console's save, the change behind its back; the 409 stores nothing)
        # and the console's delete
        assert totals["writes"] == 9 and totals["searches"] >= 2 and totals["rejections"] == 0, totals
        runs = b.eval("[...document.querySelectorAll('#maintenance-runs tbody tr')].map(r => r.innerText)")
        assert len(runs) == 1 and "ok" in runs[0], runs
        # the write gate's decisions: a bar per decision and a line per decision over the 14 days
        b.wait("document.querySelector('#write-gate svg.trend')")
        gate = b.eval(
            "Object.fromEntries([...document.querySelectorAll('#write-gate [data-gate]')]"
            ".map(e => [e.dataset.gate, Number(e.textContent)]))"
        )
        assert gate == {"created": 6, "deduplicated": 0, "updated": 2, "deleted": 1, "ignored": 0, "rejected": 0}, gate
        gate_lines = b.eval("[...document.querySelectorAll('#write-gate polyline')].map(p => p.dataset.series)")
        assert gate_lines == list(gate), gate_lines
        assert b.eval("document.querySelectorAll('#write-gate svg.chart:not(.trend) rect.bar').length") == 6
        # no snapshot target on this server: a plain "not configured" state, no error box
        snap = b.wait(
            "document.getElementById('snapshots-status') && document.getElementById('snapshots-status').dataset.state"
        )
        assert snap == "unconfigured"
        assert "not configured" in b.eval("document.getElementById('snapshots-status').innerText")
        assert b.eval("document.querySelectorAll('#health .error').length") == 0
        b.screenshot(shots / "health.png")
        b.eval("location.hash = '#actions'; true")
        b.wait("document.querySelector('#keys table')")
        _type(b, "k-name", "console-made")
        b.eval("document.getElementById('key-form').requestSubmit(); true")
        new_key = b.wait("document.getElementById('new-key') && document.getElementById('new-key').textContent")
        b.wait("document.getElementById('keys').innerText.includes('console-made')")
        b.eval("document.getElementById('new-key').textContent = 'smk_… (shown once)'; true")  # not in the picture
        b.screenshot(shots / "actions.png")
        revoke = "[...document.querySelectorAll('#keys tr')].find(r => r.innerText.includes('console-made'))"
        b.eval(f"{revoke}.querySelector('button').click(); true")
        b.wait("document.getElementById('action-msg').innerText.includes('Revoked')")
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            assert http.get("/v1/memories", headers={"Authorization": f"Bearer {new_key}"}).status_code == 401

        # "Expiring in 7 days" is the list route's expiresBefore: the server filters, counts and pages
        now = datetime.now(UTC)
        items = [
            {
                "content": f"Carol's pass {i} ends soon.",
                "layer": "user",
                "identifiers": {"userId": "carol"},
                "expiresAt": (now + timedelta(days=2, minutes=i)).isoformat(),
            }
            for i in range(26)
        ]
        items.append(
            {**items[0], "content": "Carol's lease ends later.", "expiresAt": (now + timedelta(days=40)).isoformat()}
        )
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            r = http.post("/v1/memories/bulk", json={"items": items}, headers={"Authorization": f"Bearer {admin}"})
            assert r.status_code in (200, 201) and all("memory" in x for x in r.json()["results"]), r.text
        b.eval("location.hash = '#browse'; true")
        b.wait("document.getElementById('f-expiring')")
        requested = len(b.requested_urls())
        b.eval("document.getElementById('f-expiring').checked = true; true")
        b.eval("document.getElementById('filters').requestSubmit(); true")
        b.wait(
            "document.querySelector('.pager') && document.querySelector('.pager').innerText.includes('25 shown of 26')"
        )
        assert any("expiresBefore=" in u for u in b.requested_urls()[requested:])
        shown = b.eval("[...document.querySelectorAll('#memories tbody td.content')].map(td => td.textContent)")
        assert len(shown) == 25 and all(s.startswith("Carol's pass") for s in shown), shown
        assert (
            len(b.eval("[...document.querySelectorAll('#memories tbody td.expires')].filter(td => td.textContent)"))
            == 25
        )
        b.eval("document.getElementById('next-page').click(); true")
        b.wait("document.querySelector('.pager').innerText.includes('1 shown of 26')")
        last = b.eval("[...document.querySelectorAll('#memories tbody td.content')].map(td => td.textContent)")
        assert len(last) == 1 and last[0].startswith("Carol's pass") and last[0] not in shown, last
        b.eval("document.getElementById('f-expiring').checked = false; true")
        b.eval("document.getElementById('filters').requestSubmit(); true")
        b.wait("document.querySelector('.pager').innerText.includes('25 shown of 33')")  # -1 deleted, +1 promoted

        # The key is kept in session storage only and never appears in a URL
        assert b.eval("sessionStorage.getItem('stratamem.apiKey')") == admin
        assert b.eval("localStorage.length") == 0 and b.eval("document.cookie") == ""
        urls = b.requested_urls()
        assert any("/v1/memories/search/explain" in u for u in urls)
        for url in urls:
            assert url.startswith(srv.url) or url.startswith("data:"), url  # nothing leaves the server
            assert admin not in url and bob not in url and new_key not in url, url
        assert admin not in b.eval("location.href")

        # A key limited to bob sees nothing of alice's or the project's memories
        b.eval("document.getElementById('signout').click(); true")
        b.eval("location.hash = '#browse'; true")
        _sign_in(b, bob)
        b.wait("document.querySelector('#memories tbody tr')")
        b.wait("document.querySelector('.tree h2')")
        table = b.eval("document.getElementById('memories').innerText")
        tree = b.eval("document.querySelector('.tree').innerText")
        assert "Bob drinks green tea" in table
        assert "Alice" not in table and "alice" not in tree and "project" not in tree
    finally:
        b.close()


def test_console_snapshot_card_with_a_target_in_chromium(
    live_db: Path,
    s3: S3Store,  # noqa: F811  (fixture)
    s3_settings: S3Settings,  # noqa: F811  (fixture)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binary = chromium_binary()
    require_service("chromium", binary is not None, "no chromium binary (apt-get install chromium)")
    assert binary is not None and s3_settings.endpoint_url is not None
    # the server's snapshot target comes from its environment (SeaweedFS, this test's bucket)
    monkeypatch.setenv("STRATAMEM_S3_URL", s3_settings.endpoint_url)
    monkeypatch.setenv("STRATAMEM_S3_BUCKET", s3_settings.bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_settings.access_key_id or "")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_settings.secret_access_key or "")
    admin = cli_key(live_db, "acme", "admin")
    srv = LiveServer(live_db)
    srv.start()
    b = Browser(binary)
    try:
        auth = {"Authorization": f"Bearer {admin}"}
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            _seed(http, auth)
            assert http.post("/v1/snapshots", headers=auth).status_code == 201
            status = http.get("/v1/snapshots/status", headers=auth).json()
        assert status["configured"] and status["count"] >= 1
        b.navigate(srv.url + "/console/#health")
        _sign_in(b, admin)
        state = b.wait(
            "document.getElementById('snapshots-status') && document.getElementById('snapshots-status').dataset.state"
        )
        assert state == "configured"
        text = b.eval("document.getElementById('snapshots-status').innerText")
        assert f"Bucket {s3_settings.bucket}" in text and f"{status['count']} snapshot" in text, text
        latest = b.eval("document.getElementById('snapshot-latest').innerText")
        assert f"{status['latest']['rows']} rows" in latest, latest
        assert b.eval("document.querySelectorAll('#snapshots-status li').length") == status["count"]
    finally:
        b.close()
        srv.stop()


@pytest.mark.model
def test_explained_search_shows_what_the_asked_value_removed(
    open_mem: Callable[..., Memory], minilm: Embedder, tmp_path: Path
) -> None:
    """A question that asks for a kind of value ("salary": an amount of money) is explained with that
    kind (``askedValue``), and the near miss that states none is listed with reason ``asked_value``."""
    mem = open_mem(tmp_path / "value.duckdb", embedder=minilm)
    headers = {"Authorization": f"Bearer {create_key(mem.engine.provider, 'acme', 'admin').key}"}
    with TestClient(create_app(mem, ServerSettings(mcp_enabled=False))) as client:
        ids = {"userId": "dana"}
        items = [{"content": c, "layer": "user", "identifiers": ids} for c in DANA]
        assert client.post("/v1/memories/bulk", json={"items": items}, headers=headers).status_code in (200, 201)
        body = {"query": "What is Dana's salary at Figma?", "identifiers": ids}
        out = client.post("/v1/memories/search/explain", json=body, headers=headers).json()
        assert out["askedValue"] == ["money"] and out["results"] == []
        by_value = [x["memory"]["content"] for x in out["removed"] if x["reason"] == "asked_value"]
        assert by_value == ["Dana works as a product designer at Figma"], out["removed"]
        assert client.post("/v1/memories/search", json=body, headers=headers).json()["results"] == []
        # with a threshold the check does not apply
        out = client.post("/v1/memories/search/explain", json={**body, "threshold": 0.5}, headers=headers).json()
        assert out["askedValue"] == [] and out["results"][0]["memory"]["content"] == by_value[0]
