"""Where encrypted data-asset blobs are kept: a local directory or an S3 bucket, one place per region.

Everything stored here is ciphertext (``compliance.domain.envelope`` encrypts before, decrypts after); this module never
sees plaintext and needs no keys. ``blob_put`` writes under ``settings.LADDER_STORAGE_URL`` with its
``{region}`` placeholder filled in, so each region's data lands in its own directory or bucket (residency), and
returns the blob's full location URI. That URI is what callers store: ``blob_get``, ``blob_delete`` and
``blob_exists`` follow its scheme, not the current setting, so blobs written before a change of backend stay
readable.

- ``file:///some/dir/{region}`` (the embedded default is ``BASE_DIR/var/storage/{region}``): a file per blob,
  mode 0600, written to a temporary file in the same directory, fsynced and renamed over the old one, so a
  reader sees the old blob or the new one, never half of one.
- ``s3://ladder-{region}/assets``: an object per blob through boto3, which is imported only when an S3 location
  is first used. ``LADDER_S3_ENDPOINT_URL`` points at an S3-compatible store (MinIO, Ceph); credentials come
  from boto3's own chain (``AWS_*`` variables, shared files, instance roles). An S3 location names a bucket, not
  an endpoint: it is read through the endpoint configured when it is read.

Deleting a blob is not what makes an asset unreadable: crypto-shredding deletes its wrapped data key. A versioned
bucket keeps deleted objects as old versions, and a file system may keep freed blocks; neither matters once the
key is gone.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from django.conf import settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

REGION_PLACEHOLDER = "{region}"
MAX_KEY_LENGTH = 512

# Region codes as fleet documents write them; they end up in bucket names, which allow no upper case or '_'.
_REGION = re.compile(r"(?=.{1,40}\Z)[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_KEY = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*\Z")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_KEY_RULE = f"segments of A-Z a-z 0-9 . _ - joined by '/', none '.' or '..', at most {MAX_KEY_LENGTH} characters"


class StorageError(Exception):
    """A blob could not be stored, read or deleted, or storage is misconfigured. Messages never quote content."""


class BlobMissing(StorageError):
    """The location holds no blob."""


# --- public interface --------------------------------------------------------------------------------------------


def blob_put(*, region: str, key: str, data: bytes) -> str:
    """Store ``data`` as ``key`` in ``region``'s place, replacing what was there; returns the location URI."""
    _check_region(region)
    _check_key(key)
    scheme, base, prefix = _storage_target(region)
    if scheme == "file":
        path = Path(base, key)
        _file_put(path, data)
        return path.as_uri()
    object_key = f"{prefix}/{key}" if prefix else key
    location = f"s3://{base}/{object_key}"
    with _s3_errors(location):
        _s3_client().put_object(Bucket=base, Key=object_key, Body=data)
    return location


def blob_get(location: str) -> bytes:
    """The blob at ``location``; ``BlobMissing`` when there is none."""
    scheme, where, object_key = _parse_location(location)
    if scheme == "file":
        try:
            return Path(where).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise BlobMissing(f"no blob at {location}") from None
        except OSError as error:
            raise StorageError(f"cannot read {location}: {error.strerror or error}") from None
    with _s3_errors(location):
        response = _s3_client().get_object(Bucket=where, Key=object_key)
        return response["Body"].read()


def blob_delete(location: str) -> bool:
    """Delete the blob at ``location``: True when there was one, False when there was nothing to delete."""
    scheme, where, object_key = _parse_location(location)
    if scheme == "file":
        path = Path(where)
        if path.is_dir():  # a directory holds blobs but is not one
            return False
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as error:
            raise StorageError(f"cannot delete {location}: {error.strerror or error}") from None
        return True
    # S3 answers a DELETE the same whether or not the object existed; asking first is the only way to know. Two
    # concurrent deletes may therefore both answer True.
    if not blob_exists(location):
        return False
    with _s3_errors(location):
        _s3_client().delete_object(Bucket=where, Key=object_key)
    return True


def blob_exists(location: str) -> bool:
    """Whether ``location`` holds a blob."""
    scheme, where, object_key = _parse_location(location)
    if scheme == "file":
        return Path(where).is_file()
    try:
        with _s3_errors(location):
            _s3_client().head_object(Bucket=where, Key=object_key)
    except BlobMissing:
        return False
    return True


# --- names and URLs ----------------------------------------------------------------------------------------------


def _check_region(region: str) -> None:
    if not isinstance(region, str) or not _REGION.match(region):
        raise StorageError(
            f"invalid region code {region!r}: lower-case letters and digits in groups joined by '-', at most 40"
        )


def _check_key(key: str) -> None:
    if (
        not isinstance(key, str)
        or len(key) > MAX_KEY_LENGTH
        or not _KEY.match(key)
        or any(segment in {".", ".."} for segment in key.split("/"))
    ):
        raise StorageError(f"invalid blob key {key!r}: keys are {_KEY_RULE}")


def _storage_target(region: str) -> tuple[str, str, str]:
    """``("file", directory, "")`` or ``("s3", bucket, prefix)`` for ``region``, from ``LADDER_STORAGE_URL``."""
    template: str = settings.LADDER_STORAGE_URL
    if REGION_PLACEHOLDER not in template:
        raise StorageError(
            f"LADDER_STORAGE_URL {template!r} has no {REGION_PLACEHOLDER} placeholder; each region's data must "
            f"land in its own place, e.g. file:///var/lib/ladder/{REGION_PLACEHOLDER} or "
            f"s3://ladder-{REGION_PLACEHOLDER}/assets"
        )
    url = template.replace(REGION_PLACEHOLDER, region)
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise StorageError(f"LADDER_STORAGE_URL {template!r} must not have a query or fragment")
    if parts.scheme == "file":
        directory = unquote(parts.path)
        if parts.netloc not in {"", "localhost"} or not os.path.isabs(directory):
            raise StorageError(
                f"LADDER_STORAGE_URL {template!r} is not a local absolute path; write file:///absolute/dir/{{region}}"
            )
        if ".." in directory.split("/"):
            raise StorageError(f"LADDER_STORAGE_URL {template!r} must not contain '..'")
        return "file", directory.rstrip("/") or "/", ""
    if parts.scheme == "s3":
        if not _BUCKET.match(parts.netloc):
            raise StorageError(
                f"LADDER_STORAGE_URL {template!r} gives bucket {parts.netloc!r} for region {region!r}, which is not "
                "a valid bucket name (3-63 lower-case letters, digits, '.' and '-')"
            )
        return "s3", parts.netloc, parts.path.strip("/")
    raise StorageError(f"LADDER_STORAGE_URL {template!r} has an unknown scheme {parts.scheme!r}; use file:// or s3://")


def _parse_location(location: str) -> tuple[str, str, str]:
    """``("file", path, "")`` or ``("s3", bucket, object key)`` for a location ``blob_put`` returned."""
    parts = urlsplit(location) if isinstance(location, str) else None
    if parts is None or parts.query or parts.fragment:
        raise StorageError(f"not a blob location: {location!r}")
    if parts.scheme == "file":
        path = unquote(parts.path)
        if parts.netloc not in {"", "localhost"} or not os.path.isabs(path) or ".." in path.split("/"):
            raise StorageError(f"not a blob location: {location!r} (expected file:///absolute/path)")
        return "file", path, ""
    if parts.scheme == "s3":
        object_key = parts.path.lstrip("/")
        if not _BUCKET.match(parts.netloc) or not object_key:
            raise StorageError(f"not a blob location: {location!r} (expected s3://bucket/key)")
        return "s3", parts.netloc, object_key
    raise StorageError(f"not a blob location: {location!r} (unknown scheme {parts.scheme!r}; file:// or s3://)")


# --- local files -------------------------------------------------------------------------------------------------


def _file_put(path: Path, data: bytes) -> None:
    location = path.as_uri()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # mkstemp creates the file with mode 0600, whatever the umask; in the same directory, so that the rename
        # below stays on one file system and is atomic.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise StorageError(f"cannot write {location}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise StorageError(f"cannot write {location}: {error.strerror or error}") from None
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry is on disk; some file systems cannot fsync a
    # directory, and the blob is already in place, so a failure here is not the caller's failure.
    with suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- S3 ----------------------------------------------------------------------------------------------------------

_clients: dict[str, S3Client] = {}
_clients_lock = threading.Lock()


def _s3_client() -> S3Client:
    """The process's client for the configured endpoint, made once (boto3 clients are thread-safe)."""
    endpoint: str = settings.LADDER_S3_ENDPOINT_URL
    client = _clients.get(endpoint)
    if client is not None:
        return client
    with _clients_lock:
        client = _clients.get(endpoint)
        if client is None:
            client = _clients[endpoint] = _s3_client_new(endpoint)
    return client


def _s3_client_new(endpoint: str) -> S3Client:
    import boto3.session
    from botocore.config import Config

    config = Config(connect_timeout=10, read_timeout=60, retries={"mode": "standard", "max_attempts": 5})
    if endpoint:
        # S3-compatible stores are usually reached by path ("host/bucket/key"), having no wildcard DNS for
        # "bucket.host"; and older MinIO and Ceph releases reject the CRC checksums that botocore sends by
        # default since 1.36. Content is AES-GCM ciphertext, whose tags catch corruption anyway.
        config = config.merge(
            Config(
                s3={"addressing_style": "path"},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            )
        )
    try:
        # A session of its own: boto3's default session is not safe to create clients from in several threads.
        session = boto3.session.Session()
        return session.client("s3", endpoint_url=endpoint or None, config=config)
    except Exception as error:  # bad endpoint URL, unknown region...: botocore raises several unrelated types
        raise StorageError(f"cannot create an S3 client for {endpoint or 'AWS'}: {error}") from None


@contextmanager
def _s3_errors(location: str) -> Iterator[None]:
    """Turn botocore's failures into ``BlobMissing`` (no such key) or ``StorageError``."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except ClientError as error:
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            raise StorageError(f"cannot reach {location}: bucket does not exist") from None
        # HEAD answers have no body, so a missing key is a bare 404.
        if code in {"NoSuchKey", "404", "NotFound"} or status == 404:
            raise BlobMissing(f"no blob at {location}") from None
        message = info.get("Message") or code or str(error)
        raise StorageError(f"cannot reach {location}: {message} ({code or status})") from None
    except BotoCoreError as error:  # no credentials, endpoint unreachable, connection dropped mid-body...
        raise StorageError(f"cannot reach {location}: {error}") from None
