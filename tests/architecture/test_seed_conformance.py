"""docs/seed-conformance.md cannot rot: every requirement listed below has a row with an honest status,
every module it cites exists under src/stratamem/, and every ``file::test`` it cites is a test function
that exists under tests/."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "seed-conformance.md"
SRC = ROOT / "src" / "stratamem"
TESTS = ROOT / "tests"

#: The SPEC's requirement ids.
SPEC_IDS = (
    "R-MODEL",
    "R-SCOPE",
    "R-OPS",
    "R-ERR",
    "R-PROV",
    "R-EMB",
    "R-LLM",
    "R-HYG",
    "R-LIFE",
    "R-GRAPH",
    "R-S3",
    "R-API",
    "R-MCP",
    "R-CRUD",
    "R-CLI",
    "R-OBS",
    "R-COORD",
)
#: Every "Requirement:" title of seed 000 (seed 004's are the first fifteen of them, less three).
SEED_000 = (
    "Memory Promotion",
    "Importance Scoring",
    "Promotion Trigger",
    "PII Redaction",
    "Sensitivity Check",
    "Performance Telemetry",
    "Memory Provider Adapter Trait",
    "Memory Add Operation",
    "Memory Search Operation",
    "Memory Get Operation",
    "Memory Update Operation",
    "Memory Delete Operation",
    "Memory List Operation",
    "Layer Precedence Merging",
    "Concurrent Layer Search",
    "Provider Capabilities",
    "Memory Metadata Filtering",
    "Embedding Generation",
    "Layer Access Control",
    "Memory Error Handling",
    "Memory Observability",
    "Memory-R1 Pruning",
    "Dynamic Graph Reasoning",
    "Embedded Graph Storage",
    "S3 Graph Persistence",
    "SQL/PGQ Query Interface",
    "Multi-tenant Graph Isolation",
    "LLM-based Entity Extraction",
    "Cascading Graph Deletion",
    "Application-Level Referential Integrity",
    "Write Coordination for Single-Writer Constraint",
    "Transactional S3 Persistence",
    "Composite Index Optimization",
    "Graph Query Observability",
    "Tenant Query Isolation",
    "Automated Graph Backups",
    "Multi-Table Transaction Atomicity",
    "Lambda Cold Start Optimization",
    "Graph Health Checks",
    "Schema Migration Support",
    "Governance Validation",
    "Tenant Context Propagation",
    "Tenant Isolation Enforcement",
)
SEED_004 = (
    "Memory Provider Adapter Trait",
    "Memory Add Operation",
    "Memory Search Operation",
    "Memory Get Operation",
    "Memory Update Operation",
    "Memory Delete Operation",
    "Memory List Operation",
    "Layer Precedence Merging",
    "Concurrent Layer Search",
    "Provider Capabilities",
    "Memory Metadata Filtering",
    "Embedding Generation",
    "Layer Access Control",
    "Memory Error Handling",
    "Memory Observability",
)
#: Headings of seed 001 and sections of seeds 002 and 003, as the rows name them.
OTHER_SEEDS = (
    "001: AutoGen Memory Features",
    "001: Scope Routing",
    "001: Lifecycle",
    "001: Scope Defaults",
    "001: Conflict Handling",
    "001: Permissions",
    "001: Bulk Operations",
    "001: Shared Memory Schema",
    "001: Retention and Pruning Defaults",
    "001: Memory CRUD API Contract",
    "001: Pagination Rules",
    "001: Error Codes",
    "001: Audit Logging Defaults",
    "001: Backend Choice",
    "002 §5.1",
    "002 §5.2",
    "002 §5.3",
    "002 §5.4",
    "002 §5.5",
    "002 §5.6",
    "002 §5.7",
    "002 §8.3",
    "002 §8.9",
    "002 §8.10",
    "002 §15",
    "003 §1.4",
    "003 §2.2.1",
    "003 §2.2.2",
    "003 §2.2.3",
    "003 §2.2.4",
    "003 §2.3",
    "003 §3.1.1",
    "003 §3.1.2",
    "003 §3.2",
    "003 §3.3",
    "003 §3.4.1",
    "003 §3.4.2",
    "003 §4.2",
    "003 §4.3",
    "003 §6",
    "003 §7.1",
    "003 §7.2",
    "003 §9.1",
    "003 §9.2",
    "003 §9.3",
    "003 §11",
)
STATUSES = ("done", "partial", "not done", "superseded")


def rows() -> list[list[str]]:
    out = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| Requirement |"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 4, f"a row needs 4 cells: {line}"
        out.append(cells)
    return out


@cache
def functions_of(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    )


def test_every_requirement_has_a_row() -> None:
    names = [r[0] for r in rows()]
    missing = [i for i in SPEC_IDS if not any(n.startswith(i + " ") for n in names)]
    missing += [t for t in SEED_000 if not any(re.match(rf"000(/004)?: {re.escape(t)}\b", n) for n in names)]
    missing += [t for t in SEED_004 if not any(n.startswith(f"000/004: {t}") for n in names)]
    missing += [k for k in OTHER_SEEDS if not any(n.startswith(k) for n in names)]
    assert missing == [], f"docs/seed-conformance.md has no row for {missing}"


def test_statuses_are_honest_words_with_reasons() -> None:
    for name, status, _, _ in rows():
        word = next((s for s in STATUSES if status.startswith(s)), None)
        assert word is not None, f"{name}: status {status!r} is not one of {STATUSES}"
        if word != "done":
            assert re.match(rf"{word}: \S", status), f"{name}: a {word} row says why ({status!r})"


def test_cited_modules_exist() -> None:
    for name, _, implemented, _ in rows():
        cited = re.findall(r"`([^`]+)`", implemented)
        assert cited, f"{name}: no module cited"
        for path in cited:
            assert (SRC / path).exists(), f"{name}: src/stratamem/{path} does not exist"


def test_cited_tests_exist() -> None:
    total = 0
    for name, _, _, tested in rows():
        cited = re.findall(r"`([^`]+)`", tested)
        assert cited, f"{name}: no test cited"
        for ref in cited:
            file, sep, func = ref.partition("::")
            assert sep and func, f"{name}: {ref!r} is not file::test_function"
            path = TESTS / file
            assert path.is_file(), f"{name}: tests/{file} does not exist"
            assert func in functions_of(path), f"{name}: tests/{file} has no {func}"
            total += 1
    assert total >= 150
