"""Credentials and secrets: ``ladder keys`` (API keys), ``ladder ssh-keys`` and ``ladder secrets``.

An API key's secret part is printed once, by ``keys create``; a secret's value is never printed at all. Neither is
ever read from the command line, where it would stay in the shell's history and in the process list.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from ladder_sdk.api.api_keys import api_keys_create, api_keys_destroy, api_keys_list
from ladder_sdk.api.secrets import secrets_create, secrets_destroy, secrets_list, secrets_update
from ladder_sdk.api.ssh_keys import ssh_keys_create, ssh_keys_destroy, ssh_keys_list
from ladder_sdk.models import (
    ApiKeyCreateRequest,
    ApiKeyScopeEnum,
    SecretCreateRequest,
    SecretValueRequest,
    SshKeyCreateRequest,
)

from ladder_cli import choose, output
from ladder_cli.choose import YES, confirm, one
from ladder_cli.commands.groups import group
from ladder_cli.config import credentials
from ladder_cli.errors import USAGE, CliError
from ladder_cli.session import answer, client, every

SCOPES = typer.Option(None, "--scope", help="read or write; repeat it for both (default: read and write).")
KEY_FILE = typer.Option(None, "--file", "-f", metavar="FILE", help="The public key file (default: read it from stdin).")


def when(moment: datetime | None) -> str:
    """A time as a person reads it in a table: UTC, to the minute."""
    return "" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}"


# --- API keys ---------------------------------------------------------------------------------------------------


def key_state(key: Any, now: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


def keys_list_command(as_json: bool) -> None:
    rows = list(every(api_keys_list.sync_detailed, client()))
    if as_json:
        output.emit_json(rows)
        return
    now = datetime.now(UTC)
    output.table(
        ("ID", "NAME", "PREFIX", "OWNER", "SCOPES", "STATE", "CREATED", "EXPIRES", "LAST USED"),
        (
            (
                key.id,
                key.name,
                key.prefix,
                key.owner,
                ",".join(map(str, key.scopes)),
                key_state(key, now),
                when(key.created_at),
                when(key.expires_at) or "never",
                when(key.last_used_at) or "never",
            )
            for key in rows
        ),
        empty="No API keys.",
    )


keys_app = group(
    "List, create and revoke API keys.\n\n"
    "Owners and admins see every key of the tenant; others see their own. `ladder keys` alone lists them.\n\n"
    "Example: ladder keys create ci --scope read",
    keys_list_command,
)


@keys_app.command("list")
def keys_list(as_json: bool = output.JSON) -> None:
    """List API keys: name, public prefix, owner, scopes, state, and when each was created, expires, was last used.

    Example: ladder keys list --json
    """
    keys_list_command(as_json)


def expiry(text: str | None) -> datetime | None:
    """--expires as an aware time: an ISO date or date-time, UTC unless it names its offset."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as error:
        raise CliError(
            f"--expires takes an ISO date or time, like 2027-01-31 or 2027-01-31T18:00Z: {error}", USAGE
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@keys_app.command("create")
def keys_create(
    name: str = typer.Argument(..., metavar="NAME", help="A name that says what the key is for."),
    scope: list[ApiKeyScopeEnum] = SCOPES,
    expires: str = typer.Option(
        None, "--expires", metavar="WHEN", help="When it stops working: ISO date or time, UTC by default."
    ),
    as_json: bool = output.JSON,
) -> None:
    """Create an API key and print it: this is the only time it is shown, so store it now.

    The key goes to stdout alone (or in --json, as `token`), the rest to stderr, so that
    `KEY=$(ladder keys create ci)` keeps it. A read key reads; a write key changes things too.

    Example: ladder keys create ci --scope read --expires 2027-01-31
    """
    scopes = list(dict.fromkeys(scope or [ApiKeyScopeEnum.READ, ApiKeyScopeEnum.WRITE]))
    body = ApiKeyCreateRequest(name=name, scopes=scopes, expires_at=expiry(expires))
    created = answer(api_keys_create.sync_detailed, client(), body=body)
    if as_json:
        output.emit_json(created)
    else:
        sys.stdout.write(created.token + "\n")
    output.err.print(
        f"API key {created.name} (id {created.id}, prefix {created.prefix}, {'+'.join(map(str, created.scopes))}) "
        "created. This is the only time it is shown: store it now.",
        highlight=False,
    )


@keys_app.command("revoke")
def keys_revoke(
    key: str = typer.Argument(
        ..., metavar="KEY", help="The key's id, name or public prefix (`ladder keys` lists them)."
    ),
    yes: bool = YES,
) -> None:
    """Revoke an API key: it stops working at once, for good (revoking twice is harmless).

    Example: ladder keys revoke ci --yes
    """
    api = client()
    found = one(
        every(api_keys_list.sync_detailed, api),
        key,
        "API key",
        "ladder keys lists them",
        keys=lambda item: (item.id, item.name, item.prefix),
        gone=lambda item: item.revoked_at is not None,
    )
    own = credentials().api_key.startswith(f"ldr_{found.prefix}_")
    warning = " (the key this command is using: ladder stops working with it)" if own else ""
    confirm(f"revoke API key {found.name} (id {found.id}, prefix {found.prefix}, owner {found.owner}){warning}", yes)
    answer(api_keys_destroy.sync_detailed, api, id=found.id)
    output.err.print(f"API key {found.name} (id {found.id}) revoked.", highlight=False)


# --- SSH keys ---------------------------------------------------------------------------------------------------


def ssh_keys_list_command(as_json: bool) -> None:
    rows = list(every(ssh_keys_list.sync_detailed, client()))
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("ID", "NAME", "TYPE", "BITS", "FINGERPRINT", "ADDED BY", "ADDED"),
        ((k.id, k.name, k.key_type, k.bits, k.fingerprint, k.created_by, when(k.created_at)) for k in rows),
        empty="No SSH keys: add one with `ladder ssh-keys add NAME -f ~/.ssh/id_ed25519.pub`.",
    )


ssh_keys_app = group(
    "List, add and remove the SSH public keys that bare metal, VMs and containers let in.\n\n"
    "A task file names them under `ssh_keys`. `ladder ssh-keys` alone lists them.\n\n"
    "Example: ladder ssh-keys add laptop -f ~/.ssh/id_ed25519.pub",
    ssh_keys_list_command,
)


@ssh_keys_app.command("list")
def ssh_keys_list_cli(as_json: bool = output.JSON) -> None:
    """List the tenant's SSH keys: name, type, size and fingerprint (as `ssh-keygen -l` prints it).

    Example: ladder ssh-keys list
    """
    ssh_keys_list_command(as_json)


def public_key(path: Path | None) -> str:
    """The public key's line, from the file or from stdin; a private key is refused before anything is sent."""
    if path is not None:
        try:
            text = path.expanduser().read_text()
        except (OSError, UnicodeDecodeError) as error:
            raise CliError(f"cannot read {path}: {error}", USAGE) from error
    elif sys.stdin.isatty():
        raise CliError("give the public key with -f ~/.ssh/id_ed25519.pub, or on stdin", USAGE)
    else:
        text = sys.stdin.read()
    if "PRIVATE KEY" in text:
        raise CliError("that is a private key: give the public one (the .pub file)", USAGE)
    line = text.strip()
    if not line:
        raise CliError("the public key is empty", USAGE)
    return line


@ssh_keys_app.command("add")
def ssh_keys_add(
    name: str = typer.Argument(..., metavar="NAME", help="A name for the key, like laptop."),
    file: Path = KEY_FILE,
    as_json: bool = output.JSON,
) -> None:
    """Add an SSH public key (ed25519, ECDSA, or RSA of 3072 bits or more) from a file or stdin.

    Example: ladder ssh-keys add laptop -f ~/.ssh/id_ed25519.pub
    """
    body = SshKeyCreateRequest(name=name, public_key=public_key(file))
    added = answer(ssh_keys_create.sync_detailed, client(), body=body)
    if as_json:
        output.emit_json(added)
    output.err.print(f"SSH key {added.name} added (id {added.id}, {added.fingerprint}).", highlight=False)


@ssh_keys_app.command("remove")
def ssh_keys_remove(
    key: str = typer.Argument(
        ..., metavar="KEY", help="The key's name, id or fingerprint (`ladder ssh-keys` lists them)."
    ),
    yes: bool = YES,
) -> None:
    """Remove an SSH key: new work cannot name it; work started with it keeps the copy it was given.

    Example: ladder ssh-keys remove laptop --yes
    """
    api = client()
    found = one(
        every(ssh_keys_list.sync_detailed, api),
        key,
        "SSH key",
        "ladder ssh-keys lists them",
        keys=lambda item: (item.id, item.name, item.fingerprint),
    )
    confirm(f"remove SSH key {found.name} (id {found.id}, {found.fingerprint})", yes)
    answer(ssh_keys_destroy.sync_detailed, api, id=found.id)
    output.err.print(f"SSH key {found.name} (id {found.id}) removed.", highlight=False)


# --- secrets ----------------------------------------------------------------------------------------------------


def secrets_list_command(as_json: bool) -> None:
    rows = list(every(secrets_list.sync_detailed, client()))
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ("NAME", "VERSION", "CREATED", "UPDATED", "UPDATED BY"),
        ((s.name, s.version, when(s.created_at), when(s.updated_at), s.updated_by) for s in rows),
        empty="No secrets: set one with `ladder secrets set NAME` (the value is read from stdin or a prompt).",
    )


secrets_app = group(
    "List, set and delete the tenant's secrets: names and dates only, a value is never shown.\n\n"
    "Work takes a secret as an environment variable by name (`secrets` in a task file). `ladder secrets` alone "
    "lists them.\n\n"
    'Example: printf %s "$HF_TOKEN" | ladder secrets set HF_TOKEN',
    secrets_list_command,
)


@secrets_app.command("list")
def secrets_list_cli(as_json: bool = output.JSON) -> None:
    """List the secrets: name, version and when each was created and last changed, and by whom. Never a value.

    Example: ladder secrets list --json
    """
    secrets_list_command(as_json)


def secret_value() -> str:
    """The value from stdin when it is not a terminal (one trailing newline dropped, as `echo` adds it), else from
    a hidden prompt asked twice. Never from the command line."""
    value = choose.hidden_input("Value", twice=True)
    if not value:
        raise CliError("the value is empty: give it on stdin or at the prompt", USAGE)
    return value


# Words after NAME are taken so as to refuse them without echoing them back, as a usage error would.
@secrets_app.command("set", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def secrets_set(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="An environment variable's name: letters, digits, _."),
) -> None:
    """Create a secret, or give an existing one a new value (its next version).

    The value is read from stdin when it is not a terminal (one trailing newline is dropped), otherwise from a
    hidden prompt, asked twice. It is never taken from the command line and never printed.

    Example: printf %s "$HF_TOKEN" | ladder secrets set HF_TOKEN
    """
    if ctx.args:
        raise CliError(
            "a secret's value is never taken from the command line, where it stays in the shell's history: give it "
            "on stdin or at the prompt (and consider it exposed)",
            USAGE,
        )
    value = secret_value()
    api = client()
    try:
        saved = answer(secrets_create.sync_detailed, api, body=SecretCreateRequest(name=name, value=value))
        done = "created"
    except CliError as error:
        if error.code != "secret_exists":
            raise
        saved = answer(secrets_update.sync_detailed, api, name=name, body=SecretValueRequest(value=value))
        done = "replaced"
    output.err.print(f"Secret {saved.name} {done} (version {saved.version}).", highlight=False)


@secrets_app.command("delete")
def secrets_delete(name: str = typer.Argument(..., metavar="NAME", help="The secret's name."), yes: bool = YES) -> None:
    """Delete a secret: its value is gone for good. Refused (secret_in_use) while live work names it.

    Example: ladder secrets delete HF_TOKEN --yes
    """
    confirm(f"delete secret {name} (its value is gone for good)", yes)
    answer(secrets_destroy.sync_detailed, client(), name=name)
    output.err.print(f"Secret {name} deleted.", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
    app.add_typer(ssh_keys_app, name="ssh-keys")
    app.add_typer(secrets_app, name="secrets")
