from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.closure import Closure
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/tenant/close",
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Closure | Problem | None:
    if response.status_code == 200:
        response_200 = Closure.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Closure | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Closure | Problem]:
    """The owner closes the tenant: work stops, the final invoice and an export bundle are stored,
    everything else
    not held is scheduled for shredding, and at ``closes_at`` the tenant is closed for good. The steps
    run in the
    background (``step`` says where the closure is); GET shows the closure.

    Volumes are listed in the export bundle, not copied into it, and a closing tenant runs no work: copy
    out what
    you need from your volumes *before* closing. Their keys, then the volumes, are destroyed at
    ``closes_at``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Closure | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Closure | Problem | None:
    """The owner closes the tenant: work stops, the final invoice and an export bundle are stored,
    everything else
    not held is scheduled for shredding, and at ``closes_at`` the tenant is closed for good. The steps
    run in the
    background (``step`` says where the closure is); GET shows the closure.

    Volumes are listed in the export bundle, not copied into it, and a closing tenant runs no work: copy
    out what
    you need from your volumes *before* closing. Their keys, then the volumes, are destroyed at
    ``closes_at``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Closure | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Closure | Problem]:
    """The owner closes the tenant: work stops, the final invoice and an export bundle are stored,
    everything else
    not held is scheduled for shredding, and at ``closes_at`` the tenant is closed for good. The steps
    run in the
    background (``step`` says where the closure is); GET shows the closure.

    Volumes are listed in the export bundle, not copied into it, and a closing tenant runs no work: copy
    out what
    you need from your volumes *before* closing. Their keys, then the volumes, are destroyed at
    ``closes_at``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Closure | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Closure | Problem | None:
    """The owner closes the tenant: work stops, the final invoice and an export bundle are stored,
    everything else
    not held is scheduled for shredding, and at ``closes_at`` the tenant is closed for good. The steps
    run in the
    background (``step`` says where the closure is); GET shows the closure.

    Volumes are listed in the export bundle, not copied into it, and a closing tenant runs no work: copy
    out what
    you need from your volumes *before* closing. Their keys, then the volumes, are destroyed at
    ``closes_at``.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Closure | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
