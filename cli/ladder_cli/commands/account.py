"""Signing in and out: ``ladder login``, ``ladder logout``, ``ladder whoami``."""

from __future__ import annotations

import typer
from ladder_sdk.api.tenant import tenant_retrieve

from ladder_cli import choose, output
from ladder_cli.config import DEFAULT_URL, Credentials, config_path, credentials, forget, ladder_url, save
from ladder_cli.errors import USAGE, CliError
from ladder_cli.session import answer, client


def login(
    url: str = typer.Option(None, "--url", help=f"Ladder's address (default: LADDER_URL, or {DEFAULT_URL})."),
) -> None:
    """Sign in: check an API key against Ladder and store it for the next commands.

    The key is read from a hidden prompt (or stdin) and checked against /api/v1/tenant before it is stored, with
    mode 0600, in the user's config directory. LADDER_URL and LADDER_API_KEY override what is stored.

    Example: ladder login --url https://ladder.example.com
    """
    url = url.rstrip("/") if url else ladder_url()
    key = choose.hidden_input("API key (ldr_...)").strip()
    if not key:
        raise CliError("no API key given (create one in the portal under API keys)", USAGE)
    creds = Credentials(url=url, api_key=key)
    tenant = answer(tenant_retrieve.sync_detailed, client(creds))
    path = save(creds)
    output.err.print(
        f"Signed in to {tenant.name} ({tenant.slug}) at {url} with key {creds.shown_key}; stored in {path}.",
        highlight=False,
    )


def logout() -> None:
    """Forget the stored URL and API key (the key itself stays valid: revoke it with `ladder keys revoke`).

    Example: ladder logout
    """
    if forget():
        output.err.print(f"Signed out: {config_path()} removed.", highlight=False)
    else:
        output.err.print("Not signed in: nothing to forget.")


def whoami(as_json: bool = output.JSON) -> None:
    """Show the tenant the current key belongs to, and where Ladder is.

    Example: ladder whoami --json
    """
    creds = credentials()
    tenant = answer(tenant_retrieve.sync_detailed, client(creds))
    if as_json:
        output.emit_json({"url": creds.url, "key": creds.shown_key, "tenant": tenant.to_dict()})
        return
    output.fields([("Tenant", f"{tenant.name} ({tenant.slug})"), ("Ladder", creds.url), ("Key", creds.shown_key)])


def register(app: typer.Typer) -> None:
    app.command()(login)
    app.command()(logout)
    app.command()(whoami)
