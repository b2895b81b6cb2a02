"""Hash-partition the ``memories`` table of a PostgreSQL store by ``tenant_id`` (optional setup).

``partition_memories(url, partitions=16)`` turns ``memories`` into a table ``PARTITION BY HASH
(tenant_id)`` with ``partitions`` partitions (``memories_p0`` …), keeping every column, row, index
(each recreated under its own name on the partitioned table, hence on every partition) and trigger.
It runs in one transaction holding the advisory lock of its schema's migrations, so it is all or nothing;
stop the servers first (it takes an exclusive lock on the table and copies every row).

Every primary key and index of the store already leads with ``tenant_id`` (see
:mod:`.postgres_schema`), and every request-path query of the provider on ``memories`` binds one
tenant (``WHERE tenant_id = %s``), so PostgreSQL prunes it to the one partition holding the tenant;
only the enumeration of tenants (scheduled maintenance) reads every partition.

Command line: ``python -m stratamem.providers.postgres_partition URL --partitions 16``.
"""

from __future__ import annotations

import argparse
from typing import Any

import psycopg
from psycopg import sql

from .postgres import split_url
from .postgres_schema import migration_lock_key

_OLD = "memories_unpartitioned"


def is_partitioned(conn: Any, table: str = "memories") -> bool:
    row = conn.execute("SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass(%s)", [table]).fetchone()
    return row is not None and row[0] == "p"


def partition_memories(url: str, partitions: int = 16) -> int:
    """Hash-partition ``memories`` of the store at ``url`` (``?schema=`` honoured) into
    ``partitions`` partitions; returns the rows copied. A store already partitioned is left as it is
    (returns 0). The store must have been opened once (its schema exists)."""
    if not 2 <= partitions <= 1024:
        raise ValueError("partitions must be between 2 and 1024")
    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=False) as conn:
        if schema:
            conn.execute(sql.SQL("SET LOCAL search_path = {}, public").format(sql.Identifier(schema)))
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [migration_lock_key(schema)])
        if conn.execute("SELECT to_regclass('memories')").fetchone() == (None,):
            raise ValueError("the store has no memories table yet: open it once first")
        if is_partitioned(conn):
            return 0
        conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        indexes = [
            (name, definition)
            for name, definition in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
                "AND schemaname = current_schema() AND indexname <> 'memories_pkey'"
            ).fetchall()
        ]
        triggers = [
            row[0]
            for row in conn.execute(
                "SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t "
                "WHERE t.tgrelid = 'memories'::regclass AND NOT t.tgisinternal"
            ).fetchall()
        ]
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'memories' AND is_generated = 'NEVER' ORDER BY ordinal_position"
            ).fetchall()
        ]
        conn.execute(sql.SQL("ALTER TABLE memories RENAME TO {}").format(sql.Identifier(_OLD)))
        conn.execute(
            sql.SQL("ALTER TABLE {} RENAME CONSTRAINT memories_pkey TO memories_unpartitioned_pkey").format(
                sql.Identifier(_OLD)
            )
        )
        for name, _ in indexes:  # free the names for the partitioned table's indexes
            conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(sql.Identifier(name), sql.Identifier(f"{name}_old"))
            )
        conn.execute(
            sql.SQL(
                "CREATE TABLE memories (LIKE {} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS, "
                "PRIMARY KEY (tenant_id, id)) PARTITION BY HASH (tenant_id)"
            ).format(sql.Identifier(_OLD))
        )
        for i in range(partitions):
            conn.execute(
                sql.SQL("CREATE TABLE {} PARTITION OF memories FOR VALUES WITH (MODULUS {}, REMAINDER {})").format(
                    sql.Identifier(f"memories_p{i}"), sql.Literal(partitions), sql.Literal(i)
                )
            )
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
        copied = conn.execute(
            sql.SQL("INSERT INTO memories ({}) SELECT {} FROM {}").format(cols, cols, sql.Identifier(_OLD))
        ).rowcount
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(_OLD)))
        # definitions read from the catalog name the table as ``[schema.]memories``: the new table
        for _, definition in indexes:
            conn.execute(definition)
        for definition in triggers:
            conn.execute(definition)
        conn.commit()
        return int(copied)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="the store URL (postgresql://…[?schema=name])")
    parser.add_argument("--partitions", type=int, default=16)
    args = parser.parse_args(argv)
    copied = partition_memories(args.url, args.partitions)
    print(f"memories partitioned by hash of tenant_id into {args.partitions} partitions ({copied} rows copied)")


if __name__ == "__main__":
    main()
