"""Engine configuration: every default in one place, overridable per ``Memory.open``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .retry import RetryConfig


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Minimum score (0..1) of a search result when the caller gives no threshold.
    default_threshold: float = Field(0.7, ge=0.0, le=1.0)
    #: The default threshold of a personal layer that a question is asked of with the person left out
    #: (a scope that rarely names the user, ``user_voice``): such a question shares no subject with
    #: the memories, so its answers score lower. Chosen on the dev scenarios of
    #: ``benchmarks/fact_ranking.py``'s third table (0.60-0.64 gave the same, 0.58 let unanswerable
    #: questions through; docs/ranking.md). None = ``default_threshold``.
    unnamed_threshold: float | None = Field(0.62, ge=0.0, le=1.0)
    #: When the caller gives no threshold, results whose relevance to the query, measured from the
    #: centroid of the scope's memories, is less than this many standard deviations above the scope's
    #: background (two unrelated memories of the scope) are dropped too, unless they hold most of the
    #: query's words (``retrieval/centering.py``, ``search.py``):
    #: a question with no stored answer then returns nothing. None = off. Chosen on the dev scenarios
    #: of ``benchmarks/fact_ranking.py --floor F`` (docs/ranking.md).
    relevance_floor: float | None = Field(3.0, ge=-10.0, le=10.0)
    #: When the caller gives no threshold, a question that asks for a kind of value (an amount of
    #: money, an age, a year, a clock time, a phone number, an email address, a code, the number of
    #: a room or a seat, a surname)
    #: returns only memories that state a value of that kind (``retrieval/asked_values.py``): "what's
    #: Nadia's salary?" does not return her job. False = off.
    value_check: bool = True
    #: A question in the user's voice ("where do I live?") or naming the user is asked of the personal
    #: layers (agent, user, session) in the words their memories use for the user: "the user" or the
    #: name of a ``user_id`` that is one, whichever moves it towards the scope, or without the person
    #: where few memories name the user (``retrieval/voice.py``). False = every layer gets the
    #: question as asked.
    user_voice: bool = True
    #: An added memory that states a change ("moved to Berlin", "switched from X to Y") supersedes the
    #: older memory of its scope about the same attribute (``supersession/``).
    detect_supersession: bool = True
    #: Results at least this similar to a higher-precedence result are dropped.
    dedup_threshold: float = Field(0.95, ge=0.0, le=1.0)
    default_search_limit: int = Field(10, ge=1)
    max_search_limit: int = Field(100, ge=1)
    default_list_limit: int = Field(50, ge=1)
    max_list_limit: int = Field(100, ge=1)
    #: Longest content in characters; None = the provider's own limit.
    max_content_length: int | None = Field(None, ge=1)
    #: Largest metadata object, in bytes of JSON.
    max_metadata_bytes: int = Field(64 * 1024, ge=1024)
    #: Deepest nesting of metadata objects/arrays (the metadata object itself is level 1).
    max_metadata_depth: int = Field(32, ge=1, le=256)
    #: Items per bulk_add / bulk_delete call through the SDK (REST caps lower).
    max_bulk_items: int = Field(1000, ge=1)
    #: Weight of lexical (BM25) matching fused into search scores; 0 = dense similarity only.
    #: ``score = dense + w · lex · (1 - dense)`` (see docs/concepts.md "Scores"); tuned on LoCoMo.
    hybrid_weight: float = Field(1.0, ge=0.0, le=1.0)
    #: Weight of a positioned memory's neighbouring turns in its score (``retrieval/context.py``); 0 = off
    #: (with the lexical context and the speaker step of the same module).
    context_weight: float = Field(0.3, ge=0.0, le=1.0)
    #: Lost by a turn of another speaker than the one a query names (``retrieval/context.py`` step 3,
    #: turns written "Speaker: text"); 0 = off. Chosen on the dev LoCoMo conversations (docs/ranking.md).
    speaker_penalty: float = Field(0.05, ge=0.0, le=1.0)
    #: Lost by a memory outside the date a query names ("in January 2022"; ``retrieval/dates.py``,
    #: ``retrieval/context.py`` step 4); 0 = off. Chosen on the dev LoCoMo conversations.
    date_penalty: float = Field(0.1, ge=0.0, le=1.0)
    #: Query-time boosts, off by default (0): a hit's score is multiplied by
    #: ``1 - recency_boost · (1 - 0.5 ** (age_days / recency_half_life_days))`` and by
    #: ``1 - importance_boost · (1 - importance)``; the threshold applies to the relevance before
    #: them (docs/concepts.md "Scores", ``retrieval/boosts.py``). Measured by ``benchmarks/boosts.py``.
    recency_boost: float = Field(0.0, ge=0.0, le=1.0)
    importance_boost: float = Field(0.0, ge=0.0, le=1.0)
    recency_half_life_days: float = Field(30.0, gt=0.0)
    #: Embedded store: serve searches from the in-process index (exact numpy + BM25 while a
    #: tenant/layer/scope partition is small, HNSW above ``ann_threshold`` rows); False = SQL scan.
    search_index: bool = True
    #: Live rows of one partition above which its dense candidates come from an HNSW index (usearch).
    ann_threshold: int = Field(20_000, ge=1)
    #: Rows mirrored in process memory over all partitions; least recently searched evicted first.
    search_index_max_rows: int = Field(2_000_000, ge=1)
    #: Group commit: concurrent single adds of one tenant that arrive while another of its adds is
    #: being stored share one embedding call and one store transaction (``add_groups.py``); each
    #: caller still gets its own result or error. False = one transaction per add.
    group_adds: bool = True
    #: Threads for the concurrent per-layer search fan-out.
    search_workers: int = Field(8, ge=1)
    retry_max_attempts: int = Field(3, ge=1)
    retry_initial_delay: float = Field(0.05, ge=0.0)
    retry_max_delay: float = Field(30.0, ge=0.0)
    retry_multiplier: float = Field(2.0, ge=1.0)
    #: Knowledge graph (DuckDB store): extract entities on add/update for tenants without a setting.
    graph_enabled: bool = True
    #: Redis shared by every process using this store (None = off; ``Memory.open`` reads
    #: ``STRATAMEM_REDIS_URL`` unless this is set): the shared embedding cache and the memory_crud
    #: rate limiter. Unreachable Redis never fails an operation (see docs/postgres-redis.md "Redis").
    redis_url: str | None = None
    #: Prefix of every Redis key this store writes (``{prefix}:emb:…``, ``{prefix}:rl:…``).
    redis_prefix: str = Field("stratamem", min_length=1)
    #: Lifetime of a vector in the Redis embedding cache, seconds.
    embedding_cache_ttl_s: int = Field(86_400, ge=1)
    #: memory_crud calls per second per (tenant, principal), 0 = unlimited; and the burst.
    crud_rate_limit_per_second: float = Field(0.0, ge=0.0)
    crud_rate_limit_burst: int = Field(20, ge=1)
    #: memory_crud calls per second per tenant (all principals together), 0 = unlimited; and the burst.
    crud_tenant_rate_limit_per_second: float = Field(0.0, ge=0.0)
    crud_tenant_rate_limit_burst: int = Field(100, ge=1)

    @property
    def retry(self) -> RetryConfig:
        return RetryConfig(
            max_attempts=self.retry_max_attempts,
            initial_delay=self.retry_initial_delay,
            max_delay=self.retry_max_delay,
            multiplier=self.retry_multiplier,
        )
