"""``stratamem encryption generate-key|rotate``: keys of encryption at rest (docs/security.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..encryption import EncryptionKey, generate_key, key_from_env
from ..errors import ErrorCode
from ..providers.duckdb import encrypted
from .common import DEFAULT_DB, DbOpt, JsonOpt, cli_settings, coded_errors, console, emit_json, fail, store_file

#: The new key of a rotation, when not given as a file (never as a command-line value: ps shows those).
ENV_NEW_KEY = "STRATAMEM_NEW_ENCRYPTION_KEY"


def register(app: typer.Typer) -> None:
    enc = typer.Typer(name="encryption", help="Encryption at rest: new keys and key rotation.", no_args_is_help=True)
    app.add_typer(enc)

    @enc.command("generate-key")
    def generate() -> None:
        """Print a new random key (256 bits) for STRATAMEM_ENCRYPTION_KEY or a key file."""
        typer.echo(generate_key())

    @enc.command("rotate")
    def rotate(
        db: DbOpt = DEFAULT_DB,
        new_key_file: Annotated[
            Path | None,
            typer.Option("--new-key-file", help=f"File whose first line is the new key (else ${ENV_NEW_KEY})."),
        ] = None,
        from_plaintext: Annotated[
            bool, typer.Option("--from-plaintext", help="The file is not encrypted yet (encrypt it).")
        ] = False,
        to_plaintext: Annotated[bool, typer.Option("--to-plaintext", help="Decrypt the file (no new key).")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Re-encrypt a DuckDB store file with a new key.

        The current key comes from STRATAMEM_ENCRYPTION_KEY / STRATAMEM_ENCRYPTION_KEY_FILE. The data
        is copied into a new file, verified table by table with the new key, then moved over the old
        file in one step; on any failure the old file is unchanged. Stop every process using the
        store first. Afterwards configure the new key (and keep the old one in
        STRATAMEM_ENCRYPTION_PREVIOUS_KEY_FILE to restore snapshots pushed before the rotation)."""
        path = store_file(db)
        if path is None:
            raise fail(ErrorCode.INVALID_PARAMS.value, "rotation needs a DuckDB file (--db FILE)")
        if from_plaintext and to_plaintext:
            raise fail(ErrorCode.INVALID_PARAMS.value, "--from-plaintext and --to-plaintext exclude each other")
        settings = cli_settings()
        with coded_errors():
            old = None if from_plaintext else key_from_env(settings=settings)
            if old is None and not from_plaintext:
                raise fail(
                    ErrorCode.CONFIGURATION_ERROR.value,
                    "no current key: set STRATAMEM_ENCRYPTION_KEY or STRATAMEM_ENCRYPTION_KEY_FILE "
                    "(or pass --from-plaintext for a file that is not encrypted yet)",
                )
            new: EncryptionKey | None = None
            if not to_plaintext:
                if new_key_file is not None:
                    new = EncryptionKey.from_file(new_key_file)
                elif settings.new_encryption_key:
                    new = EncryptionKey(settings.new_encryption_key)
                else:
                    raise fail(
                        ErrorCode.INVALID_PARAMS.value,
                        f"no new key: pass --new-key-file FILE or set {ENV_NEW_KEY} (or --to-plaintext)",
                    )
            if old is not None and new is not None and old == new:
                raise fail(ErrorCode.INVALID_PARAMS.value, "the new key is the current key")
            report = encrypted.rotate(path, old, new)
        if as_json:
            emit_json(report)
            return
        console.print(
            f"{report['path']}: {report['tables']} tables, {report['rows']} rows re-encrypted "
            f"(key {report['old_key_id'] or 'none'} -> {report['new_key_id'] or 'none'})",
            markup=False,
            highlight=False,
        )
