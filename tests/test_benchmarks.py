"""Smoke runs of benchmark scripts that nothing else exercises (tiny sizes, hashing embedder)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stratamem import Memory, TenantContext

ROOT = Path(__file__).resolve().parents[1]


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<script>`` with ``args`` on the checkout's sources; its output captured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_ingest_ratio_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "ingest_ratio.json"
    run = _bench("ingest_ratio.py", "--rounds", "2", "--batch", "40", "--embedder", "hashing", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "graph on (default)" in run.stdout and "graph off" in run.stdout
    data = json.loads(out.read_text())
    assert [r["mode"] for r in data["results"]] == ["graph on (default)", "graph off"]
    for r in data["results"]:
        assert r["ratio"] > 0 and r["ingest_per_s"] > 0 and r["embed_per_s"] > 0
    assert data["rounds"] == 2 and data["batch"] == 40


def test_boosts_benchmark_runs_and_writes_its_json(tmp_path: Path) -> None:
    """Without LoCoMo data (a path that does not exist) only the superseded-facts workload runs."""
    out = tmp_path / "boosts.json"
    run = _bench(
        "boosts.py",
        "--embedder",
        "hashing",
        "--distractors",
        "50",
        "--recency",
        "0.1",
        "--importance",
        "0.3",
        "--data",
        str(tmp_path / "absent.json"),
        "--out",
        str(out),
    )
    assert run.returncode == 0, run.stderr
    assert "LoCoMo skipped" in run.stderr and "recency 0.1" in run.stdout
    rows = json.loads(out.read_text())["rows"]
    assert list(rows) == ["off (default)", "recency 0.1", "importance 0.3"]
    # a recency boost puts the newer of two conflicting facts above the older one
    assert rows["recency 0.1"]["newer_above_older"] > max(0.9, rows["off (default)"]["newer_above_older"])
    assert all("locomo_recall@10" not in row for row in rows.values())


def _tiny_locomo(path: Path) -> None:
    """Two made-up conversations in the LoCoMo layout (one of them a held-out id), with no two turns
    alike (the engine merges near-duplicate results, which the offline replay does not model)."""
    words = [
        "pottery",
        "camping",
        "puppy",
        "guitar",
        "interview",
        "beach",
        "garden",
        "marathon",
        "violin",
        "bakery",
        "chess",
        "kayak",
        "sculpture",
        "volunteering",
        "painting",
        "hiking",
        "tennis",
        "cooking",
        "poetry",
        "cycling",
        "theater",
        "museum",
        "surfing",
        "yoga",
    ]
    data = []
    for c, sample_id in enumerate(("conv-1", "conv-42")):
        conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
        qa = []
        for s in (1, 2):
            topics = words[(c * 2 + s - 1) * 6 : (c * 2 + s) * 6]
            turns = []
            for i, topic in enumerate(topics):
                turns.append({"speaker": "Ana", "dia_id": f"D{s}:{2 * i + 1}", "text": f"My {topic} went well"})
                reply = f"Ben: did {words[(i + 7 * s + c) % len(words)]} help?"
                turns.append({"speaker": "Ben", "dia_id": f"D{s}:{2 * i + 2}", "text": reply})
            conversation[f"session_{s}"] = turns
            conversation[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
            qa += [
                {
                    "question": f"How was the {topic}?",
                    "answer": "well",
                    "evidence": [f"D{s}:{2 * i + 1}"],
                    "category": 4,
                }
                for i, topic in enumerate(topics)
            ]
        data.append({"sample_id": sample_id, "conversation": conversation, "qa": qa})
    path.write_text(json.dumps(data))


def test_locomo_offline_replays_the_engine_score(tmp_path: Path) -> None:
    """The offline replay's default row gives the recall that the engine gives on the same data."""
    data = tmp_path / "locomo.json"
    _tiny_locomo(data)
    common = ["--embedder", "hashing", "--data", str(data)]
    offline, engine = tmp_path / "offline.json", tmp_path / "engine.json"
    for script, extra in (
        ("locomo_offline.py", ["--cache", str(tmp_path / "cache"), "--out", str(offline)]),
        ("locomo_recall.py", ["--config", "default", "--out", str(engine)]),
    ):
        run = _bench(script, *common, *extra)
        assert run.returncode == 0, run.stderr
    replay = json.loads(offline.read_text())["variants"]["engine default (MemoryConfig, retrieval/context.py)"]
    measured = json.loads(engine.read_text())["configs"]["default"]
    assert replay["recall@10"] == pytest.approx(measured["metrics"]["overall"]["recall@10"])
    assert replay["holdout"] == pytest.approx(measured["recall@10_by_split"]["holdout"])
    assert replay["hit@1"] == pytest.approx(measured["metrics"]["overall"]["hit@1"])
    assert replay["MRR"] == pytest.approx(measured["metrics"]["overall"]["MRR"])
    assert 0.0 < replay["hit@1"] < 1.0, "a ranking to compare: some answers first, some not"


def test_locomo_recall_reports_the_default_search_per_category(tmp_path: Path) -> None:
    """``--default-search`` asks every question, adversarial ones too, with no threshold."""
    data, out = tmp_path / "locomo.json", tmp_path / "r.json"
    _tiny_locomo(data)
    convs = json.loads(data.read_text())
    convs[0]["qa"].append({"question": "How was Ben's pottery?", "evidence": ["D1:1"], "category": 5})
    data.write_text(json.dumps(convs))
    run = _bench(
        "locomo_recall.py", "--embedder", "hashing", "--data", str(data), "--config", "dense", "--default-search",
        "--out", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    cells = json.loads(out.read_text())["default_search"]
    assert set(cells) == {"4 single-hop, dev", "4 single-hop, holdout", "5 adversarial, dev"}
    assert cells["5 adversarial, dev"]["n"] == 1
    assert cells["4 single-hop, dev"]["n"] == cells["4 single-hop, holdout"]["n"] == 12
    for cell in cells.values():
        assert 0.0 <= cell["empty"] <= 1.0 and 0.0 <= cell["hit@1"] <= 1.0 and 0.0 < cell["best"] <= 1.0
    assert cells["4 single-hop, holdout"]["hit@1"] > 0.5  # each question names its turn's topic
    assert "5 adversarial, dev" in run.stdout


def test_context_latency_times_both_configurations(tmp_path: Path) -> None:
    """On a store written by locomo_recall.py, both configurations are searched the same number of times."""
    data, db = tmp_path / "locomo.json", tmp_path / "locomo.duckdb"
    _tiny_locomo(data)
    common = ["--embedder", "hashing", "--data", str(data)]
    run = _bench("locomo_recall.py", *common, "--config", "dense", "--db", str(db), "--out", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stderr
    run = _bench("context_latency.py", *common, "--db", str(db), "--questions", "5", "--rounds", "2")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["no", "default"]
    assert all(line.endswith("(10 searches)") for line in lines)


def test_centered_ranking_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "centered_ranking.json"
    run = _bench("centered_ranking.py", "--embedder", "hashing", "--out", str(out))
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data["questions"]) == {"dev", "holdout", "fresh"} and min(data["questions"].values()) > 10
    assert {"fused", "relevance", "centered cos", "fused + 0.5 relevance"} <= set(data["p@1"])
    assert set(data["floored p@1"]) == set(data["p@1"])
    for table in ("p@1", "floored p@1"):
        for row in data[table].values():
            assert set(row) == {"dev", "holdout", "fresh", "all"}
            assert all(0.0 <= v <= 1.0 for v in row.values())
    # the floor only removes candidates: a variant never answers more questions with it than without
    for name, row in data["floored p@1"].items():
        assert all(row[split] <= data["p@1"][name][split] + 1e-9 for split in row), name


def test_the_fact_scenarios_name_only_memories_they_hold() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from fact_data import SCENARIOS, VOICED
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert {s.split for s in SCENARIOS} == {
        "dev",
        "holdout",
        "fresh",
        "fresh6",
        "fresh7",
        "fresh8",
        "fresh9",
        "fresh10",
        "fresh11",
        "fresh12",
        "fresh13",
        "fresh14",
        "fresh15",
        "fresh16",
        "fresh17",
    }
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    for scenario in SCENARIOS:
        keys = [m.key for m in scenario.memories]
        assert len(set(keys)) == len(keys), scenario.name
        for m in scenario.memories:  # an older memory is written before the one that replaces it
            assert m.supersedes is None or m.supersedes in keys[: keys.index(m.key)], (scenario.name, m.key)
        for question in [*scenario.questions, *VOICED.get(scenario.name, [])]:
            assert set(question.answers) <= set(keys), (scenario.name, question.text)
        answerable = [q for q in scenario.questions if q.answers]
        assert answerable and len(answerable) < len(scenario.questions), scenario.name  # both kinds
    assert set(VOICED) <= {s.name for s in SCENARIOS}


def test_the_scenarios_without_their_subject_leave_out_only_the_name() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from fact_data import SCENARIOS, without_subject
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    bare = {s.name: without_subject(s) for s in SCENARIOS}
    assert bare["atlas"] is None  # a project: no user to leave out
    dana = bare["dana"]
    assert dana is not None and dana.questions == SCENARIOS[0].questions
    by_key = {m.key: m for m in dana.memories}
    original = {m.key: m for m in SCENARIOS[0].memories}
    assert by_key.keys() == original.keys()
    assert all(by_key[k].supersedes == original[k].supersedes for k in by_key)
    changed = [k for k in by_key if by_key[k].content != original[k].content]
    assert changed and "name" not in changed
    assert all(not by_key[k].content.startswith("Dana") and by_key[k].content[0].isupper() for k in changed)


def test_supersession_pairs_replays_the_sdk_and_writes_its_json(tmp_path: Path) -> None:
    """The replay of the rules at the default floors must equal the SDK's adds (the script exits 1
    otherwise); every persona's labels name facts it holds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from supersession_data import PERSONAS
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    splits = {p.split for p in PERSONAS}
    # dev chooses constants, holdout checks them, each freshN was written after the rules it measures
    assert {"dev", "holdout", "fresh"} <= splits and all(re.fullmatch(r"dev|holdout|fresh\d*", s) for s in splits)
    for persona in PERSONAS:
        assert all(c.replaces is None or c.replaces in persona.facts for c in persona.cases), persona.name
        assert any(c.replaces for c in persona.cases) and any(c.replaces is None for c in persona.cases)
    out = tmp_path / "supersession_pairs.json"
    run = _bench("supersession_pairs.py", "--embedder", "hashing", "--sweep", "--shared", "200", "--out", str(out))
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data["default"]) == splits | {"all"}
    assert data["default"]["all"]["cases"] == sum(len(p.cases) for p in PERSONAS)
    for table in [data["default"], *data["sweep"].values()]:
        assert all(0.0 <= row["found"] <= 1.0 and 0.0 <= row["wrong"] <= 1.0 for row in table.values())
    assert len(data["sweep"]) >= 5
    assert data["shared"]["facts"] == 200 and data["shared"]["superseded"] == len(data["shared"]["pairs"])


def test_floor_options_runs_and_writes_its_json(tmp_path: Path) -> None:
    out = tmp_path / "floor_options.json"
    run = _bench("floor_options.py", "--embedder", "hashing", "--sizes", "7", "--trials", "2", "--out", str(out))
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    assert set(data["small scopes"]["7"]) == {"floor", "off"}
    for by_split in data["small scopes"]["7"].values():
        assert set(by_split) == {"dev", "holdout"}
        assert all(0.0 <= v <= 1.0 for row in by_split.values() for v in row.values())


def test_store_search_measures_a_store_built_by_load(tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    built = _bench(
        "load.py",
        *("--memories", "60", "--clients", "1", "--seconds", "0.5", "--embedder", "hashing"),
        *("--embed-sample", "16", "--store", str(store), "--out", str(tmp_path / "load.json")),
        *("--tenant", "t-kept"),
    )
    assert built.returncode == 0, built.stderr
    out = tmp_path / "store_search.json"
    run = _bench(
        "store_search.py",
        "--store",
        str(store),
        "--queries",
        "12",
        "--embedder",
        "hashing",
        "--out",
        f"{out}",
        "--tenant",
        "t-kept",
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    # the load's adds may supersede some of the 60 (a superseded memory is not listed): compare with
    # what the store itself lists
    with Memory.open(store, embedder="hashing") as mem:
        listed = mem.list(
            TenantContext(tenant_id="t-kept"), layer="user", identifiers={"user_id": "u1"}, limit=1
        ).total_count
    assert data["queries"] == 12 and data["memories_in_scope"] == listed > 0 and data["mean_results"] > 0
    assert data["latency_ms"]["search"]["p50"] > 0 and data["open_first_search_ms"] > 0
    assert "p50" in run.stdout
    missing = _bench("store_search.py", "--store", str(tmp_path / "absent.duckdb"))
    assert missing.returncode == 2 and "load.py --store" in missing.stderr


def test_add_latency_times_adds_after_searches(tmp_path: Path) -> None:
    out = tmp_path / "add_latency.json"
    run = _bench("add_latency.py", "--adds", "5", "--embedder", "hashing", "--out", str(out))
    assert run.returncode == 0, run.stderr
    ms = json.loads(out.read_text())["ms"]
    assert 0 < ms["p50"] <= ms["p90"] <= ms["p99"]


def test_graph_add_benchmark_builds_reuses_and_times_statements(tmp_path: Path) -> None:
    """graph_add.py: a kept store, a second run on a copy of it (with the index experiment)."""
    kept, out = tmp_path / "built.duckdb", tmp_path / "graph_add.json"
    run = _bench("graph_add.py", "--memories", "300", "--adds", "6", "--keep", str(kept), "--out", str(out))
    assert run.returncode == 0, run.stderr
    size = kept.stat().st_size
    run = _bench("graph_add.py", "--db", str(kept), "--adds", "6", "--lookup-indexes", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert kept.stat().st_size == size  # the kept store is copied, never changed
    data = json.loads(out.read_text())
    assert [a["add"] for a in data["adds"]] == ["plain", "supersede"] and all(a["n"] == 3 for a in data["adds"])
    marked = {s["statement"] for s in data["statements"] if s["add"] == "supersede"}
    assert "UPDATE memory_nodes SET" in marked and "UPDATE entities SET" in marked


@pytest.mark.model
def test_query_model_benchmark_compares_both_models(tmp_path: Path) -> None:
    out = tmp_path / "query_model.json"
    run = _bench("query_model.py", "--queries", "24", "--rounds", "1", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "same best stored sentence" in run.stdout
    data = json.loads(out.read_text())
    assert 0.95 < data["cosine_min"] <= data["cosine_mean"] < 1.0
    assert 0.0 < data["same_best_stored"] <= 1.0
    assert set(data["latency_ms"]) == {"float", "int8"}
    assert all(v["p50"] > 0 for v in data["latency_ms"].values())
    assert set(data["throughput"]) == {"float, batches of 16", "float, batches of 32", "int8, one query at a time"}
