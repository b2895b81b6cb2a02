"""Group commit of concurrent single adds: one embedding call and one store transaction for the adds
of one tenant that arrive while another add of that tenant is being stored.

Each ``add`` stores its row, graph entities, lexical postings and embedding-cache entry in a
transaction of its own, and an embedded store (DuckDB) runs one write transaction at a time: under
concurrent adds the transactions queue on the write lock and their fixed cost (commit, index
upkeep) is paid once per add. :class:`AddGroups` pays it once per group instead, with a
leader/follower protocol rather than a timer:

* an add that finds no add of its tenant in flight becomes the *leader*: it stores itself together
  with every add of the tenant queued at that moment, then hands leadership to the oldest add
  queued meanwhile (which stores the next group) and returns;
* an add that finds one in flight queues and waits until its group has been stored.

Without concurrency a group holds one add and the cost is one lock round trip: nothing waits for
company. The engine gives the storing functions (``MemoryEngine._store_add_group``,
``_store_add_alone``): the first sets each member's outcome (its own output or its own error), or,
when the grouped transaction failed, marks every member to be stored alone, which each caller then
does on its own thread (as without grouping: a failure tied to the leader's thread or to one bad add
stays with that add's caller). Adds of different tenants never share a group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from prometheus_client import Histogram

from .model import AddMemoryOutput, MemoryEntry, TenantContext

#: Adds stored per add transaction of the group commit: 1 when adds do not overlap.
ADD_GROUP_SIZE = Histogram(
    "stratamem_add_group_size",
    "Single adds stored together in one grouped add transaction (group commit)",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)


@dataclass(eq=False)
class PendingAdd:
    """One caller's validated add, waiting to be stored with its group.

    Attributes:
        ctx: The caller's tenant context.
        entry: The prepared entry (id, content, scope; the embedding is filled in when stored).
        supersedes: Ids the caller named to supersede.
        output: Set when the add succeeded.
        error: Set when it failed (raised in the caller's thread).
        alone: Set when the group's transaction failed: the caller stores this add by itself.
    """

    ctx: TenantContext
    entry: MemoryEntry
    supersedes: Sequence[str] = ()
    output: AddMemoryOutput | None = None
    error: BaseException | None = None
    alone: bool = False
    _leads: bool = False
    _done: threading.Event = field(default_factory=threading.Event)


class AddGroups:
    """Groups concurrent adds per tenant; thread-safe.

    Args:
        store_group: Stores a group (same tenant, in arrival order) and sets every member's
            ``output`` or ``error`` (or ``alone``); called on the leader's thread, never concurrently
            for one tenant.
        store_alone: Stores one add by itself, on its caller's thread; returns its output or raises.
        max_group: Most adds stored together.
    """

    def __init__(
        self,
        store_group: Callable[[list[PendingAdd]], None],
        store_alone: Callable[[PendingAdd], AddMemoryOutput],
        *,
        max_group: int = 256,
    ) -> None:
        self._store_group = store_group
        self._store_alone = store_alone
        #: Most adds in one group (bounds one transaction and the leader's wait); the rest wait for the next.
        self.max_group = max_group
        self._lock = threading.Lock()
        #: Tenants with a group being stored -> the adds queued for the next group.
        self._queued: dict[str, list[PendingAdd]] = {}

    def queued(self, tenant_id: str) -> int:
        """Adds of ``tenant_id`` waiting for the group being stored to finish (0 when none is)."""
        with self._lock:
            return len(self._queued.get(tenant_id, ()))

    def add(self, pending: PendingAdd) -> AddMemoryOutput:
        """Store ``pending`` with the adds of its tenant that arrive together; blocks until stored.

        Args:
            pending: The caller's validated add.

        Returns:
            The caller's own output.

        Raises:
            BaseException: The caller's own error (a ``MemoryError`` or the store's exception).
        """
        tenant = pending.ctx.tenant_id
        with self._lock:
            waiting = self._queued.get(tenant)
            if waiting is None:
                self._queued[tenant] = []
                pending._leads = True
            else:
                waiting.append(pending)
        if not pending._leads:
            pending._done.wait()
        if pending._leads:  # first in, or handed the lead by the previous group's leader
            self._lead(tenant, pending)
        if pending.alone:
            return self._store_alone(pending)
        if pending.error is not None:
            raise pending.error
        if pending.output is None:  # a store_group that set no outcome: a bug, never a silent success
            raise RuntimeError("the grouped add set no outcome")
        return pending.output

    def _lead(self, tenant: str, first: PendingAdd) -> None:
        with self._lock:
            waiting = self._queued[tenant]
            group = [first, *waiting[: self.max_group - 1]]
            self._queued[tenant] = waiting[self.max_group - 1 :]
        ADD_GROUP_SIZE.observe(len(group))
        try:
            self._store_group(group)
        except BaseException as exc:  # store_group sets outcomes itself; this only keeps callers from hanging
            for member in group:
                if member.output is None and member.error is None and not member.alone:
                    member.error = exc
            raise
        finally:
            with self._lock:
                waiting = self._queued[tenant]
                successor = waiting.pop(0) if waiting else None
                if successor is None:
                    del self._queued[tenant]
                else:
                    successor._leads = True
            for member in group:
                if member is not first:
                    member._done.set()
            if successor is not None:
                successor._done.set()
