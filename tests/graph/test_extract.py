"""Offline extraction (seed 000 "LLM-based Entity Extraction" without an LLM bill) and the LLM hook."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stratamem.graph.extract import (
    _FILLER,
    _NP_STOP,
    _PHRASE_FIRST,
    _PHRASES,
    _SENTENCE_RE,
    RELATION_TYPES,
    ExtractedEntity,
    ExtractedRelation,
    ExtractionResult,
    KnownEntity,
    LLMBackedExtractor,
    LLMGraphExtractor,
    RuleBasedExtractor,
    _ngrams,
    _Tok,
    _tokens,
    candidate_keys,
    normalize_name,
    register_relation_phrase,
)

ROOT = Path(__file__).resolve().parents[2]


def _rels(result: ExtractionResult) -> set[tuple[str, str, str]]:
    return {(r.source, r.type, r.target) for r in result.relations}


def test_capitalised_names_verbs_and_types() -> None:
    out = RuleBasedExtractor().extract("Alice works on Project A. Bob Smith joined Acme Corp.")
    types = {e.name: e.type for e in out.entities}
    assert types == {"Alice": "PERSON", "Project A": "PROJECT", "Bob Smith": "PERSON", "Acme Corp": "ORGANIZATION"}
    assert _rels(out) == {("Alice", "WORKS_ON", "Project A"), ("Bob Smith", "MEMBER_OF", "Acme Corp")}


def test_quoted_terms_and_noun_phrases_around_verbs() -> None:
    out = RuleBasedExtractor().extract('The outage was caused by a memory leak in the "session cache".')
    names = {e.norm for e in out.entities}
    assert {"memory leak", "session cache", "outage"} <= names
    assert ("outage", "CAUSED_BY", "memory leak") in _rels(out)


def test_inverse_phrases_swap_direction() -> None:
    out = RuleBasedExtractor().extract("A misconfigured Nginx caused the Checkout Outage.")
    assert ("Checkout Outage", "CAUSED_BY", "Nginx") in _rels(out)


def test_known_entity_dictionary_finds_lowercase_mentions() -> None:
    known = {"phoenix": KnownEntity(name="Phoenix", type="PROJECT")}
    plain = RuleBasedExtractor().extract("the release of phoenix slipped")
    assert not plain.entities
    out = RuleBasedExtractor().extract("the release of phoenix slipped", known)
    assert [(e.name, e.type) for e in out.entities] == [("Phoenix", "PROJECT")]


def test_sentence_initial_common_words_are_not_entities() -> None:
    out = RuleBasedExtractor().extract("Remember to renew the domain. Yesterday we deployed. Please be brief.")
    assert out.entities == []


def test_vocabulary_is_extensible() -> None:
    register_relation_phrase("reviews code of", "REVIEWS")
    assert "REVIEWS" in RELATION_TYPES
    out = RuleBasedExtractor().extract("Mallory reviews code of Trent.")
    assert ("Mallory", "REVIEWS", "Trent") in _rels(out)
    with pytest.raises(ValueError):
        register_relation_phrase("x", "not upper")


def test_normalize_name_is_the_dedup_key() -> None:
    assert normalize_name("  The  Memory Leak's ") == normalize_name("memory leak") == "memory leak"


class _LLM:
    """An in-process object implementing the LLM extraction protocol (no network, no model)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, Sequence[str]]] = []

    def extract_graph(
        self, text: str, *, known_entities: Sequence[str], relation_types: Sequence[str]
    ) -> ExtractionResult:
        self.calls.append((text, list(known_entities)))
        if self.fail:
            raise TimeoutError("llm down")
        return ExtractionResult(
            entities=[ExtractedEntity(name="Zed", type="PERSON"), ExtractedEntity(name="Quasar", type="PROJECT")],
            relations=[
                ExtractedRelation(source="Zed", target="Quasar", type="works_on"),
                ExtractedRelation(source="Zed", target="Nobody", type="KNOWS"),
            ],
        )


def test_llm_protocol_hook_and_fallback() -> None:
    llm = _LLM()
    assert isinstance(llm, LLMGraphExtractor)
    ext = LLMBackedExtractor(llm)
    out = ext.extract("anything", {"quasar": KnownEntity("Quasar", "PROJECT")})
    assert llm.calls == [("anything", ["Quasar"])]
    assert _rels(out) == {("Zed", "WORKS_ON", "Quasar")}  # dangling relation dropped, type upper-cased
    failing = LLMBackedExtractor(_LLM(fail=True))
    out = failing.extract("Alice works on Project A.")
    assert failing.failures == 1 and ("Alice", "WORKS_ON", "Project A") in _rels(out)


def test_precision_on_labelled_set() -> None:
    spec = importlib.util.spec_from_file_location("graph_eval", ROOT / "benchmarks" / "graph_extraction_eval.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.evaluate()
    assert result["items"] >= 40
    # The offline extractor must be precise rather than exhaustive: wrong entities pollute the graph.
    assert result["entity_precision"] >= 0.85, result["errors"]
    assert result["relation_precision"] >= 0.75, result["errors"]


def test_a_name_longer_than_an_entity_name_is_skipped_not_fatal() -> None:
    """A 250-character capitalised token (a base64 id, say) is no entity; it used to raise a
    ValidationError and fail the whole write."""
    blob = "Ey" + "Q" * 250
    out = RuleBasedExtractor().extract(f"Alice shared {blob} with Bob. Alice works on {blob} and Project A.")
    assert {e.name for e in out.entities} == {"Alice", "Bob", "Project A"}
    assert all(len(r.source) <= 200 and len(r.target) <= 200 for r in out.relations)


def test_a_memory_with_a_long_token_is_stored_with_its_graph(tmp_path: Path) -> None:
    from stratamem import Memory, TenantContext

    ctx = TenantContext(tenant_id="acme")
    with Memory.open(tmp_path / "g.duckdb", embedder="hashing") as mem:
        blob = "Ey" + "Q" * 250
        out = mem.add(ctx, f"Caroline posted photo {blob} from Berlin", layer="user", identifiers={"user_id": "u1"})
        assert mem.get(ctx, out.memory.id) is not None
        conn = mem.engine.provider.db.conn  # type: ignore[attr-defined]
        names = {str(r[0]) for r in conn.execute("SELECT name FROM entities WHERE tenant_id = 'acme'").fetchall()}
        assert {"Caroline", "Berlin"} <= names and not any(len(n) > 200 for n in names)


_WORDS = [
    "the",
    "The",
    "THE",
    "Acme",
    "acme's",
    "x's's",
    "U.S.'s",
    "Café",
    "Zoë's",
    "Straße",
    "&",
    "a",
    "of",
    "works",
    "on",
    "Project",
    "k8s",
    "Bob\u2019s",
    "\u00c9lise",
    "ﬁle",
    "and",
    "memory",
    "leak",
    "I",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=9), min_size=1, max_size=4),
    st.integers(min_value=1, max_value=5),
)
def test_dictionary_keys_are_the_normalised_ngrams(sentences: list[list[str]], max_words: int) -> None:
    """The n-gram keys (built without a call per n-gram where that is safe) are exactly
    ``normalize_name`` of every run of 1..max_words tokens, for the batch lookup and the spans."""
    text = ". ".join(" ".join(words) for words in sentences)
    want: set[str] = set()
    for sentence in _SENTENCE_RE.split(text):
        lows = [t.low for t in _tokens(sentence)]
        grams = _ngrams(lows, sentence.isascii(), max_words)
        for n in range(1, max_words + 1):
            got = grams[n - 1] if n <= len(grams) else []
            expected = [normalize_name(" ".join(lows[i : i + n])) for i in range(len(lows) - n + 1)]
            assert got == expected
            want.update(k for i, k in enumerate(expected) if n > 1 or not (lows[i] in _NP_STOP or len(lows[i]) < 2))
    want.discard("")
    assert candidate_keys(text, max_words) == sorted(want)


def _noun_phrases_reference(toks: Sequence[_Tok], taken: list[bool]) -> list[tuple[int, int, str]]:
    """The noun-phrase pass as first written (every window joined, fillers dropped): the oracle."""
    claims: list[tuple[int, int, str]] = []

    def claim(start: int, end: int, name: str) -> None:
        if start >= end or any(taken[start:end]):
            return
        for i in range(start, end):
            taken[i] = True
        claims.append((start, end, name))

    np_word = RuleBasedExtractor._np_word
    lows = [t.low for t in toks]
    n = len(toks)
    for i in range(n):
        if lows[i] not in _PHRASE_FIRST and lows[i] not in _FILLER:
            continue
        for width in (4, 3, 2, 1):
            if i + width > n:
                continue
            phrase = " ".join(w for w in lows[i : i + width] if w not in _FILLER)
            if phrase not in _PHRASES or any(taken[i : i + width]):
                continue
            j = i + width
            while j < n and lows[j] in _FILLER and not taken[j]:
                j += 1
            k = j
            while k < n and k - j < 3 and not taken[k] and np_word(toks[k].text):
                k += 1
            if k > j and (k == n or taken[k] or not np_word(toks[k].text)):
                claim(j, k, " ".join(t.text for t in toks[j:k]).lower())
            e = i
            while e > 0 and lows[e - 1] in _FILLER and not taken[e - 1]:
                e -= 1
            s = e
            while s > 0 and e - s < 3 and not taken[s - 1] and np_word(toks[s - 1].text):
                s -= 1
            if s < e:
                claim(s, e, " ".join(t.text for t in toks[s:e]).lower())
            break
    return claims


def _split(text: str) -> list[str]:
    return text.split()


_NP_WORDS = [
    "the",
    "a",
    "is",
    "was",
    "now",
    "caused",
    "by",
    "due",
    "to",
    "part",
    "of",
    "works",
    "on",
    "memory",
    "leak",
    "disk",
    "pressure",
    "Acme",
    "uses",
    "written",
    "in",
    "rust",
    "and",
    "built",
    "with",
    "led",
    "stores",
    "data",
    "based",
    "complained",
    "about",
    "contributes",
    "depends",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_NP_WORDS), min_size=1, max_size=14), st.lists(st.booleans(), min_size=14, max_size=14))
@example(_split("memory leak due the to disk pressure"), [False] * 14)  # a filler inside the phrase
@example(_split("the a disk pressure is caused by a memory leak"), [False] * 14)  # fillers before it
@example(_split("disk is part of the data stores"), [False, True] + [False] * 12)
def test_noun_phrase_pass_matches_the_reference(words: list[str], pre_taken: list[bool]) -> None:
    """The noun-phrase pass skips windows that cannot start a phrase and joins filler-free windows
    directly; what it claims is exactly what joining every window claimed."""
    toks = _tokens(" ".join(words))
    taken = pre_taken[: len(toks)]
    want = _noun_phrases_reference(toks, list(taken))
    got: list[tuple[int, int, str]] = []
    mine = list(taken)

    def claim(start: int, end: int, name: str, typ: str, strong: bool = True) -> None:
        if start >= end or any(mine[start:end]):
            return
        for i in range(start, end):
            mine[i] = True
        got.append((start, end, name))

    RuleBasedExtractor()._noun_phrases(toks, mine, claim)
    assert got == want
