"""The OpenAPI document of the server, worth generating clients from.

FastAPI builds the document from the routes and models; this module completes it once per app:

* every schema property and every parameter gets a description and an example, from one glossary
  keyed by the JSON name (``Schema.property`` entries win over plain ``property`` ones), unless the
  model already describes the field;
* the limits are the running server's: ``content`` ``maxLength`` is the store's content limit,
  ``query`` the embedder's query limit, ``limit`` the configured maxima, bulk ``maxItems`` the
  server's bulk cap (the request models accept more so that the store answers with its own coded
  error, e.g. 413 ``CONTENT_TOO_LONG``, instead of a generic validation error);
* layers are an enum wherever a layer name is taken.

A test checks that nothing is left without a description or an example, so a new field needs a
glossary entry (or a ``Field(description=…, examples=[…])``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.alias_generators import to_camel

from ..model import Layer

LAYERS = [layer.value for layer in Layer]
_ID = "3f2b8c1e-5d4a-4b7e-9c0f-1a2b3c4d5e6f"
_TIME = "2026-11-24T09:30:00Z"

#: JSON name → (description, example). ``Schema.name`` entries are specific to one schema.
FIELDS: dict[str, tuple[str, Any]] = {
    # identifiers (LayerIdentifiers, query parameters of GET /v1/memories)
    "agentId": ("Agent the memory belongs to (agent layer).", "support-bot"),
    "userId": ("End user the memory belongs to (user and session layers).", "alice"),
    "sessionId": ("Conversation session (session layer; needs userId).", "sess-42"),
    "projectId": ("Project the memory belongs to (project layer).", "backend"),
    "workspaceId": ("Another name for projectId (a workspace is the project layer).", "backend"),
    "teamId": ("Team the memory belongs to (team layer).", "platform"),
    "orgId": ("Organisation unit (org layer).", "engineering"),
    "companyId": ("Company (company layer).", "acme"),
    "objectType": ("Kind of object the memory is about (object layer; with objectId).", "ticket"),
    "objectId": ("Id of the object the memory is about (object layer; with objectType).", "T-1001"),
    # memories
    "id": ("Memory id (UUID).", _ID),
    "tenantId": ("Tenant. Requests may omit it: the tenant always comes from the credential.", "acme"),
    "content": ("The memory text.", "User prefers dark mode"),
    "layer": ("Layer of the memory: agent, user, session, project, team, org, company or object.", "user"),
    "layers": ("Layers to search (default: every layer the identifiers reach).", ["user", "project"]),
    "identifiers": ("Scope identifiers; which ones are required depends on the layer.", {"userId": "alice"}),
    "metadata": (
        "Free JSON object stored with the memory; `tags` (list of strings) is indexed.",
        {"tags": ["ui"], "source": "chat"},
    ),
    "tier": ("Optional storage tier label, kept as given.", "hot"),
    "expiresAt": ("When the memory expires (RFC 3339); null = never.", "2027-01-01T00:00:00Z"),
    "importance": ("Importance 0..1 (grows with use; boosts search when importanceBoost is set).", 0.5),
    "createdAt": ("Creation time (RFC 3339, UTC).", _TIME),
    "updatedAt": ("Last update time (RFC 3339, UTC).", _TIME),
    "version": ("Version number, incremented by every update.", 2),
    "etag": (
        "Entity tag of this version; send it back as `If-Match` for optimistic concurrency.",
        "c261a1ab8fd49856ed8f",
    ),
    "accessCount": ("How often searches returned the memory.", 3),
    "lastAccessedAt": ("When a search last returned the memory.", _TIME),
    "status": (
        "Memory status: active, archived, deleted (soft-deleted) or superseded (replaced by a newer "
        "memory, kept as history).",
        "active",
    ),
    "deletedAt": ("When the memory was soft-deleted; null if it is not.", None),
    "provenance": ("Where the memory came from (agent, source, promotion, compaction).", {"source": "chat"}),
    "contentHash": ("SHA-256 of the content, for deduplication.", "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e"),
    "embedding": ("The stored vector; null unless explicitly requested.", None),
    "memory": ("The memory.", {"id": _ID, "content": "User prefers dark mode", "layer": "user"}),
    "memories": ("One page of memories, oldest first.", []),
    "nextCursor": ("Cursor of the next page (pass as `cursor`); null on the last page.", "eyJvIjogNTB9"),
    "totalCount": ("Matches in total, across pages.", 1),
    "embeddingGenerated": ("Whether a new embedding was computed (false: an identical one was reused).", True),
    "embeddingRegenerated": ("Whether the content changed and was embedded again.", True),
    "success": ("Whether a memory was deleted (false: there was none; deletes are idempotent).", True),
    "deleted": ("How many memories were deleted.", 2),
    "failed": ("Ids that were refused (malformed); `failures` gives the code and reason of each.", []),
    "failures": ("Code and reason of each refused id.", []),
    "notFound": ("Well-formed ids with nothing to delete (deletes are idempotent: not a failure).", []),
    "BulkDeleteFailure.id": ("The refused id.", ""),
    "BulkDeleteFailure.code": ("Error code of the refusal.", "INVALID_PARAMS"),
    "BulkDeleteFailure.reason": ("Why the id was refused.", "an id must be 1-256 characters"),
    "results": ("The results, best first.", []),
    "items": ("The memories to create (at most the server's bulk limit).", []),
    "ids": ("Memory ids to delete (at most the server's bulk limit).", [_ID]),
    "ifMatch": ("Expected etag (same as the `If-Match` header); a mismatch is 409 CONFLICT.", "c261a1ab8fd49856ed8f"),
    # search
    "query": ("Natural-language query.", "what color theme does the user like"),
    "limit": ("Maximum number of results.", 10),
    "threshold": ("Minimum relevance 0..1 (default 0.7).", 0.5),
    "filter": ("Metadata filter: tags, sourceType, hasKnowledgePointer, custom equality.", {"tags": ["ui"]}),
    "hybridWeight": ("Weight 0..1 of lexical (BM25) matching fused into the score; default from the server.", 1.0),
    "recencyBoost": ("0..1: discount older memories (default off).", 0.2),
    "includeSuperseded": ("Also return memories a newer one replaced (history).", False),
    "asOf": ("Return the memories that were current at this time (history).", "2026-06-01T00:00:00Z"),
    "order": (
        "Order of the results: `relevance` (search only, the default there: best match first), "
        "`newest` or `oldest` (by creation time; list defaults to `oldest`). A search picks the best "
        "matches first and then shows them in this order.",
        "newest",
    ),
    "since": (
        "Only memories whose `timeField` time is at or after this instant (RFC 3339); on the health "
        "report: only events since this time.",
        "2026-11-01T00:00:00Z",
    ),
    "until": ("Only memories whose `timeField` time is before this instant (RFC 3339).", "2026-12-01T00:00:00Z"),
    "timeField": ("Which time `since`/`until` apply to: `created` (default) or `updated`.", "created"),
    "tagsMatch": ("How the filter's tags match: `any` (default: at least one tag) or `all` (every tag).", "all"),
    "expiresBefore": (
        "Only memories with an expiry (`expiresAt`) before this instant (RFC 3339), e.g. now + 7 days "
        "for the ones expiring within a week; memories that never expire are left out, and expired "
        "ones are never listed.",
        "2026-12-08T00:00:00Z",
    ),
    "includeNarrower": (
        "Also read the narrower scopes of the same principal whose identifiers are given: "
        "`user` adds `session` (with sessionId) and `agent` (with agentId).",
        True,
    ),
    "supersedes": (
        "Ids of older memories this one replaces; they become `superseded` (kept as history) in the same "
        "transaction. An id that names no current memory of the tenant fails the add (`MEMORY_NOT_FOUND`) "
        "and nothing is stored.",
        [],
    ),
    "superseded": ("Ids of older memories this one made out of date (now `superseded`).", []),
    "importanceBoost": ("0..1: discount less important memories (default off).", 0.5),
    "score": ("Relevance 0..1 after boosts.", 0.83),
    "expandedFrom": ("Id of the result this one was reached from through the knowledge graph.", None),
    "graphPath": ("Reasoning path through the knowledge graph, for expanded results.", None),
    "searchedLayers": ("Layers that were searched, most specific first.", ["user", "project"]),
    # metadata filter
    "tags": ("Memories with any of these tags.", ["ui"]),
    "sourceType": ("Memories whose metadata.sourceType is this value.", "chat"),
    "hasKnowledgePointer": ("Memories with (true) or without (false) metadata.knowledgePointer.", True),
    "custom": ("Exact-match conditions on other metadata keys.", {"priority": 2}),
    # provenance
    "Provenance.agentId": ("Agent that wrote the memory.", "support-bot"),
    "source": ("Where the memory came from (free text).", "chat"),
    "confidence": ("Writer's confidence 0..1.", 0.9),
    "promotedFromId": ("Id of the memory this one was promoted from.", None),
    "compactedFromIds": ("Ids of the memories this one summarises.", None),
    "createdInSessionId": ("Session in which the memory was written.", "sess-42"),
    "conflictOf": ("Id of a memory this one contradicts.", None),
    "conflict": ("Whether the memory is flagged as contradicting another.", False),
    "threadId": ("Conversation or session the memory was said in (with `position`).", "session-3"),
    "position": ("Order of the turn in its thread; search weighs neighbouring turns and their speakers.", 7),
    "occurredAt": (
        "When what the memory records was said or happened, if not when it was written; search ranks the "
        "memories of a date a question names higher by it (else by `createdAt`).",
        "2022-05-01T13:56:00Z",
    ),
    "supersededBy": ("Id of the newer memory that replaced this one (status `superseded`).", None),
    "validTo": ("When this memory stopped being current (it was superseded).", None),
    # health
    "HealthCheckResult.status": ("healthy, degraded or unhealthy.", "healthy"),
    "ComponentHealth.status": ("healthy, degraded or unhealthy.", "healthy"),
    "latencyMs": ("Time the check took, in milliseconds.", 1.2),
    "components": ("Health of each component (storage, embedder, …).", {"storage": {"status": "healthy"}}),
    "message": ("Human-readable explanation.", "ok"),
    # errors
    "code": ("Stable error code.", "MEMORY_NOT_FOUND"),
    "ErrorBody.message": ("Human-readable explanation.", "no memory with id '3f2b8c1e'"),
    "operation": ("Operation that failed.", "get"),
    "details": ("Structured details (field, limits, ids).", {"id": _ID}),
    "retryable": ("Whether the same request may succeed later.", False),
    # API keys
    "keyId": ("Public id of the key (the part after `smk_`).", "9f86d081884c7d65"),
    "name": ("Label of the key.", "alice-app"),
    "role": ("reader, writer or admin.", "writer"),
    "roles": ("Roles of the key.", ["writer"]),
    "revokedAt": ("When the key was revoked; null while it is active.", None),
    "key": ("The API key itself: returned once, stored only as a hash.", "smk_9f86d081884c7d65_3q2-7wE…"),
    "CreateKeyRequest.identifiers": ("Identifiers bound to the key (its requests act for them).", {"userId": "alice"}),
    # write gate, hygiene
    "text": ("A message or text to act on.", "I prefer window seats"),
    "intent": ("none: the gate decides; remember: store explicitly; forget: delete what matches.", "none"),
    "recentMessages": ("Earlier messages of the conversation, for context.", ["hi", "I fly a lot"]),
    "action": ("What the gate did.", "created"),
    "reason": ("Why (for ignored or blocked writes).", "duplicate of an existing memory"),
    "count": ("How many memories were affected.", 1),
    "category": ("Category of the memory: preference, fact, context or instruction.", "preference"),
    "memoryIds": ("Memory ids.", [_ID]),
    "generatedAt": ("When the report was made.", _TIME),
    "totalMemories": ("Live memories of the tenant.", 120),
    "memoriesByCategory": ("Live memories per category.", {"preference": 40, "fact": 80}),
    "memoriesBySource": ("Live memories per source (explicit, inferred, …).", {"explicit": 20}),
    "averageAgeDays": ("Mean age of the live memories, in days.", 12.5),
    "duplicateRate": ("Share of writes found to duplicate an existing memory.", 0.05),
    "writeRejectionRate": ("Share of writes refused by the gate or the policy.", 0.02),
    "searchHitRate": ("Share of searches that returned at least one result.", 0.9),
    "events": ("Counts of hygiene events by kind.", {"created": 100}),
    # the search explanation's relevance floor (POST /v1/memories/search/explain, docs/ranking.md)
    "FloorParts.sigma": (
        "Relevance to the query, unit(q - c)·(m - c) with c the scope's centroid, in standard deviations "
        "above the scope's background; null when the floor does not apply to this memory (its scope has "
        "too few memories or no background).",
        4.2,
    ),
    "FloorParts.floor": ("Standard deviations above the background a result needs.", 3.0),
    "FloorParts.identifierException": (
        "True when the result is below the floor and kept because its lexical match is at least 0.5 "
        "(an identifier or rare name the embedder does not represent).",
        False,
    ),
    "FloorParts.kept": ("Whether the relevance floor kept it.", True),
    "ExplainedResult.floor": (
        "How the result fared against the relevance floor; null when no floor applied (a threshold was "
        "given, the floor is off, or the result came from graph expansion).",
        {"sigma": 4.2, "floor": 3.0, "identifierException": False, "kept": True},
    ),
    "RemovedResult.floor": ("Its relevance-floor measure, for `relevance_floor` removals (else null).", None),
    "SearchExplanation.relevanceFloor": (
        "Standard deviations above its scope's background a result's relevance needs (default search); "
        "null when a threshold was given or the floor is off.",
        3.0,
    ),
    # memory_events history, trends, maintenance runs
    "MemoryEvent.id": ("Id of the logged event.", "7c9e6679-7425-40de-944b-e07fc1f90ae7"),
    "ts": ("When it happened (RFC 3339, UTC).", _TIME),
    "event": (
        "Kind of event: create, update, delete, search, access (a search or get returned the memory), "
        "ignore, reject, dedupe or maintenance.",
        "update",
    ),
    "GET /v1/memories/{memory_id}/events.event": (
        "Only events of this kind (repeatable): `access` lists the memory's access history.",
        "access",
    ),
    "MemoryEvent.memoryId": ("Memory the event is about (null for tenant-wide events).", _ID),
    "MemoryEvent.layer": ("Layer of the memory, when logged.", "user"),
    "principal": ("Who acted (the key's principal), when known.", "alice-app"),
    "MemoryEvent.code": ("Error code of a refused write.", None),
    "outcome": ("How it ended: ok, hit, miss, denied or error.", "ok"),
    "MemoryEvent.details": (
        "Extra facts of the event (never memory content); an access has `operation` (search or get) and, "
        "for a search, `search_id` (the search event's id) and `rank`.",
        {"operation": "search", "search_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "rank": 1},
    ),
    "MemoryEventsOutput.memoryId": ("The memory whose events these are.", _ID),
    "MemoryEventsOutput.events": ("Events of the memory, newest first.", []),
    "day": ("UTC day.", "2026-11-24"),
    "writes": ("Memories created, updated or deleted that day.", 12),
    "searches": ("Searches that day.", 40),
    "rejections": ("Writes refused or ignored by the gate or the policy that day.", 1),
    "SnapshotStatus.latest": ("The newest snapshot of the caller's tenant (null when none).", None),
    "TrendDay.created": ("Write-gate decision: new memories created that day.", 10),
    "TrendDay.deduplicated": ("Write-gate decision: writes merged into an existing memory that day.", 2),
    "TrendDay.updated": ("Write-gate decision: memories updated that day.", 2),
    "TrendDay.deleted": ("Memories deleted that day.", 0),
    "TrendDay.ignored": ("Write-gate decision: writes ignored as not worth keeping that day.", 1),
    "TrendDay.rejected": ("Write-gate decision: writes refused by a guard, policy or quota that day.", 0),
    "EventTrends.since": ("Start of the first day of the series.", _TIME),
    "EventTrends.days": ("One point per day, oldest first (days without events count zero).", []),
    "days": ("How many days back, today included (1-366).", 14),
    "runs": ("Maintenance runs over this tenant, newest first.", []),
    "MaintenanceRun.outcome": ("ok, or error when a task failed (see errors).", "ok"),
    "MaintenanceRun.errors": ("Errors by maintenance task.", {}),
    "denyPatterns": ("Content matching any of these case-insensitive regular expressions is refused.", ["project x"]),
    "allowedCategories": ("When set, only these categories may be stored.", ["preference", "fact"]),
    "maxLength": ("Longest content in characters (in addition to the store's limit).", 2000),
    "piiMode": ("What to do with PII (email, phone, card, IBAN, SSN, IP): reject, redact or allow.", "redact"),
    "maxMemories": ("Live memories per user; null = unlimited.", 500),
    "shared_pii_mode": (
        "PII handling in shared layers (project, team, org, company, object): reject, redact or "
        "allow; the stricter of this and piiMode applies there.",
        "redact",
    ),
    # keys and grants
    "grants": (
        "Scopes the key may act on beyond its identifiers: team:t1, project:p1, object:type/id, all.",
        ["team:platform"],
    ),
    # forget_user
    "graphMemoryNodes": ("Knowledge-graph memory nodes removed.", 3),
    "graphEntities": ("Knowledge-graph entities removed (no longer mentioned by any memory).", 2),
    "graphEdges": ("Knowledge-graph edges removed.", 4),
    "keysRevoked": ("API keys of the user that were revoked.", 1),
    # provider capabilities
    "ProviderCapabilities.graph": ("Whether the store keeps the knowledge graph.", True),
    "ProviderCapabilities.lifecycle": ("Whether the store supports the lifecycle operations (TTL, decay, …).", True),
    "ProviderCapabilities.keys": ("Whether the store keeps API keys.", True),
    "ProviderCapabilities.governance": ("Whether the store keeps tenant policies and memory events.", True),
    "ProviderCapabilities.snapshots": ("Whether the store can be snapshotted to S3.", True),
    # lifecycle
    "targetLayer": ("Layer to promote or compact into.", "project"),
    "deleteOriginal": ("Move instead of copy: delete the source after promoting.", False),
    "sourceId": ("Id of the source memory.", _ID),
    "promotedId": ("Id of the promoted copy.", _ID),
    "sourceIds": ("Ids of the memories to summarise.", [_ID]),
    "CompactRequest.content": ("The summary that replaces the sources.", "User prefers dark mode in every tool"),
    "deleteSources": ("Delete the sources once the summary is stored.", False),
    "evaluated": ("Session memories looked at.", 5),
    "reflection": ("The session's reflection into the agent layer (null when switched off).", None),
    "ReflectionResult.evaluated": ("Source memories read: the session's and the agent's written in it.", 5),
    "ReflectionResult.sessionId": ("The reflected session.", "s-42"),
    "ReflectionResult.userId": ("The session's user.", "alice"),
    "ReflectionResult.agentId": ("The agent whose layer received the reflection.", "support-bot"),
    "method": ("How it was distilled: llm (the configured LLM) or rules (offline).", "rules"),
    "summaryId": ("Id of the session's current summary memory in the agent layer.", _ID),
    "ruleIds": ("Ids of the rule memories this call wrote.", [_ID]),
    "ReflectionResult.created": ("Memories written by this call (summary and rules).", 2),
    "unchanged": ("True when the session was already reflected with the same sources.", False),
    "skipped": ("Why nothing was reflected, else null.", None),
    "FitContextRequest.messages": (
        "Chat messages about to be sent, oldest first ({role, content, …}).",
        [{"role": "user", "content": "Check the build"}],
    ),
    "FitContextResult.messages": (
        "The messages to send instead (pruned and compacted).",
        [{"role": "user", "content": "Check the build"}],
    ),
    "maxTokens": ("Token budget of the prompt.", 8000),
    "keepRecent": ("Newest messages never pruned or compacted.", 4),
    "compactAt": ("Share of the budget above which the oldest turns are compacted.", 0.8),
    "maxToolTokens": ("Tool outputs above this many tokens are stored and replaced by a pointer.", 500),
    "FitContextRequest.layer": ("Layer that stores pruned outputs and summaries.", "session"),
    "tokensBefore": ("Estimated tokens of the input messages.", 12000),
    "tokensAfter": ("Estimated tokens of the returned messages.", 3000),
    "overBudget": ("True when the newest messages alone exceed the budget.", False),
    "FitContextResult.pruned": ("Tool outputs taken out of the prompt, with the memory holding each.", []),
    "notPruned": ("Large tool outputs left in place because they could not be stored, with the code.", []),
    "PrunedOutput.index": ("Position of the message in the input.", 3),
    "KeptOutput.index": ("Position of the message in the input.", 3),
    "PrunedOutput.memoryId": ("Id of the memory holding the full output.", _ID),
    "PrunedOutput.tokens": ("Estimated tokens of the full output.", 3200),
    "KeptOutput.code": ("Why it could not be stored.", "UNSAFE_CONTENT"),
    "compactedMessages": ("Oldest messages replaced by the summary (0: none).", 12),
    "summaryMemoryId": ("Id of the summary memory of the compacted turns.", _ID),
    "summaryMethod": ("How the summary was written: llm or rules.", "rules"),
    "reflected": ("Agent-layer reflection memories written for idle sessions.", 0),
    "CloseSessionRequest.agentId": (
        "Agent whose memories of the session are evaluated and who receives the reflection.",
        "support-bot",
    ),
    "ReflectRequest.agentId": (
        "Agent layer that receives the reflection; default: the agent named in the session memories' provenance.",
        "support-bot",
    ),
    "promoted": ("Memories promoted out of the session.", []),
    "blocked": ("Memories not promoted, with the reason.", []),
    "expiring": ("Session memories given the session retention expiry.", 3),
    "reward": ("Reward -1..1 for the memories' usefulness.", 1.0),
    "signals": ("Feedback signals received.", 4),
    "meanReward": ("Mean reward received.", -0.5),
    "markedForPruning": ("Whether the feedback makes the memory a pruning candidate.", False),
    "dryRun": ("Only list the candidates, delete nothing.", True),
    "candidates": ("Pruning candidates.", []),
    "PruneReport.pruned": ("Ids that were soft-deleted.", []),
    "tenants": ("One report per tenant.", []),
    "durationS": ("Duration in seconds.", 0.42),
    "purged": ("Expired or soft-deleted memories purged.", 2),
    "archived": ("Memories archived by decay.", 1),
    "consolidated": ("Memories merged into others.", 0),
    "pruneCandidates": ("Pruning candidates found.", 0),
    "pruned": ("Memories pruned.", 0),
    "integrityRepaired": ("Index or graph entries repaired.", 0),
    "accessEventsPruned": (
        "Access events older than the retention (LifecycleConfig.access_history_days) deleted.",
        120,
    ),
    "errors": ("Errors, by task or by item.", []),
    "TenantReport.errors": ("Errors by maintenance task.", {}),
    "hasMore": ("Whether another page exists.", False),
    # store
    "total": ("Memories of the tenant.", 120),
    "byLayer": ("Memories per layer.", {"user": 100, "project": 20}),
    "embeddingModel": ("Embedding model of the store.", "sentence-transformers/all-MiniLM-L6-v2"),
    "embeddingDimensions": ("Dimensions of the store's vectors.", 384),
    "dimensions": ("Dimensions of the vector.", 384),
    "provider": ("Storage provider.", "duckdb"),
    "vectorSearch": ("Whether the provider searches by vector.", True),
    "keywordSearch": ("Whether the provider searches by keyword (BM25).", True),
    "distanceMetrics": ("Distance metrics the provider supports.", ["cosine"]),
    "bulkOperations": ("Whether bulk writes are atomic batches.", True),
    "transactions": ("Whether writes are transactional.", True),
    "maxContentLength": ("Longest content in characters.", 32000),
    "persistent": ("Whether the store survives a restart.", True),
    "EmbeddingResponse.embedding": ("The vector.", [0.01, -0.02, 0.03]),
    # snapshots
    "snapshotId": ("Snapshot id.", "20261124T093000Z-3f2b8c1e"),
    "manifestKey": ("S3 key of the snapshot's manifest.", "acme/manifests/20261124T093000Z-3f2b8c1e.json"),
    "published": ("False when nothing changed since the previous snapshot.", True),
    "tables": ("Rows per table.", {"memories": 120}),
    "rows": ("Rows in total.", 120),
    "bytes": ("Bytes in total.", 524288),
    "files": ("Files in total.", 4),
    "schemaVersion": ("Store schema version of the snapshot.", 7),
    "filesWritten": ("Files uploaded.", 2),
    "filesReused": ("Files reused from earlier snapshots.", 2),
    "bytesWritten": ("Bytes uploaded.", 262144),
    "totalBytes": ("Bytes of the whole snapshot.", 524288),
    "prunedSnapshots": ("Snapshots deleted by retention.", []),
    "bytesDownloaded": ("Bytes downloaded.", 524288),
    "rejected": ("Newer snapshots that failed validation before this one loaded.", []),
    "before": ("Rows per table before the restore.", {"memories": 118}),
    "withinBudget": ("Whether the pull finished within its time budget.", True),
    "lazy": ("Whether the tenant loads lazily.", False),
    "filesLoaded": ("Files loaded so far.", 4),
    "filesTotal": ("Files of the snapshot.", 4),
    "partitionsLoaded": ("Partitions loaded so far.", 2),
    "partitionsTotal": ("Partitions of the snapshot.", 2),
    "complete": ("Whether every file loaded.", True),
    "state": ("Load state: pending, loading, queryable, loaded or failed.", "loaded"),
    "at": ("Point in time: the newest snapshot at or before it.", _TIME),
    "RejectedSnapshot.code": ("Why the snapshot was rejected (code).", "CORRUPT"),
    "PushReport.durationS": ("Duration in seconds.", 1.3),
    # query / path / header parameters
    "memory_id": ("Memory id.", _ID),
    "key_id": ("Key id (the part after `smk_`).", "9f86d081884c7d65"),
    "If-Match": (
        'Expected etag: `"etag"`, `W/"etag"`, a bare etag, a comma-separated list, or `*`; a mismatch is 409 CONFLICT.',
        '"c261a1ab8fd49856ed8f"',
    ),
    "cursor": ("Cursor from the previous page's `nextCursor`.", "eyJvIjogNTB9"),
    "tag": ("Match any of these tags (repeatable).", ["ui"]),
    "GET /v1/memories.filter": ("MetadataFilter as a JSON object.", '{"tags": ["ui"]}'),
    "GET /v1/memories.layer": ("Layer to list (omit for every layer).", "user"),
    "node": ("Memory id or entity name.", "PostgreSQL"),
    "hops": ("Maximum hop distance.", 2),
    "includeEntities": ("Include entities, not only memories.", False),
    "session_id": ("Session id.", "sess-42"),
    "memoryId": ("Only the conflicts of this memory.", _ID),
    "includeEmbeddings": ("Include the stored vectors.", False),
    "a": ("Start: memory id or entity name.", "alice"),
    "b": ("End: memory id or entity name.", "PostgreSQL"),
    "maxHops": ("Maximum path length in hops.", 4),
    "relType": ("Only edges of this relation type.", "uses"),
    "direction": ("Edge direction: out, in or both.", "both"),
}

#: operationId → summary (the handler docstring is the description).
SUMMARIES: dict[str, str] = {
    "createMemory": "Store a memory",
    "listMemories": "List memories",
    "bulkCreateMemories": "Store many memories",
    "bulkDeleteMemories": "Delete many memories",
    "searchMemories": "Semantic search",
    "getMemory": "Get a memory",
    "updateMemory": "Update a memory",
    "deleteMemory": "Delete a memory",
    "createApiKey": "Create an API key",
    "listApiKeys": "List API keys",
    "revokeApiKey": "Revoke an API key",
    "getHealth": "Liveness and component health",
    "getReadiness": "Readiness",
    "getMetrics": "Prometheus metrics",
    "graphRelated": "Related memories",
    "graphPath": "Path between two nodes",
    "graphNeighbors": "Neighbours of a node",
    "getGraphHealth": "Knowledge-graph health",
    "getGraphReadiness": "Knowledge-graph readiness",
    "processMessage": "Write gate",
    "rememberText": "Remember a text",
    "forgetText": "Forget what matches a text",
    "promoteMemory": "Promote a memory to a broader layer",
    "compactMemories": "Compact memories into a summary",
    "closeSession": "Close a session",
    "fitContext": "Fit messages into a token budget",
    "reflectSession": "Reflect a session into the agent layer",
    "recordFeedback": "Record feedback",
    "pruneMemories": "Prune memories with negative feedback",
    "softDeleteMemories": "Soft-delete memories",
    "restoreMemories": "Restore soft-deleted memories",
    "deleteMemoriesByScope": "Delete a whole scope",
    "listConflicts": "List conflicting memories",
    "runMaintenance": "Run maintenance",
    "getMemoryHealth": "Memory health report",
    "listMemoryEvents": "Events of a memory",
    "getEventTrends": "Daily event trends",
    "listMaintenanceRuns": "Recent maintenance runs",
    "getPolicy": "Get the tenant policy",
    "updatePolicy": "Change the tenant policy",
    "resetPolicy": "Reset the tenant policy",
    "exportMemories": "Export as NDJSON",
    "getStats": "Store statistics",
    "getCapabilities": "Provider capabilities",
    "getAccessibleLayers": "Layers reachable by identifiers",
    "generateEmbedding": "Embed a text",
    "memoryCrud": "memory_crud skill",
    "pushSnapshot": "Push a snapshot",
    "listSnapshots": "List snapshots",
    "restoreSnapshot": "Restore a snapshot",
}


def _lookup(key: str, name: str) -> tuple[str, Any] | None:
    """A field's entry: ``Schema.name``, then ``name``; snake_case names (models answered as the
    SDK returns them) use the entry of their camelCase form."""
    schema, _, _ = key.rpartition(".")
    camel = to_camel(name) if "_" in name and not name.startswith("_") else name
    return FIELDS.get(key) or FIELDS.get(f"{schema}.{camel}") or FIELDS.get(name) or FIELDS.get(camel)


def _complete_schema(prop: dict[str, Any], entry: tuple[str, Any] | None) -> None:
    if entry is None:
        return
    description, example = entry
    prop.setdefault("description", description)
    if "examples" not in prop and "example" not in prop:
        prop["examples"] = [example]


def _set(schemas: dict[str, Any], schema: str, prop: str, **values: Any) -> None:
    target = schemas.get(schema, {}).get("properties", {}).get(prop)
    if target is None:
        return
    if "anyOf" in target:  # optional fields: the constraint goes on the non-null branch
        for branch in target["anyOf"]:
            if branch.get("type") != "null":
                branch.update(values)
    else:
        target.update(values)


def complete(doc: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    """Descriptions, examples, enums and the server's limits on a FastAPI-generated document."""
    schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
    for sname, schema in schemas.items():
        for pname, prop in schema.get("properties", {}).items():
            _complete_schema(prop, _lookup(f"{sname}.{pname}", pname))
    for path, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            if op.get("operationId") in SUMMARIES:
                op["summary"] = SUMMARIES[op["operationId"]]
            for param in op.get("parameters", []):
                entry = _lookup(f"{method.upper()} {path}.{param['name']}", param["name"])
                if entry is not None:
                    param.setdefault("description", entry[0])
                    if "example" not in param and "examples" not in param:
                        param["example"] = entry[1]
                if param["name"] == "limit" and path == "/v1/memories":
                    param["schema"] = _bounded(param["schema"], 1, limits["max_list_limit"])
    _set(schemas, "CreateMemoryRequest", "content", maxLength=limits["max_content_length"], minLength=1)
    _set(schemas, "UpdateMemoryRequest", "content", maxLength=limits["max_content_length"], minLength=1)
    _set(schemas, "SearchRequest", "query", maxLength=limits["max_query_chars"], minLength=1)
    _set(schemas, "SearchRequest", "limit", minimum=1, maximum=limits["max_search_limit"])
    _set(schemas, "BulkCreateRequest", "items", maxItems=limits["max_bulk_items"])
    _set(schemas, "BulkDeleteRequest", "ids", maxItems=limits["max_bulk_items"])
    return doc


def _bounded(schema: dict[str, Any], low: int, high: int) -> dict[str, Any]:
    if "anyOf" in schema:
        return {
            **schema,
            "anyOf": [_bounded(b, low, high) if b.get("type") == "integer" else b for b in schema["anyOf"]],
        }
    return {**schema, "minimum": low, "maximum": high}


def install(app: FastAPI, limits: Callable[[], dict[str, int]]) -> None:
    """Replace ``app.openapi`` with the completed document (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                tags=app.openapi_tags,
                servers=app.servers,
            )
            app.openapi_schema = complete(doc, limits())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
