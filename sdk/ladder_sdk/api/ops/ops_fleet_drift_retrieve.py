from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ops_fleet_drift_retrieve_response_200 import OpsFleetDriftRetrieveResponse200
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/ops/fleet/drift",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> OpsFleetDriftRetrieveResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = OpsFleetDriftRetrieveResponse200.from_dict(response.json())

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

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[OpsFleetDriftRetrieveResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[OpsFleetDriftRetrieveResponse200 | Problem]:
    """Nodes that differ from their model's target (which fields, the node's value and the target's), and
    nodes
    that read ``unknown`` for any version (never published: docs/kubernetes.md), failed nodes aside.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsFleetDriftRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> OpsFleetDriftRetrieveResponse200 | Problem | None:
    """Nodes that differ from their model's target (which fields, the node's value and the target's), and
    nodes
    that read ``unknown`` for any version (never published: docs/kubernetes.md), failed nodes aside.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsFleetDriftRetrieveResponse200 | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[OpsFleetDriftRetrieveResponse200 | Problem]:
    """Nodes that differ from their model's target (which fields, the node's value and the target's), and
    nodes
    that read ``unknown`` for any version (never published: docs/kubernetes.md), failed nodes aside.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsFleetDriftRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> OpsFleetDriftRetrieveResponse200 | Problem | None:
    """Nodes that differ from their model's target (which fields, the node's value and the target's), and
    nodes
    that read ``unknown`` for any version (never published: docs/kubernetes.md), failed nodes aside.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsFleetDriftRetrieveResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
