"""A small typed wrapper over boto3's S3 client, with tenacity retries on transient failures.

Works with any S3-compatible endpoint (AWS, SeaweedFS, MinIO, R2 …): path-style addressing, the
endpoint URL, region and credentials come from explicit arguments or the environment
(``STRATAMEM_S3_URL``, ``STRATAMEM_S3_BUCKET``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION`` / ``AWS_DEFAULT_REGION``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import ErrorCode, MemoryError
from ..settings import Settings

T = TypeVar("T")

_TRANSIENT_CODES = {
    "SlowDown",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
    "503",
    "500",
    "RequestTimeTooSkewed",
    "Throttling",
}


class S3Settings(BaseModel):
    """Where snapshots go. Every field can come from the environment (see :meth:`from_env`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint_url: str | None = None
    bucket: str = "stratamem"
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: str | None = Field(default=None, repr=False)
    #: Create the bucket when it does not exist (handy for local SeaweedFS/MinIO; off for AWS).
    create_bucket: bool = True
    max_workers: int = 8

    @classmethod
    def from_env(cls, settings: Settings | None = None, **overrides: Any) -> S3Settings:
        env = os.environ  # the AWS_* variables belong to the AWS SDK convention, not to stratamem
        own = settings or Settings()
        values: dict[str, Any] = {
            "endpoint_url": own.s3_url or None,
            "bucket": own.s3_bucket or "stratamem",
            "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            "access_key_id": env.get("AWS_ACCESS_KEY_ID") or None,
            "secret_access_key": env.get("AWS_SECRET_ACCESS_KEY") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _is_transient(exc: BaseException) -> bool:
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError  # noqa: PLC0415  s3 extra (botocore)

    if isinstance(exc, ConnectionError | HTTPClientError):
        return True
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        return str(err.get("Code")) in _TRANSIENT_CODES or status >= 500
    return False


def _s3_error(exc: Exception, operation: str, key: str | None) -> MemoryError:
    from botocore.exceptions import ClientError  # noqa: PLC0415  s3 extra (botocore)

    code = None
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code"))
    return MemoryError(
        ErrorCode.PROVIDER_ERROR,
        f"S3 {operation} failed for {key or 'bucket'}: {code or type(exc).__name__}",
        operation="snapshot",
        details={"s3_operation": operation, "key": key, "s3_code": code, "error": str(exc)[:300]},
        retryable=_is_transient(exc),
    )


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class S3Store:
    """The operations snapshots need, each retried 3x with exponential backoff when transient."""

    def __init__(self, settings: S3Settings, client: Any | None = None) -> None:
        self.settings = settings
        self.bucket = settings.bucket
        if client is None:
            import boto3  # noqa: PLC0415  s3 extra (boto3)
            from botocore.config import Config  # noqa: PLC0415  s3 extra (botocore)

            client = boto3.client(
                "s3",
                endpoint_url=settings.endpoint_url,
                region_name=settings.region,
                aws_access_key_id=settings.access_key_id,
                aws_secret_access_key=settings.secret_access_key,
                config=Config(
                    s3={"addressing_style": "path"},
                    retries={"max_attempts": 1, "mode": "standard"},
                    connect_timeout=5,
                    read_timeout=60,
                    max_pool_connections=max(10, settings.max_workers * 2),
                    request_checksum_calculation="when_required",
                    response_checksum_validation="when_required",
                ),
            )
        self.client = client
        self._bucket_checked = False

    # ------------------------------------------------------------------------------ plumbing
    def _call(self, operation: str, key: str | None, fn: Callable[[], T]) -> T:
        wrapped = retry(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(3),
            wait=wait_exponential(multiplier=0.1, max=2.0),
            reraise=True,
        )(fn)
        try:
            return wrapped()
        except MemoryError:
            raise
        except Exception as exc:
            raise _s3_error(exc, operation, key) from exc

    def ensure_bucket(self) -> None:
        if self._bucket_checked:
            return
        from botocore.exceptions import ClientError  # noqa: PLC0415  s3 extra (botocore)

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            if status == 404 and self.settings.create_bucket:
                self._call("create_bucket", None, lambda: self.client.create_bucket(Bucket=self.bucket))
            else:
                raise _s3_error(exc, "head_bucket", None) from exc
        except Exception as exc:
            raise _s3_error(exc, "head_bucket", None) from exc
        self._bucket_checked = True

    # ------------------------------------------------------------------------------ objects
    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        def put() -> None:
            with path.open("rb") as fh:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=fh,
                    Metadata={"sha256": sha256},
                    ContentType="application/vnd.apache.parquet",
                )

        self._call("put_object", key, put)

    def put_bytes(self, key: str, data: bytes, *, content_type: str = "application/json") -> None:
        sha = hashlib.sha256(data).hexdigest()
        self._call(
            "put_object",
            key,
            lambda: self.client.put_object(
                Bucket=self.bucket, Key=key, Body=data, ContentType=content_type, Metadata={"sha256": sha}
            ),
        )

    def get_bytes(self, key: str) -> bytes:
        def get() -> bytes:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()

        return self._call("get_object", key, get)

    def download_file(self, key: str, path: Path) -> tuple[int, str]:
        """Stream an object to ``path``; returns its size and sha256 (hashed while it streams, so
        verification needs no second read of the file)."""

        def get() -> tuple[int, str]:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
            h, size = hashlib.sha256(), 0
            try:
                with path.open("wb") as fh:
                    for chunk in iter(lambda: body.read(1 << 20), b""):
                        h.update(chunk)
                        size += len(chunk)
                        fh.write(chunk)
            finally:
                body.close()
            return size, h.hexdigest()

        return self._call("get_object", key, get)

    def head(self, key: str) -> dict[str, Any] | None:
        """Object metadata, or None when it does not exist."""
        from botocore.exceptions import ClientError  # noqa: PLC0415  s3 extra (botocore)

        def head() -> dict[str, Any] | None:
            try:
                out: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=key)
                return out
            except ClientError as exc:
                status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
                if status == 404:
                    return None
                raise

        return self._call("head_object", key, head)

    def copy(self, source: str, dest: str) -> None:
        self._call(
            "copy_object",
            dest,
            lambda: self.client.copy_object(
                Bucket=self.bucket,
                Key=dest,
                CopySource={"Bucket": self.bucket, "Key": source},
                MetadataDirective="COPY",
            ),
        )

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            self._call(
                "delete_objects",
                chunk[0],
                lambda chunk=chunk: self.client.delete_objects(  # type: ignore[misc]
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True}
                ),
            )

    def list(self, prefix: str) -> Iterator[dict[str, Any]]:
        """Every object under ``prefix`` (``Key``, ``Size``, ``LastModified``)."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            page: dict[str, Any] = self._call(
                "list_objects_v2",
                prefix,
                lambda kwargs=kwargs: self.client.list_objects_v2(**kwargs),  # type: ignore[misc]
            )
            yield from page.get("Contents", [])
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")
