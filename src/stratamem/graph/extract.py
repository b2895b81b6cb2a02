"""Entity and relation extraction: offline rules, or an LLM when one is configured.

Two implementations of one small protocol:

* :class:`RuleBasedExtractor` (default, offline, deterministic, cheap enough for every write):
  capitalised names, quoted terms, a known-entity dictionary built from the tenant's own graph,
  noun phrases around relation verbs, and verb patterns mapped to typed relations.
* any object with ``extract_graph(text, known_entities=..., relation_types=...)`` (the
  :class:`LLMGraphExtractor` protocol) — an LLM client plugs in there without this module
  depending on it. :class:`LLMBackedExtractor` adapts one and falls back to the rules when it fails.

The relation vocabulary is open: :data:`RELATION_TYPES` lists the built-in types and
:func:`register_relation_phrase` adds verb phrases (and thereby new types).
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..llm.metrics import record_fallback

log = logging.getLogger("stratamem.graph")

#: Longest entity name kept; a longer "name" (a base64 id, a URL path) is no entity.
MAX_NAME_CHARS = 200

# ------------------------------------------------------------------------------------ model


class ExtractedEntity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    type: str = Field(default="ENTITY", min_length=1, max_length=40)

    @property
    def norm(self) -> str:
        return normalize_name(self.name)


class ExtractedRelation(BaseModel):
    """``source —type→ target``; both ends are entity names of the same extraction result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    target: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    type: str = Field(min_length=1, max_length=40)


class ExtractionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)

    def cleaned(self) -> ExtractionResult:
        """De-duplicated entities; relations kept only when both ends are among the entities."""
        seen: dict[str, ExtractedEntity] = {}
        for ent in self.entities:
            key = ent.norm
            if key and key not in seen:
                seen[key] = ent
        rels: dict[tuple[str, str, str], ExtractedRelation] = {}
        for rel in self.relations:
            s, t = normalize_name(rel.source), normalize_name(rel.target)
            if s in seen and t in seen and s != t:
                rels.setdefault(
                    (s, rel.type.upper(), t),
                    ExtractedRelation(source=seen[s].name, target=seen[t].name, type=rel.type.upper()),
                )
        # built from this result's own (validated or constructed) entities and validated relations:
        # no need to validate the lists again
        return ExtractionResult.model_construct(entities=list(seen.values()), relations=list(rels.values()))


@dataclass(frozen=True)
class KnownEntity:
    """An entity already in the tenant's graph (the extractor's dictionary)."""

    name: str
    type: str


class GraphExtractor(Protocol):
    """What the graph store calls on every add/update."""

    name: str

    def extract(self, text: str, known: Mapping[str, KnownEntity] | None = None) -> ExtractionResult: ...


@runtime_checkable
class LLMGraphExtractor(Protocol):
    """The hook an LLM client implements to extract entities and typed relations.

    ``known_entities`` are names already in the tenant's graph (reuse them verbatim);
    ``relation_types`` is the vocabulary to choose from (others are accepted as-is).
    """

    def extract_graph(
        self, text: str, *, known_entities: Sequence[str], relation_types: Sequence[str]
    ) -> BaseModel | Mapping[str, Any]: ...


# ------------------------------------------------------------------------------------ vocabulary

#: Built-in relation types; any upper-case type registered through a phrase is accepted too.
RELATION_TYPES: list[str] = [
    "WORKS_ON",
    "CAUSED_BY",
    "RELATES_TO",
    "MENTIONS",
    "USES",
    "DEPENDS_ON",
    "PART_OF",
    "MEMBER_OF",
    "MANAGES",
    "LOCATED_IN",
    "CREATED",
    "PREFERS",
    "FIXED",
    "BLOCKS",
]

#: Verb phrase (lower-case, filler words removed) → (relation type, inverse?). ``inverse`` means the
#: sentence order is target-then-source ("A causes B" ⇒ B CAUSED_BY A).
_PHRASES: dict[str, tuple[str, bool]] = {}
#: the first word of every phrase: a window of tokens that starts elsewhere cannot be a phrase
_PHRASE_FIRST: set[str] = set()


def register_relation_phrase(phrase: str, rel_type: str, *, inverse: bool = False) -> None:
    """Teach the offline extractor a verb phrase (extends the vocabulary)."""
    key = " ".join(phrase.lower().split())
    if not key:
        raise ValueError("a relation phrase needs at least one word")
    rel = rel_type.strip().upper()
    if not re.fullmatch(r"[A-Z][A-Z0-9_]{0,39}", rel):
        raise ValueError(f"relation type must be UPPER_SNAKE_CASE, got {rel_type!r}")
    _PHRASES[key] = (rel, inverse)
    _PHRASE_FIRST.add(key.split(" ", 1)[0])
    if rel not in RELATION_TYPES:
        RELATION_TYPES.append(rel)


def _register_builtin() -> None:
    table: dict[str, list[str]] = {
        "WORKS_ON": [
            "works on",
            "work on",
            "worked on",
            "working on",
            "works with",
            "worked with",
            "is working on",
            "builds",
            "built",
            "is building",
            "develops",
            "developed",
            "maintains",
            "maintained",
            "contributes to",
            "contributed to",
            "owns",
        ],
        "CAUSED_BY": [
            "caused by",
            "due to",
            "because of",
            "results from",
            "resulted from",
            "triggered by",
            "comes from",
            "came from",
            "stems from",
            "originates from",
        ],
        "MENTIONS": [
            "mentioned",
            "mentions",
            "reported",
            "reports",
            "found",
            "noticed",
            "discussed",
            "raised",
            "flagged",
            "investigated",
            "is investigating",
            "investigates",
            "debugged",
            "is debugging",
            "complained about",
            "talked about",
            "asked about",
        ],
        "USES": [
            "use",
            "uses",
            "used",
            "using",
            "runs on",
            "ran on",
            "built with",
            "written in",
            "powered by",
            "stores data in",
            "migrated to",
        ],
        "DEPENDS_ON": ["depends on", "depended on", "requires", "relies on", "needs"],
        "PART_OF": ["part of", "is part of", "belongs to", "component of", "module of"],
        "MEMBER_OF": [
            "works at",
            "worked at",
            "works for",
            "worked for",
            "joined",
            "member of",
            "is member of",
            "employed by",
            "is on",
        ],
        "MANAGES": ["manages", "managed", "leads", "led", "heads", "is lead of", "is manager of"],
        "LOCATED_IN": ["based in", "is based in", "located in", "lives in", "lived in", "moved to", "is in"],
        "CREATED": ["created", "wrote", "founded", "designed", "invented", "authored"],
        "PREFERS": ["prefers", "preferred", "likes", "loves", "wants"],
        "FIXED": ["fixed", "fixes", "resolved", "patched", "solved"],
        "BLOCKS": ["blocks", "blocked", "is blocking"],
        "RELATES_TO": [
            "relates to",
            "related to",
            "is related to",
            "linked to",
            "is linked to",
            "affects",
            "affected",
            "impacts",
            "impacted",
            "associated with",
            "connected to",
        ],
    }
    for rel, phrases in table.items():
        for phrase in phrases:
            register_relation_phrase(phrase, rel)
    for phrase in ("causes", "caused", "led to", "leads to", "triggered", "triggers", "resulted in", "results in"):
        register_relation_phrase(phrase, "CAUSED_BY", inverse=True)
    for phrase in ("is managed by", "managed by", "led by", "is led by"):
        register_relation_phrase(phrase, "MANAGES", inverse=True)
    for phrase in ("is used by", "used by"):
        register_relation_phrase(phrase, "USES", inverse=True)
    for phrase in (
        "created by",
        "written by",
        "founded by",
        "designed by",
        "fixed by",
        "reported by",
        "found by",
        "maintained by",
        "built by",
        "owned by",
    ):
        rel = {
            "created by": "CREATED",
            "written by": "CREATED",
            "founded by": "CREATED",
            "designed by": "CREATED",
            "fixed by": "FIXED",
            "reported by": "MENTIONS",
            "found by": "MENTIONS",
            "maintained by": "WORKS_ON",
            "built by": "WORKS_ON",
            "owned by": "WORKS_ON",
        }[phrase]
        register_relation_phrase(phrase, rel, inverse=True)


_register_builtin()

# ------------------------------------------------------------------------------------ text helpers


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FILLER = _words(
    "a an the is are was were be been being has have had also currently now still recently really just "
    "our their his her its my your new old actively mainly mostly often always"
)
#: Capitalised words that are not names when they start a sentence (or stand alone).
_STOP_CAPS = _words(
    """a an the this that these those there here it its i we you he she they me us them my our your his her
    their and or but if when while after before because so then yes no not all any some every each
    yesterday today tomorrow tonight now later also please note remember always never maybe perhaps
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december users user customer customers team everyone someone nobody
    what who why how where which ok okay thanks hello hi dear use deploy run check make add fix set get
    update remove delete keep try let ask tell find see call send create move start stop write read
    last next first new our one two three several many most more less in on at for to from by with of
    as about over under during until since via per"""
)
_NP_STOP = (
    _STOP_CAPS
    | _FILLER
    | _words(
        "and or but with without into onto upon which who whom whose that than very much some any no not "
        "there is are was were will would should could can may might must do does did done"
    )
)
_CONNECTORS = frozenset({"of", "de", "&"})
_ORG_SUFFIX = frozenset(
    {
        "inc",
        "corp",
        "corporation",
        "ltd",
        "llc",
        "gmbh",
        "labs",
        "lab",
        "team",
        "group",
        "university",
        "foundation",
        "company",
        "co",
        "bank",
        "agency",
        "institute",
        "department",
        "dept",
    }
)
_TECH = _words(
    """python rust java javascript typescript go golang postgresql postgres mysql sqlite duckdb redis kafka
    kubernetes k8s docker linux windows macos react vue angular django flask fastapi spark hadoop aws gcp
    azure s3 lambda terraform graphql grpc nginx elasticsearch mongodb pytorch tensorflow numpy pandas git
    github gitlab jira slack openai"""
)
_PERSON_VERBS = _words(
    """works worked working said says prefers preferred likes liked loves reported reports found noticed
    fixed leads led manages managed joined wants wanted asked mentioned owns wrote lives lived thinks
    thought prefer is was will has had debugged investigated discussed complained talked flagged raised
    maintains created designed founded"""
)
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "prof", "sir", "madam"})

_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_TOKEN_RE = re.compile("[A-Za-z0-9][A-Za-z0-9+#_'\u2019.-]*[A-Za-z0-9+#]|[A-Za-z0-9]|&")
_QUOTED_RE = re.compile("\"([^\"\n]{2,80})\"|\u201c([^\u201d\n]{2,80})\u201d|(?<![\\w])'([^'\n]{2,80})'(?![\\w])")
_SPACE_RE = re.compile(r"\s+")
_POSSESSIVE = ("'s", "\u2019s")
_EDGE_PUNCT = " \t\"'\u201c\u201d\u2018\u2019`.,;:!?()[]{}<>"


@lru_cache(maxsize=262_144)
def normalize_name(name: str) -> str:
    """The de-duplication key of an entity name: NFKC, case-folded, trimmed, single-spaced."""
    text = unicodedata.normalize("NFKC", name).casefold().strip(_EDGE_PUNCT)
    text = _SPACE_RE.sub(" ", text)
    if text.startswith("the "):
        text = text[4:]
    if text.endswith("'s") or text.endswith("\u2019s"):
        text = text[:-2]
    return text.strip(_EDGE_PUNCT)


def _norm_tokens(key: str) -> str:
    """``normalize_name`` of lowercased tokens joined by single spaces, without its general work
    when ``key`` is ASCII: a token starts with a letter, digit or ``&`` and ends with a letter,
    digit, ``+`` or ``#`` (``_TOKEN_RE``), so NFKC, case folding and the edge strip change nothing."""
    if not key.isascii() or key.endswith("'s"):
        return normalize_name(key)
    return key[4:] if key.startswith("the ") else key


def _ngrams(lows: Sequence[str], ascii_text: bool, max_words: int) -> list[list[str]]:
    """``grams[n - 1][i]``: ``_norm_tokens`` of the ``n`` tokens from ``i`` (n = 1..max_words).

    When the sentence is ASCII and no token ends in ``'s`` (``_tokens`` strips one; "x's's" keeps
    the other), a key is the joined tokens less a leading ``"the "``: built with list comprehensions,
    without a call per n-gram."""
    grams = [list(lows)]
    for n in range(2, max_words + 1):
        if len(grams[-1]) < 2:
            break
        grams.append([f"{a} {b}" for a, b in zip(grams[-1], lows[n - 1 :], strict=False)])
    if not ascii_text or any(w.endswith("'s") for w in lows):
        return [[_norm_tokens(k) for k in g] for g in grams]
    if "the" in lows:
        return [[k[4:] if k.startswith("the ") else k for k in g] for g in grams]
    return grams


#: Longest run of tokens looked up in the tenant's dictionary.
DICTIONARY_WORDS = 4


@lru_cache(maxsize=4096)
def _sentence_keys(sentence: str) -> Sequence[Sequence[str]]:
    """``_ngrams`` of a sentence up to ``DICTIONARY_WORDS`` (cached like ``_tokens``: the batch's
    dictionary lookup and the extraction of each memory both need them; never modified)."""
    return _ngrams([t.low for t in _tokens(sentence)], sentence.isascii(), DICTIONARY_WORDS)


class _Tok(NamedTuple):  # a tuple: the cheapest immutable record to create, one per token
    text: str
    start: int
    end: int
    low: str  # text.lower()


@dataclass
class _Span:
    start: int  # token index
    end: int  # exclusive token index
    name: str
    type: str
    strong: bool  # capitalised/quoted/known (vs. a noun phrase around a verb)


@lru_cache(maxsize=4096)
def _tokens(sentence: str) -> tuple[_Tok, ...]:
    """The sentence's tokens (cached: a write tokenises each sentence for the dictionary lookup, the
    spans and the relations; tokens are immutable)."""
    out: list[_Tok] = []
    for m in _TOKEN_RE.finditer(sentence):
        text = m.group(0)
        if text.endswith(_POSSESSIVE):  # "Acme's" → "Acme" ("U.S.'s" → "U.S"); a token never ends in "."
            for suffix in _POSSESSIVE:
                if text.endswith(suffix) and len(text) > 2:
                    text = text[:-2]
            text = text.rstrip(".")
            if not text:
                continue
        start = m.start()
        out.append(_Tok(text, start, start + len(text), text.lower()))
    return tuple(out)


def _is_name_token(tok: str) -> bool:
    if not tok[0].isalnum():
        return False
    if tok[0].isupper():
        return True
    return any(map(str.isupper, tok[1:]))  # camelCase / iPhone / gRPC


def _type_of(words: list[str], next_low: str | None, prev_low: str | None) -> str:
    lows = [w.lower() for w in words]
    if lows[0] == "project" or lows[-1] == "project":
        return "PROJECT"
    if lows[-1] in _ORG_SUFFIX:
        return "ORGANIZATION"
    if len(words) == 1 and (lows[0] in _TECH or (any(c.isupper() for c in words[0][1:]) and not words[0].isupper())):
        return "TECHNOLOGY"
    if len(words) == 1 and lows[0] in _TECH:
        return "TECHNOLOGY"
    if prev_low in _TITLES:
        return "PERSON"
    plain = all(w[0].isupper() and w[1:].islower() and w.isalpha() for w in words)
    if plain and len(words) <= 3 and next_low in _PERSON_VERBS:
        return "PERSON"
    if plain and len(words) in (2, 3) and not any(w in _TECH for w in lows):
        return "PERSON"
    return "ENTITY"


class RuleBasedExtractor:
    """Offline, deterministic extractor (see the module docstring for what it recognises)."""

    name = "rules"

    def __init__(self, *, max_entities: int = 32, noun_phrases: bool = True) -> None:
        self.max_entities = max_entities
        self.noun_phrases = noun_phrases

    # -- public ------------------------------------------------------------------------------
    def extract(self, text: str, known: Mapping[str, KnownEntity] | None = None) -> ExtractionResult:
        known = known or {}
        entities: dict[str, ExtractedEntity] = {}
        relations: list[ExtractedRelation] = []
        for sentence in _SENTENCE_RE.split(text):
            if not sentence.strip():
                continue
            spans = [sp for sp in self._spans(sentence, known) if len(sp.name) <= MAX_NAME_CHARS]
            for span in spans:
                norm = normalize_name(span.name)
                if not norm or norm in _STOP_CAPS:
                    continue
                if norm not in entities and len(entities) < self.max_entities:
                    # model_construct: the spans already hold what validation checks (a non-empty
                    # name of at most MAX_NAME_CHARS, a type of the vocabulary)
                    entities[norm] = ExtractedEntity.model_construct(name=span.name, type=span.type)
            relations.extend(self._relations(sentence, spans))
        return ExtractionResult.model_construct(entities=list(entities.values()), relations=relations).cleaned()

    # -- spans -------------------------------------------------------------------------------
    def _spans(self, sentence: str, known: Mapping[str, KnownEntity]) -> list[_Span]:
        toks = _tokens(sentence)
        if not toks:
            return []
        spans: list[_Span] = []
        taken = [False] * len(toks)

        def claim(start: int, end: int, name: str, typ: str, strong: bool = True) -> None:
            if start >= end or any(taken[start:end]):
                return
            for i in range(start, end):
                taken[i] = True
            spans.append(_Span(start, end, name, typ, strong))

        # 1. quoted terms
        for m in _QUOTED_RE.finditer(sentence):
            inner = next(g for g in m.groups() if g is not None).strip()
            if not inner or len(inner.split()) > 6:
                continue
            idx = [i for i, t in enumerate(toks) if t.start >= m.start() and t.end <= m.end()]
            if idx:
                kn = known.get(normalize_name(inner))
                claim(idx[0], idx[-1] + 1, kn.name if kn else inner, kn.type if kn else "CONCEPT")
        # 2. the tenant's dictionary (longest match first, then leftmost)
        if known:
            grams = _sentence_keys(sentence)
            for n in range(len(grams), 0, -1):
                for i, key in enumerate(grams[n - 1]):
                    kn = known.get(key)
                    if kn is not None:
                        claim(i, i + n, kn.name, kn.type)
        # 3. capitalised names
        i = 0
        while i < len(toks):
            if taken[i] or not _is_name_token(toks[i].text):
                i += 1
                continue
            j = i + 1
            while j < len(toks) and not taken[j]:
                t = toks[j].text
                gap = sentence[toks[j - 1].end : toks[j].start]
                if gap.strip(" -") or "," in gap:
                    break
                if _is_name_token(t) or (t.isdigit() and len(t) <= 4) or (len(t) == 1 and t.isupper()):
                    j += 1
                elif (
                    t.lower() in _CONNECTORS
                    and j + 1 < len(toks)
                    and not taken[j + 1]
                    and _is_name_token(toks[j + 1].text)
                    and toks[j + 1].text.lower() not in _STOP_CAPS
                ):
                    j += 2
                else:
                    break
            start = i
            # drop leading stop-capitals ("The", "Yesterday", "We", a sentence-initial verb)
            while start < j and toks[start].low in _STOP_CAPS:
                start += 1
            if start < j:
                words = [t.text for t in toks[start:j]]
                name = sentence[toks[start].start : toks[j - 1].end]
                norm = normalize_name(name)
                kn = known.get(norm)
                nxt = toks[j].low if j < len(toks) else None
                prev = toks[start - 1].low if start > 0 else None
                if kn is not None:
                    claim(start, j, kn.name, kn.type)
                elif not (len(words) == 1 and words[0].isupper() and len(words[0]) == 1):
                    claim(start, j, name, _type_of(words, nxt, prev))
            i = j
        # 4. noun phrases next to relation verbs ("caused by a memory leak")
        if self.noun_phrases:
            self._noun_phrases(toks, taken, claim)
        spans.sort(key=lambda s: s.start)
        return spans

    def _noun_phrases(self, toks: Sequence[_Tok], taken: list[bool], claim: _ClaimFn) -> None:
        lows = [t.low for t in toks]
        n = len(toks)
        filler = [w in _FILLER for w in lows]
        for i in range(n):
            # A window's phrase is its words less the fillers, so it starts with the first non-filler
            # word from i: no phrase starts here unless that word begins one (and it exists).
            first = i
            while first < n and filler[first]:
                first += 1
            if first == n or lows[first] not in _PHRASE_FIRST:
                continue
            for width in (4, 3, 2, 1):
                if i + width > n or first >= i + width:
                    continue
                window = lows[i : i + width]
                phrase = " ".join(
                    [w for w in window if w not in _FILLER] if first > i or any(filler[i : i + width]) else window
                )
                if phrase not in _PHRASES or any(taken[i : i + width]):
                    continue
                # right side
                j = i + width
                while j < n and lows[j] in _FILLER and not taken[j]:
                    j += 1
                k = j
                while k < n and k - j < 3 and not taken[k] and self._np_word(toks[k].text):
                    k += 1
                if k > j and (k == n or taken[k] or not self._np_word(toks[k].text)):
                    claim(j, k, " ".join(t.text for t in toks[j:k]).lower(), "CONCEPT", False)
                # left side
                e = i
                while e > 0 and lows[e - 1] in _FILLER and not taken[e - 1]:
                    e -= 1
                s = e
                while s > 0 and e - s < 3 and not taken[s - 1] and self._np_word(toks[s - 1].text):
                    s -= 1
                if s < e:
                    claim(s, e, " ".join(t.text for t in toks[s:e]).lower(), "CONCEPT", False)
                break

    @staticmethod
    def _np_word(word: str) -> bool:
        low = word.lower()
        return word.isalpha() and word.islower() and len(low) >= 2 and low not in _NP_STOP and low not in _PHRASES

    # -- relations ---------------------------------------------------------------------------
    def _relations(self, sentence: str, spans: list[_Span]) -> list[ExtractedRelation]:
        if len(spans) < 2:
            return []
        toks = _tokens(sentence)
        out: list[ExtractedRelation] = []
        for a, b in itertools.pairwise(spans):
            if a.end > len(toks) or b.start > len(toks):
                continue
            between = sentence[toks[a.end - 1].end : toks[b.start].start]
            match = _match_phrase(between)
            if match is None:
                continue
            rel, inverse = match
            src, tgt = (b, a) if inverse else (a, b)
            out.append(ExtractedRelation.model_construct(source=src.name, target=tgt.name, type=rel))
        # "A and B work on C": both subjects
        for x, a, b in zip(spans, spans[1:], spans[2:], strict=False):
            gap = sentence[toks[x.end - 1].end : toks[a.start].start].strip().lower()
            if gap in ("and", ",", "&"):
                between = sentence[toks[a.end - 1].end : toks[b.start].start]
                match = _match_phrase(between)
                if match is not None and not match[1]:
                    out.append(ExtractedRelation.model_construct(source=x.name, target=b.name, type=match[0]))
        return out


class _ClaimFn(Protocol):
    def __call__(self, start: int, end: int, name: str, typ: str, strong: bool = True) -> None: ...


_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
_CLAUSE_BREAKS = (" but ", " while ", " although ", " however ", ";", " whereas ", " unless ")


def _match_phrase(between: str) -> tuple[str, bool] | None:
    text = " " + between.lower().strip() + " "
    if any(b in text for b in _CLAUSE_BREAKS) or "." in text:
        return None
    words = [w for w in _WORD_RE.findall(text) if w not in _FILLER]
    if not words or len(words) > 8:
        return None
    # exact phrase, then the phrase closest to the object (suffix), e.g. "Alice, the lead, works on X"
    for n in range(min(4, len(words)), 0, -1):
        hit = _PHRASES.get(" ".join(words[-n:]))
        if hit is not None:
            if n < len(words) and "," not in text and len(words) - n > 2:
                return None
            return hit
    return None


# ------------------------------------------------------------------------------------ LLM adapter


class LLMBackedExtractor:
    """Uses an :class:`LLMGraphExtractor`; falls back to the offline rules when the LLM fails (counted
    in ``stratamem_llm_fallbacks_total{task="graph_extraction"}``)."""

    name = "llm"

    def __init__(self, llm: LLMGraphExtractor, fallback: GraphExtractor | None = None) -> None:
        self.llm = llm
        self.fallback: GraphExtractor = fallback or RuleBasedExtractor()
        self.failures = 0

    def extract(self, text: str, known: Mapping[str, KnownEntity] | None = None) -> ExtractionResult:
        names = [k.name for k in (known or {}).values()]
        try:
            reply = self.llm.extract_graph(text, known_entities=names, relation_types=list(RELATION_TYPES))
            if isinstance(reply, ExtractionResult):
                result = reply
            else:  # the LLM client's own model (llm.base.GraphExtraction) or a plain mapping
                data = reply.model_dump() if isinstance(reply, BaseModel) else dict(reply)
                result = ExtractionResult.model_validate(data)
            return result.cleaned()
        except Exception as exc:  # an LLM outage must not block writes: fall back to the rules
            self.failures += 1
            record_fallback("graph_extraction", exc)
            log.warning("LLM graph extraction failed (%s); using the offline extractor", type(exc).__name__)
            return self.fallback.extract(text, known)


class ConfiguredExtractor:
    """The store's default extractor: the configured LLM (``STRATAMEM_LLM_URL``, or
    ``mem.hygiene.configure(llm=...)``) when it offers ``extract_graph``, the offline rules otherwise.

    ``llm`` returns the current LLM client on each call, so configuring another LLM later takes effect
    on the next write.
    """

    name = "configured"

    def __init__(self, llm: Callable[[], object], rules: GraphExtractor | None = None) -> None:
        self._llm = llm
        self.rules: GraphExtractor = rules or RuleBasedExtractor()
        self._backed: LLMBackedExtractor | None = None
        #: the last client seen that has no ``extract_graph`` (the rule engine): skips the protocol check
        self._plain: object | None = None

    def extract(self, text: str, known: Mapping[str, KnownEntity] | None = None) -> ExtractionResult:
        try:
            llm = self._llm()
        except Exception as exc:  # a misconfigured LLM (URL without model …) must not block writes
            record_fallback("graph_extraction", exc)
            return self.rules.extract(text, known)
        if llm is self._plain:
            return self.rules.extract(text, known)
        backed = self._backed
        if backed is None or backed.llm is not llm:
            if not isinstance(llm, LLMGraphExtractor):  # the rule engine: no LLM extraction
                self._plain = llm
                return self.rules.extract(text, known)
            backed = self._backed = LLMBackedExtractor(llm, self.rules)
        return backed.extract(text, known)


def candidate_keys(text: str, max_words: int = DICTIONARY_WORDS) -> list[str]:
    """Normalised 1..``max_words``-grams of ``text``: the keys to look up in the tenant dictionary."""
    out: set[str] = set()
    for sentence in _SENTENCE_RE.split(text):
        lows = [t.low for t in _tokens(sentence)]
        grams: Sequence[Sequence[str]] = (
            _sentence_keys(sentence) if max_words == DICTIONARY_WORDS else _ngrams(lows, sentence.isascii(), max_words)
        )
        out.update(key for word, key in zip(lows, grams[0], strict=True) if not (word in _NP_STOP or len(word) < 2))
        for longer in grams[1:]:
            out.update(longer)
    out.discard("")
    return sorted(out)
