from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.node import Node
from ...models.node_action_request import NodeActionRequest
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    body: NodeActionRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/ops/nodes/{id}/fail".format(
            id=quote(str(id), safe=""),
        ),
    }

    if not isinstance(body, Unset):
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
    body: NodeActionRequest | Unset = UNSET,
) -> Response[Node | Problem]:
    """Record that a node has failed; it comes back only through quarantine.

    Args:
        id (int):
        body (NodeActionRequest | Unset): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
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
    body: NodeActionRequest | Unset = UNSET,
) -> Node | Problem | None:
    """Record that a node has failed; it comes back only through quarantine.

    Args:
        id (int):
        body (NodeActionRequest | Unset): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
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
    body: NodeActionRequest | Unset = UNSET,
) -> Response[Node | Problem]:
    """Record that a node has failed; it comes back only through quarantine.

    Args:
        id (int):
        body (NodeActionRequest | Unset): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
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
    body: NodeActionRequest | Unset = UNSET,
) -> Node | Problem | None:
    """Record that a node has failed; it comes back only through quarantine.

    Args:
        id (int):
        body (NodeActionRequest | Unset): Refuses, with 422 ``validation_error``, every field of
            the body it does not declare as writable, each
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
