from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_event import AuditEvent
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    seq: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/compliance/audit-events/{seq}".format(
            seq=quote(str(seq), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AuditEvent | Problem | None:
    if response.status_code == 200:
        response_200 = AuditEvent.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AuditEvent | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    seq: int,
    *,
    client: AuthenticatedClient,
) -> Response[AuditEvent | Problem]:
    """
    Args:
        seq (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditEvent | Problem]
    """

    kwargs = _get_kwargs(
        seq=seq,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    seq: int,
    *,
    client: AuthenticatedClient,
) -> AuditEvent | Problem | None:
    """
    Args:
        seq (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditEvent | Problem
    """

    return sync_detailed(
        seq=seq,
        client=client,
    ).parsed


async def asyncio_detailed(
    seq: int,
    *,
    client: AuthenticatedClient,
) -> Response[AuditEvent | Problem]:
    """
    Args:
        seq (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditEvent | Problem]
    """

    kwargs = _get_kwargs(
        seq=seq,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    seq: int,
    *,
    client: AuthenticatedClient,
) -> AuditEvent | Problem | None:
    """
    Args:
        seq (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditEvent | Problem
    """

    return (
        await asyncio_detailed(
            seq=seq,
            client=client,
        )
    ).parsed
