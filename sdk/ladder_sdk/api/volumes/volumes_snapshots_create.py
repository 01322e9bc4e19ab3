from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.snapshot import Snapshot
from ...models.snapshot_create_request import SnapshotCreateRequest
from ...types import Response


def _get_kwargs(
    id: int,
    *,
    body: SnapshotCreateRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/volumes/{id}/snapshots".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Snapshot | None:
    if response.status_code == 201:
        response_201 = Snapshot.from_dict(response.json())

        return response_201

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Snapshot]:
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
    body: SnapshotCreateRequest,
) -> Response[Problem | Snapshot]:
    """Take a snapshot (``creating`` until the backend has it; billed per GB-hour once ``ready``).

    Args:
        id (int):
        body (SnapshotCreateRequest): Refuses, with 422 ``validation_error``, every field of the
            body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Snapshot]
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
    body: SnapshotCreateRequest,
) -> Problem | Snapshot | None:
    """Take a snapshot (``creating`` until the backend has it; billed per GB-hour once ``ready``).

    Args:
        id (int):
        body (SnapshotCreateRequest): Refuses, with 422 ``validation_error``, every field of the
            body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Snapshot
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
    body: SnapshotCreateRequest,
) -> Response[Problem | Snapshot]:
    """Take a snapshot (``creating`` until the backend has it; billed per GB-hour once ``ready``).

    Args:
        id (int):
        body (SnapshotCreateRequest): Refuses, with 422 ``validation_error``, every field of the
            body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Snapshot]
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
    body: SnapshotCreateRequest,
) -> Problem | Snapshot | None:
    """Take a snapshot (``creating`` until the backend has it; billed per GB-hour once ``ready``).

    Args:
        id (int):
        body (SnapshotCreateRequest): Refuses, with 422 ``validation_error``, every field of the
            body it does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Snapshot
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
