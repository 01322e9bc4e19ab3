from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node import Node
from ...models.problem import Problem
from ...models.xid_inject_request import XidInjectRequest
from ...types import Response


def _get_kwargs(
    id: int,
    *,
    body: XidInjectRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/ops/nodes/{id}/xid".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Node | Problem | None:
    if response.status_code == 200:
        response_200 = Node.from_dict(response.json())

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

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Node | Problem]:
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
    body: XidInjectRequest,
) -> Response[Node | Problem]:
    """The simulated fleet: one of the node's GPUs reports this XID as its last (as DCGM would once the
    driver
    logged it); a fatal one quarantines the node at the next reconcile and its work is placed elsewhere
    (docs/telemetry.md, "XID errors"). 409 ``not_simulated`` on Kubernetes, whose GPUs report their own.

    Args:
        id (int):
        body (XidInjectRequest): Refuses, with 422 ``validation_error``, every field of the body
            it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Node | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    body: XidInjectRequest,
) -> Node | Problem | None:
    """The simulated fleet: one of the node's GPUs reports this XID as its last (as DCGM would once the
    driver
    logged it); a fatal one quarantines the node at the next reconcile and its work is placed elsewhere
    (docs/telemetry.md, "XID errors"). 409 ``not_simulated`` on Kubernetes, whose GPUs report their own.

    Args:
        id (int):
        body (XidInjectRequest): Refuses, with 422 ``validation_error``, every field of the body
            it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Node | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    body: XidInjectRequest,
) -> Response[Node | Problem]:
    """The simulated fleet: one of the node's GPUs reports this XID as its last (as DCGM would once the
    driver
    logged it); a fatal one quarantines the node at the next reconcile and its work is placed elsewhere
    (docs/telemetry.md, "XID errors"). 409 ``not_simulated`` on Kubernetes, whose GPUs report their own.

    Args:
        id (int):
        body (XidInjectRequest): Refuses, with 422 ``validation_error``, every field of the body
            it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Node | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    body: XidInjectRequest,
) -> Node | Problem | None:
    """The simulated fleet: one of the node's GPUs reports this XID as its last (as DCGM would once the
    driver
    logged it); a fatal one quarantines the node at the next reconcile and its work is placed elsewhere
    (docs/telemetry.md, "XID errors"). 409 ``not_simulated`` on Kubernetes, whose GPUs report their own.

    Args:
        id (int):
        body (XidInjectRequest): Refuses, with 422 ``validation_error``, every field of the body
            it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Node | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
