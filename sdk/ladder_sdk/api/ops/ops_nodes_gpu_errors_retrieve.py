from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ops_nodes_gpu_errors_retrieve_response_200 import OpsNodesGpuErrorsRetrieveResponse200
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/ops/nodes/{id}/gpu-errors".format(
            id=quote(str(id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> OpsNodesGpuErrorsRetrieveResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = OpsNodesGpuErrorsRetrieveResponse200.from_dict(response.json())

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
) -> Response[OpsNodesGpuErrorsRetrieveResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Response[OpsNodesGpuErrorsRetrieveResponse200 | Problem]:
    """The node's GPUs' last XID as DCGM reports it through Prometheus, with NVIDIA's meaning, its class
    (application, informational, fatal) and whether it is recent (a fatal recent one quarantines the
    node):
    the node diagnosis's XID layer. ``unavailable`` says why when Prometheus does not answer.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsNodesGpuErrorsRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
) -> OpsNodesGpuErrorsRetrieveResponse200 | Problem | None:
    """The node's GPUs' last XID as DCGM reports it through Prometheus, with NVIDIA's meaning, its class
    (application, informational, fatal) and whether it is recent (a fatal recent one quarantines the
    node):
    the node diagnosis's XID layer. ``unavailable`` says why when Prometheus does not answer.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsNodesGpuErrorsRetrieveResponse200 | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
) -> Response[OpsNodesGpuErrorsRetrieveResponse200 | Problem]:
    """The node's GPUs' last XID as DCGM reports it through Prometheus, with NVIDIA's meaning, its class
    (application, informational, fatal) and whether it is recent (a fatal recent one quarantines the
    node):
    the node diagnosis's XID layer. ``unavailable`` says why when Prometheus does not answer.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[OpsNodesGpuErrorsRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
) -> OpsNodesGpuErrorsRetrieveResponse200 | Problem | None:
    """The node's GPUs' last XID as DCGM reports it through Prometheus, with NVIDIA's meaning, its class
    (application, informational, fatal) and whether it is recent (a fatal recent one quarantines the
    node):
    the node diagnosis's XID layer. ``unavailable`` says why when Prometheus does not answer.

    Args:
        id (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        OpsNodesGpuErrorsRetrieveResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
        )
    ).parsed
