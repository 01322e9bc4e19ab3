"""Key sources (core/keys.py): the environment, unchanged, and HashiCorp Vault's transit engine, exercised through
the real ``hvac`` client over HTTP against a local Vault (tests/fakes/vault.py). The master keys (and through them
tenant keys and tenant secrets), the audit signing key and the cluster credentials key are unwrapped at start; a
Vault that is down, refuses the token or has no such key stops the process with a message saying which."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from compliance.services.assets import master_ring, tenant_key
from compliance.services.secrets import secret_create, secret_values
from compliance.signing import audit_signer, signer_for
from core.keys import KeySourceError, key_setting, keys_load, unwrap
from provisioning.drivers.kubernetes.credentials import seal, unseal
from tests.fakes.vault import VaultServer
from tests.support import ROOT, SYSTEM


def b64key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


MASTER = f"m2:{b64key()},m1:{b64key()}"
SIGNING = b64key()
SECRETS = base64.urlsafe_b64encode(os.urandom(32)).decode()


@pytest.fixture
def vault() -> Iterator[VaultServer]:
    unwrap.cache_clear()
    with VaultServer() as server:
        yield server
    unwrap.cache_clear()


def use_vault(settings: Any, vault: VaultServer, **extra: str) -> None:
    settings.LADDER_KEY_SOURCE = "vault"
    settings.VAULT_ADDR = vault.url
    settings.VAULT_TOKEN = vault.token
    settings.VAULT_TRANSIT_MOUNT = "transit"
    settings.VAULT_TRANSIT_KEY = "ladder"
    settings.LADDER_MASTER_KEYS = vault.wrap("ladder", MASTER)
    settings.LADDER_AUDIT_SIGNING_KEY = vault.wrap("ladder", SIGNING)
    settings.LADDER_SECRETS_KEY = vault.wrap("ladder", SECRETS)
    for name, value in extra.items():
        setattr(settings, name, value)


def test_the_env_source_is_the_setting_as_it_was(settings: Any) -> None:
    settings.LADDER_MASTER_KEYS = MASTER
    settings.LADDER_AUDIT_SIGNING_KEY = ""
    assert settings.LADDER_KEY_SOURCE == "env"
    assert key_setting("LADDER_MASTER_KEYS") == MASTER
    assert key_setting("LADDER_AUDIT_SIGNING_KEY") == ""  # empty: derived from SECRET_KEY, as before
    assert master_ring().current_id == "m2"
    with pytest.raises(ValueError, match="not a key setting"):
        key_setting("SECRET_KEY")


def test_vault_unwraps_every_key_at_start_through_transit(settings: Any, vault: VaultServer, acme: Any) -> None:
    use_vault(settings, vault)
    assert settings.LADDER_MASTER_KEYS.startswith("vault:v1:")
    assert MASTER not in settings.LADDER_MASTER_KEYS
    vault.requests.clear()
    keys_load()
    assert vault.requests == [("POST", "/v1/transit/decrypt/ladder")] * 3
    assert key_setting("LADDER_MASTER_KEYS") == MASTER
    assert key_setting("LADDER_SECRETS_KEY") == SECRETS
    assert len(vault.requests) == 3  # unwrapped once per process, then kept in memory
    assert master_ring().current_id == "m2"
    assert audit_signer().key_id == signer_for(SIGNING, "unused").key_id
    sealed = seal({"token": "t"}, cluster="c1")
    # a tenant secret sealed under the unwrapped master keys opens with the same keys from the environment
    secret_create(tenant=acme, name="HF_TOKEN", value="hf_value", actor=SYSTEM)
    under_vault = tenant_key(acme)
    settings.LADDER_KEY_SOURCE = "env"
    settings.LADDER_MASTER_KEYS, settings.LADDER_SECRETS_KEY = MASTER, SECRETS
    assert tenant_key(acme) == under_vault
    assert secret_values(tenant=acme, names=["HF_TOKEN"]) == {"HF_TOKEN": "hf_value"}
    assert unseal(sealed, cluster="c1") == {"token": "t"}


def test_an_empty_setting_stays_the_derived_default(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault, LADDER_AUDIT_SIGNING_KEY="")
    vault.requests.clear()
    assert key_setting("LADDER_AUDIT_SIGNING_KEY") == ""
    assert vault.requests == []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_vault_down_says_so(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault, VAULT_ADDR=f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(KeySourceError, match=r"LADDER_MASTER_KEYS cannot be unwrapped: Vault does not answer at"):
        keys_load()


def test_a_sealed_vault_says_so(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault)
    vault.sealed = True
    with pytest.raises(KeySourceError, match="Vault is sealed or down"):
        keys_load()


def test_a_refused_token_says_so(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault, VAULT_TOKEN="s.someone-elses")
    with pytest.raises(KeySourceError, match=r"Vault refused the token \(403 permission denied\).*VAULT_TOKEN"):
        keys_load()


def test_an_unknown_transit_key_or_mount_says_so(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault, VAULT_TRANSIT_KEY="nope")
    with pytest.raises(KeySourceError, match=r"transit/decrypt/nope.*encryption key not found.*VAULT_TRANSIT_KEY"):
        keys_load()
    use_vault(settings, vault, VAULT_TRANSIT_MOUNT="secret")
    with pytest.raises(KeySourceError, match=r"no transit engine mounted at 'secret'.*VAULT_TRANSIT_MOUNT"):
        keys_load()


def test_a_value_that_is_not_wrapped_says_so(settings: Any, vault: VaultServer) -> None:
    use_vault(settings, vault, LADDER_MASTER_KEYS=MASTER)
    with pytest.raises(KeySourceError, match=r"LADDER_MASTER_KEYS is not a Vault transit ciphertext"):
        keys_load()
    with VaultServer() as other:
        use_vault(settings, vault, LADDER_MASTER_KEYS=other.wrap("ladder", MASTER))  # another Vault's key
    with pytest.raises(KeySourceError, match="message authentication failed"):
        keys_load()


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"DEBUG": "1", "PATH": os.environ.get("PATH", ""), "DATABASE_URL": "sqlite:///:memory:"}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_process_starts_only_with_its_keys(vault: VaultServer) -> None:
    wrapped = {
        "LADDER_KEY_SOURCE": "vault",
        "VAULT_ADDR": vault.url,
        "VAULT_TOKEN": vault.token,
        "LADDER_MASTER_KEYS": vault.wrap("ladder", MASTER),
        "LADDER_AUDIT_SIGNING_KEY": vault.wrap("ladder", SIGNING),
    }
    started = _start(wrapped)
    assert started.returncode == 0, started.stderr
    assert vault.requests.count(("POST", "/v1/transit/decrypt/ladder")) == 2
    refused = _start({**wrapped, "VAULT_TOKEN": "s.revoked"})
    assert refused.returncode != 0
    assert "LADDER_MASTER_KEYS cannot be unwrapped: Vault refused the token (403 permission denied)" in refused.stderr
    missing = _start({"LADDER_KEY_SOURCE": "vault", "VAULT_ADDR": vault.url})
    assert "LADDER_KEY_SOURCE=vault needs VAULT_ADDR and VAULT_TOKEN" in missing.stderr
