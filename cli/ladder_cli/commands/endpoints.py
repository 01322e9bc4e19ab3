"""Reaching work over HTTPS: ``ladder url`` (public ports and endpoints), ``ladder endpoint call``, a request as
the tenant's own code would send it, waking a serverless endpoint from zero replicas when it is idle, and
``ladder endpoint token`` / ``rotate-tokens``: the endpoint tokens the gateway checks itself."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import typer
from ladder_sdk import AuthenticatedClient
from ladder_sdk.api.allocations import allocations_retrieve
from ladder_sdk.api.endpoint_tokens import endpoint_tokens_create, endpoint_tokens_rotate
from ladder_sdk.models import EndpointTokenMintRequest
from ladder_sdk.types import UNSET

from ladder_cli import choose, output
from ladder_cli.errors import REFUSED, USAGE, CliError, refusal
from ladder_cli.session import answer, client, unreachable

# An idle endpoint's call is held while it cold-starts (LADDER_SERVERLESS_WAKE_WAIT_SECONDS, a minute by default),
# then answered 503 endpoint_waking with Retry-After, which session's transport waits for and tries again.
CALL_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
NOT_CALLABLE = frozenset({"stopping", "stopped", "failed"})
NAME = typer.Argument(..., metavar="NAME", help="The allocation's name (or its id).")

endpoint_app = typer.Typer(
    help="Serverless endpoints: call one as your own code would, with your API key.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def url(
    name: str = NAME,
    port: int = typer.Argument(None, metavar="[PORT]", help="Only this port's URL."),
    as_json: bool = output.JSON,
) -> None:
    """Print the public HTTPS URL of an allocation's public ports, or a serverless endpoint's URL.

    One URL a line; with several public ports, each line starts with its port. A port is public when the workload
    exposes it with `expose: public`.

    Example: ladder url notebook 8888
    """
    allocation = choose.allocation(client(), name)
    access = allocation.access
    urls = {int(p): u for p, u in access.urls.to_dict().items()}
    endpoint = access.endpoint if isinstance(access.endpoint, str) else None
    if port is not None:
        if port not in urls:
            public = ", ".join(map(str, sorted(urls))) or "none"
            raise CliError(f"port {port} of {allocation.name} is not public (public ports: {public})", REFUSED)
        urls = {port: urls[port]}
        endpoint = None
    if endpoint is None and not urls:
        raise CliError(
            f"{allocation.name} has no public URL (expose a port with `expose: public`, or run it serverless)",
            REFUSED,
        )
    if as_json:
        output.emit_json({"endpoint": endpoint, "urls": {str(p): u for p, u in sorted(urls.items())}})
        return
    if endpoint is not None:
        output.out.print(endpoint, highlight=False, markup=False)
    for number, address in sorted(urls.items()):
        line = address if len(urls) == 1 else f"{number} {address}"
        output.out.print(line, highlight=False, markup=False)


def request_body(data: str | None) -> bytes:
    """What --data gives: inline JSON, ``@file``, or ``@-`` for stdin; nothing: ``{}``."""
    if data is None:
        return b"{}"
    if data == "@-":
        return sys.stdin.buffer.read()
    if data.startswith("@"):
        path = Path(data[1:]).expanduser()
        try:
            return path.read_bytes()
        except OSError as error:
            raise CliError(f"--data {data}: cannot read {path} ({error.strerror})", USAGE) from error
    try:
        json.loads(data)
    except ValueError as error:
        raise CliError(f"--data is not JSON ({error}): give JSON, or @file for any other body", USAGE) from error
    return data.encode()


def endpoint_url(endpoint: str, path: str) -> str:
    """The endpoint's URL with ``path`` under it (``/v1/completions``)."""
    return endpoint if not path.strip("/") else endpoint.rstrip("/") + "/" + path.lstrip("/")


def _post(api: AuthenticatedClient, url: str, body: bytes) -> httpx.Response:
    """POST with the API key (the SDK client's own headers) and its retries: a 503 ``endpoint_waking`` is tried
    again after its Retry-After."""
    try:
        return api.get_httpx_client().post(
            url, content=body, headers={"Content-Type": "application/json"}, timeout=CALL_TIMEOUT
        )
    except httpx.TransportError as error:
        raise unreachable(url, error) from error


def _shown(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def call(
    name: str = typer.Argument(..., metavar="NAME", help="The serverless allocation's name (or its id)."),
    data: str = typer.Option(
        None, "--data", "-d", metavar="JSON|@FILE", help="The body: inline JSON, @file, or @- for stdin (default {})."
    ),
    path: str = typer.Option("", "--path", metavar="PATH", help="Under the endpoint's URL, such as /v1/completions."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the status, whether it woke, its cold start and the answer as one JSON object."
    ),
) -> None:
    """Call a serverless endpoint with your API key and print its answer.

    POSTs the body to the endpoint's URL (and --path under it). An idle endpoint (scaled to zero) is woken by
    the call, which is held while it cold-starts: the time it took is shown on stderr. --json prints the status,
    whether it woke, the cold start and the answer as one JSON object.

    Example: ladder endpoint call inference --path /v1/completions --data '{"prompt": "Hello", "max_tokens": 16}'
    """
    api = client()
    allocation = choose.allocation(api, name)
    endpoint = allocation.access.endpoint
    if not isinstance(endpoint, str):
        raise CliError(
            f"{allocation.name} is not a serverless endpoint (a {allocation.rung}; `ladder url` gives public ports)",
            REFUSED,
            "not_an_endpoint",
        )
    if str(allocation.state) in NOT_CALLABLE:
        raise CliError(f"{allocation.name} is {allocation.state}: it answers no calls", REFUSED, "endpoint_not_running")
    body = request_body(data)
    woke = str(allocation.state) == "idle"
    if woke:
        output.err.print(
            f"{allocation.name} is idle (scaled to zero): waking it; the call is held while it cold-starts.",
            highlight=False,
        )
    started = time.monotonic()
    holding = output.err.status(f"Waking {allocation.name}…") if woke else contextlib.nullcontext()
    with holding:
        response = _post(api, endpoint_url(endpoint, path), body)
    waited = time.monotonic() - started
    if not 200 <= response.status_code < 300:
        raise refusal(response.status_code, response.content)
    cold_start_ms = None
    if woke:
        cold_start_ms = answer(allocations_retrieve.sync_detailed, api, id=allocation.id).cold_start_ms
    if as_json:
        shown = {"status": response.status_code, "woke": woke, "cold_start_ms": cold_start_ms}
        output.emit_json({**shown, "body": _shown(response)})
    else:
        text = response.text
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    if woke:
        took = f"{cold_start_ms / 1000:.1f} s" if isinstance(cold_start_ms, int) else f"about {waited:.1f} s"
        output.err.print(f"woke in {took} (cold start)", highlight=False)


ENDPOINTS = typer.Argument(
    None, metavar="[NAME]...", help="The endpoints the token may call (names or ids); none: all of yours."
)


def token(
    names: list[str] = ENDPOINTS,
    ttl: int = typer.Option(None, "--ttl", metavar="SECONDS", help="How long it lives (default one hour)."),
    as_json: bool = output.JSON,
) -> None:
    """Mint an endpoint token and print it, for your code to send as `Authorization: Bearer <token>`.

    The gateway checks a token itself, so calls with it never wait on Ladder; an API key works too but is
    checked by Ladder on every call. A token lives an hour unless --ttl says otherwise (never past your key's
    expiry), and dies within the gateway's refresh (30 s) when any of your API keys is revoked or you rotate.

    Example: curl -H "Authorization: Bearer $(ladder endpoint token chat)" https://ldr-42.gpu.example.net/v1/models
    """
    api = client()
    ids = [choose.allocation(api, name).id for name in names or ()]
    body = EndpointTokenMintRequest(endpoints=ids or UNSET, ttl_seconds=UNSET if ttl is None else ttl)
    minted = answer(endpoint_tokens_create.sync_detailed, api, body=body)
    if as_json:
        output.emit_json(minted.to_dict())
        return
    output.out.print(minted.token, highlight=False, markup=False, soft_wrap=True)
    output.err.print(f"expires {minted.expires_at.isoformat()}", highlight=False)


def rotate_tokens(yes: bool = choose.YES) -> None:
    """Refuse every endpoint token minted so far (owners and admins).

    Your tenant's signing key moves on: tokens minted before are refused by the gateway within its refresh
    (30 s), tokens minted after pass at once. Revoking an API key does the same.

    Example: ladder endpoint rotate-tokens --yes
    """
    choose.confirm("rotate the endpoint token key (every token minted so far stops working)", yes)
    done = answer(endpoint_tokens_rotate.sync_detailed, client())
    output.out.print(
        f"rotated: tokens minted before are refused within {done.refused_within_seconds} s", highlight=False
    )


def register(app: typer.Typer) -> None:
    app.command()(url)
    endpoint_app.command("call")(call)
    endpoint_app.command("token")(token)
    endpoint_app.command("rotate-tokens")(rotate_tokens)
    app.add_typer(endpoint_app, name="endpoint")
