from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/gateway/authorize",
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 200:
        response_200 = cast(Any, None)
        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """The gateway's check before it forwards a request: ``Host`` (or ``X-Forwarded-Host``) names what is
    called.
    A serverless endpoint (``ldr-<id>.<base domain>``) needs an API key of its tenant in
    ``Authorization``: 200,
    401 without a valid key, 403 with another tenant's key; 503 while it does not run. A public port
    (``ldr-<id>-<port>.<base domain>``) is public: 200 while the allocation exposes it. Any other host:
    403. Past
    the endpoint's calls a minute (its tenant's plan): 429 ``throttled`` with ``Retry-After``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """The gateway's check before it forwards a request: ``Host`` (or ``X-Forwarded-Host``) names what is
    called.
    A serverless endpoint (``ldr-<id>.<base domain>``) needs an API key of its tenant in
    ``Authorization``: 200,
    401 without a valid key, 403 with another tenant's key; 503 while it does not run. A public port
    (``ldr-<id>-<port>.<base domain>``) is public: 200 while the allocation exposes it. Any other host:
    403. Past
    the endpoint's calls a minute (its tenant's plan): 429 ``throttled`` with ``Retry-After``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """The gateway's check before it forwards a request: ``Host`` (or ``X-Forwarded-Host``) names what is
    called.
    A serverless endpoint (``ldr-<id>.<base domain>``) needs an API key of its tenant in
    ``Authorization``: 200,
    401 without a valid key, 403 with another tenant's key; 503 while it does not run. A public port
    (``ldr-<id>-<port>.<base domain>``) is public: 200 while the allocation exposes it. Any other host:
    403. Past
    the endpoint's calls a minute (its tenant's plan): 429 ``throttled`` with ``Retry-After``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """The gateway's check before it forwards a request: ``Host`` (or ``X-Forwarded-Host``) names what is
    called.
    A serverless endpoint (``ldr-<id>.<base domain>``) needs an API key of its tenant in
    ``Authorization``: 200,
    401 without a valid key, 403 with another tenant's key; 503 while it does not run. A public port
    (``ldr-<id>-<port>.<base domain>``) is public: 200 while the allocation exposes it. Any other host:
    403. Past
    the endpoint's calls a minute (its tenant's plan): 429 ``throttled`` with ``Retry-After``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
