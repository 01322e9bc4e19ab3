"""Blob storage: the local directory backend, and the S3 backend over HTTP against a moto server on loopback."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
import requests
from moto.server import ThreadedMotoServer
from pytest_django.fixtures import Settings

from compliance import storage as storage_module
from compliance.storage import BlobMissing, StorageError, blob_delete, blob_exists, blob_get, blob_put
from tests.support import ROOT

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

S3_URL = "s3://ladder-{region}/assets"
REGIONS = ("eu-west", "us-east")


@pytest.fixture
def storage(settings: Settings, tmp_path: Path) -> Path:
    """Point the local backend at a temporary directory; returns it."""
    settings.LADDER_STORAGE_URL = (tmp_path / "blobs").as_uri() + "/{region}"
    return tmp_path / "blobs"


# --- local backend -----------------------------------------------------------------------------------------------


def test_it_round_trips_a_blob_through_the_local_backend(storage: Path) -> None:
    location = blob_put(region="eu-west", key="acme/42", data=b"\x02ciphertext\x00")

    path = storage / "eu-west" / "acme" / "42"
    assert location == path.as_uri()
    assert location.startswith("file:///")
    assert blob_get(location) == b"\x02ciphertext\x00"
    assert blob_exists(location)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_it_stores_an_empty_blob(storage: Path) -> None:
    location = blob_put(region="eu-west", key="acme/empty", data=b"")

    assert blob_get(location) == b""
    assert blob_exists(location)


def test_it_overwrites_atomically_and_leaves_no_temporary_file(storage: Path) -> None:
    first = blob_put(region="eu-west", key="acme/42", data=b"old")
    second = blob_put(region="eu-west", key="acme/42", data=b"new content")

    assert first == second
    assert blob_get(second) == b"new content"
    assert os.listdir(storage / "eu-west" / "acme") == ["42"]


def test_it_keeps_the_old_blob_when_a_write_fails(storage: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = blob_put(region="eu-west", key="acme/42", data=b"old")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageError, match="No space left on device"):
        blob_put(region="eu-west", key="acme/42", data=b"new")

    monkeypatch.undo()
    assert blob_get(location) == b"old"
    assert os.listdir(storage / "eu-west" / "acme") == ["42"]


def test_it_raises_blob_missing_for_a_location_that_holds_nothing(storage: Path) -> None:
    location = (storage / "eu-west" / "acme" / "404").as_uri()

    with pytest.raises(BlobMissing, match="no blob at"):
        blob_get(location)
    assert not blob_exists(location)


def test_it_treats_a_directory_as_no_blob(storage: Path) -> None:
    blob_put(region="eu-west", key="acme/42/part", data=b"x")
    directory = (storage / "eu-west" / "acme" / "42").as_uri()

    with pytest.raises(BlobMissing):
        blob_get(directory)
    assert not blob_exists(directory)
    assert blob_delete(directory) is False
    assert blob_exists(directory + "/part")


def test_it_deletes_idempotently(storage: Path) -> None:
    location = blob_put(region="eu-west", key="acme/42", data=b"bytes")

    assert blob_delete(location) is True
    assert blob_delete(location) is False
    assert not blob_exists(location)
    with pytest.raises(BlobMissing):
        blob_get(location)


def test_it_does_not_fail_deleting_under_a_directory_that_never_existed(storage: Path) -> None:
    assert blob_delete((storage / "nowhere" / "acme" / "42").as_uri()) is False


@pytest.mark.parametrize(
    "key",
    [
        "",
        "/acme/42",
        "acme/42/",
        "acme//42",
        "../acme/42",
        "acme/../42",
        "acme/..",
        "..",
        "acme/./42",
        "acme 42",
        "acme\\42",
        "acme/4\x002",
        "acmé/42",
        "acme/42\n",
        "a" * 513,
    ],
)
def test_it_rejects_invalid_keys(storage: Path, key: str) -> None:
    with pytest.raises(StorageError, match="invalid blob key"):
        blob_put(region="eu-west", key=key, data=b"x")
    assert not storage.exists()


def test_it_accepts_keys_of_the_allowed_characters(storage: Path) -> None:
    key = "Acme-Corp_1/asset.v2/..hidden-not/42"
    location = blob_put(region="eu-west", key=key, data=b"x")

    assert location == (storage / "eu-west" / key).as_uri()
    assert blob_get(location) == b"x"


@pytest.mark.parametrize("region", ["", "EU-west", "eu_west", "eu/west", "../eu", "-eu", "eu-", "e" * 41])
def test_it_rejects_invalid_regions(storage: Path, region: str) -> None:
    with pytest.raises(StorageError, match="invalid region code"):
        blob_put(region=region, key="acme/42", data=b"x")
    assert not storage.exists()


def test_it_keeps_each_region_in_its_own_directory(storage: Path) -> None:
    eu = blob_put(region="eu-west", key="acme/42", data=b"eu bytes")
    us = blob_put(region="us-east", key="acme/42", data=b"us bytes")

    assert eu != us
    assert (storage / "eu-west" / "acme" / "42").read_bytes() == b"eu bytes"
    assert (storage / "us-east" / "acme" / "42").read_bytes() == b"us bytes"
    assert sorted(os.listdir(storage)) == ["eu-west", "us-east"]


def test_it_fills_the_region_in_wherever_the_url_puts_it(settings: Settings, tmp_path: Path) -> None:
    settings.LADDER_STORAGE_URL = (tmp_path / "data").as_uri() + "/ladder-{region}/assets"

    location = blob_put(region="eu-west", key="acme/42", data=b"x")

    assert location == (tmp_path / "data" / "ladder-eu-west" / "assets" / "acme" / "42").as_uri()


def test_it_reads_a_location_after_the_setting_changes(settings: Settings, tmp_path: Path) -> None:
    settings.LADDER_STORAGE_URL = (tmp_path / "old").as_uri() + "/{region}"
    old = blob_put(region="eu-west", key="acme/42", data=b"written before")

    settings.LADDER_STORAGE_URL = (tmp_path / "new").as_uri() + "/{region}"
    new = blob_put(region="eu-west", key="acme/43", data=b"written after")

    assert new.startswith((tmp_path / "new").as_uri())
    assert blob_get(old) == b"written before"
    assert blob_exists(old)
    assert blob_delete(old) is True
    assert blob_get(new) == b"written after"


def test_it_handles_a_storage_directory_with_spaces(settings: Settings, tmp_path: Path) -> None:
    settings.LADDER_STORAGE_URL = (tmp_path / "my blobs").as_uri() + "/{region}"

    location = blob_put(region="eu-west", key="acme/42", data=b"x")

    assert "%20" in location
    assert (tmp_path / "my blobs" / "eu-west" / "acme" / "42").read_bytes() == b"x"
    assert blob_get(location) == b"x"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///var/lib/ladder", "no {region} placeholder"),
        ("s3://ladder/assets", "no {region} placeholder"),
        ("ftp://example.invalid/{region}", "unknown scheme 'ftp'"),
        ("/var/lib/ladder/{region}", "unknown scheme ''"),
        ("file://otherhost/{region}", "not a local absolute path"),
        ("file:relative/{region}", "not a local absolute path"),
        ("file:///var/lib/../{region}", "must not contain '..'"),
        ("s3://Ladder_{region}/assets", "not a valid bucket name"),
        ("s3:///{region}", "not a valid bucket name"),
        ("s3://ladder-{region}/assets?x=1", "query or fragment"),
    ],
)
def test_it_rejects_a_bad_storage_url_with_a_clear_message(settings: Settings, url: str, message: str) -> None:
    settings.LADDER_STORAGE_URL = url

    with pytest.raises(StorageError, match="LADDER_STORAGE_URL") as raised:
        blob_put(region="eu-west", key="acme/42", data=b"x")
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "location",
    [
        "",
        "acme/42",
        "/abs/acme/42",
        "http://example.invalid/acme/42",
        "file://otherhost/acme/42",
        "file:///var/lib/ladder/../etc/passwd",
        "s3://ladder-eu-west",
        "s3://ladder-eu-west/",
        "s3://NotABucket/acme/42",
    ],
)
def test_it_rejects_what_is_not_a_blob_location(location: str) -> None:
    for operation in (blob_get, blob_delete, blob_exists):
        with pytest.raises(StorageError, match="not a blob location"):
            operation(location)


def test_it_does_not_import_boto3_for_the_local_backend(tmp_path: Path) -> None:
    script = (
        "import sys, django; django.setup()\n"
        "from compliance.storage import blob_get, blob_put\n"
        "assert blob_get(blob_put(region='eu-west', key='acme/42', data=b'x')) == b'x'\n"
        "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules, 'boto3 was imported'\n"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "LADDER_STORAGE_URL": tmp_path.as_uri() + "/{region}",
    }
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "eu-west" / "acme" / "42").read_bytes() == b"x"


# --- S3 backend, over HTTP ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto S3 server on a free loopback port, for the whole module."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_endpoint: str, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Client:
    """An empty moto server with a bucket per region, the settings pointed at it; returns a raw client to check."""
    # Dummy credentials, and none of the developer's own files or instance metadata.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10).raise_for_status()
    settings.LADDER_S3_ENDPOINT_URL = moto_endpoint
    settings.LADDER_STORAGE_URL = S3_URL
    client = boto3.session.Session().client("s3", endpoint_url=moto_endpoint)
    for region in REGIONS:
        client.create_bucket(Bucket=f"ladder-{region}")
    return client


def test_it_round_trips_a_blob_through_s3(s3: S3Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        location = blob_put(region="eu-west", key="acme/42", data=b"\x02ciphertext\x00")
        assert blob_get(location) == b"\x02ciphertext\x00"
        assert blob_exists(location)

    assert location == "s3://ladder-eu-west/assets/acme/42"
    stored = s3.get_object(Bucket="ladder-eu-west", Key="assets/acme/42")
    assert stored["Body"].read() == b"\x02ciphertext\x00"
    # The server's own request log: the calls crossed HTTP, path-style.
    requests_seen = caplog.text
    for method in ("PUT", "GET", "HEAD"):
        assert f'"{method} /ladder-eu-west/assets/acme/42 HTTP/1.1" 200' in requests_seen


def test_it_makes_one_client_per_endpoint(s3: S3Client, settings: Settings, moto_endpoint: str) -> None:
    first = storage_module._s3_client()
    assert storage_module._s3_client() is first
    settings.LADDER_S3_ENDPOINT_URL = moto_endpoint + "/"
    assert storage_module._s3_client() is not first


def test_it_overwrites_a_blob_in_s3(s3: S3Client) -> None:
    blob_put(region="eu-west", key="acme/42", data=b"old")
    location = blob_put(region="eu-west", key="acme/42", data=b"new content")

    assert blob_get(location) == b"new content"
    assert [item["Key"] for item in s3.list_objects_v2(Bucket="ladder-eu-west")["Contents"]] == ["assets/acme/42"]


def test_it_raises_blob_missing_for_an_s3_location_that_holds_nothing(s3: S3Client) -> None:
    location = "s3://ladder-eu-west/assets/acme/404"

    with pytest.raises(BlobMissing, match="no blob at s3://ladder-eu-west/assets/acme/404"):
        blob_get(location)
    assert not blob_exists(location)


def test_it_deletes_from_s3_idempotently(s3: S3Client) -> None:
    location = blob_put(region="eu-west", key="acme/42", data=b"bytes")

    assert blob_delete(location) is True
    assert blob_delete(location) is False
    assert not blob_exists(location)
    with pytest.raises(BlobMissing):
        blob_get(location)
    assert s3.list_objects_v2(Bucket="ladder-eu-west")["KeyCount"] == 0


def test_it_keeps_each_region_in_its_own_bucket(s3: S3Client) -> None:
    eu = blob_put(region="eu-west", key="acme/42", data=b"eu bytes")
    us = blob_put(region="us-east", key="acme/42", data=b"us bytes")

    assert (eu, us) == ("s3://ladder-eu-west/assets/acme/42", "s3://ladder-us-east/assets/acme/42")
    assert s3.get_object(Bucket="ladder-eu-west", Key="assets/acme/42")["Body"].read() == b"eu bytes"
    assert s3.get_object(Bucket="ladder-us-east", Key="assets/acme/42")["Body"].read() == b"us bytes"


def test_it_stores_at_the_bucket_root_without_a_prefix(s3: S3Client, settings: Settings) -> None:
    settings.LADDER_STORAGE_URL = "s3://ladder-{region}"

    location = blob_put(region="eu-west", key="acme/42", data=b"x")

    assert location == "s3://ladder-eu-west/acme/42"
    assert blob_get(location) == b"x"


def test_it_reports_a_missing_bucket_as_a_storage_error(s3: S3Client) -> None:
    with pytest.raises(StorageError, match="bucket does not exist") as raised:
        blob_put(region="ap-south", key="acme/42", data=b"x")
    assert not isinstance(raised.value, BlobMissing)
    with pytest.raises(StorageError, match="bucket does not exist") as raised:
        blob_get("s3://ladder-ap-south/assets/acme/42")
    assert not isinstance(raised.value, BlobMissing)


def test_it_reads_each_location_through_its_own_backend_after_the_setting_changes(
    s3: S3Client, settings: Settings, tmp_path: Path
) -> None:
    in_s3 = blob_put(region="eu-west", key="acme/42", data=b"in s3")

    settings.LADDER_STORAGE_URL = tmp_path.as_uri() + "/{region}"
    on_disk = blob_put(region="eu-west", key="acme/43", data=b"on disk")

    assert on_disk.startswith("file:///")
    assert blob_get(in_s3) == b"in s3"
    assert blob_get(on_disk) == b"on disk"
    assert blob_delete(in_s3) is True
    assert not blob_exists(in_s3)


def test_it_reports_an_unreachable_endpoint_as_a_storage_error(s3: S3Client, settings: Settings) -> None:
    location = blob_put(region="eu-west", key="acme/42", data=b"x")
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    settings.LADDER_S3_ENDPOINT_URL = "http://127.0.0.1:9"

    with pytest.raises(StorageError, match="cannot reach s3://ladder-eu-west/assets/acme/42") as raised:
        blob_get(location)
    assert not isinstance(raised.value, BlobMissing)
