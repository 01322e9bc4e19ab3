from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_checkpoint import AuditCheckpoint
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/compliance/audit-checkpoints",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AuditCheckpoint | Problem | None:
    if response.status_code == 200:
        response_200 = AuditCheckpoint.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = AuditCheckpoint.from_dict(response.json())

        return response_201

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AuditCheckpoint | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[AuditCheckpoint | Problem]:
    """Sign the chain head now: 201 with the new checkpoint, or 200 with the latest one when the head has
    not moved since. Taking one appends one `audit.checkpoint` event, which the checkpoint covers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditCheckpoint | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> AuditCheckpoint | Problem | None:
    """Sign the chain head now: 201 with the new checkpoint, or 200 with the latest one when the head has
    not moved since. Taking one appends one `audit.checkpoint` event, which the checkpoint covers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditCheckpoint | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[AuditCheckpoint | Problem]:
    """Sign the chain head now: 201 with the new checkpoint, or 200 with the latest one when the head has
    not moved since. Taking one appends one `audit.checkpoint` event, which the checkpoint covers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditCheckpoint | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> AuditCheckpoint | Problem | None:
    """Sign the chain head now: 201 with the new checkpoint, or 200 with the latest one when the head has
    not moved since. Taking one appends one `audit.checkpoint` event, which the checkpoint covers.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditCheckpoint | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
