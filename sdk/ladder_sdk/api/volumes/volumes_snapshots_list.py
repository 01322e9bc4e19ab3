from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.paginated_snapshot_list import PaginatedSnapshotList
from ...models.problem import Problem
from ...models.volume_kind_enum import VolumeKindEnum
from ...models.volume_state_enum import VolumeStateEnum
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: int,
    *,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    json_kind: str | Unset = UNSET
    if not isinstance(kind, Unset):
        json_kind = kind.value

    params["kind"] = json_kind

    params["page_size"] = page_size

    params["region"] = region

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state.value

    params["state"] = json_state

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/volumes/{id}/snapshots".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PaginatedSnapshotList | Problem | None:
    if response.status_code == 200:
        response_200 = PaginatedSnapshotList.from_dict(response.json())

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


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[PaginatedSnapshotList | Problem]:
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
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> Response[PaginatedSnapshotList | Problem]:
    """The volume's snapshots, newest first.

    Args:
        id (int):
        cursor (str | Unset):
        kind (VolumeKindEnum | Unset): * `filesystem` - filesystem
            * `block` - block
        page_size (int | Unset):
        region (str | Unset):
        state (VolumeStateEnum | Unset): * `creating` - creating
            * `available` - available
            * `attached` - attached
            * `deleting` - deleting
            * `deleted` - deleted

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedSnapshotList | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        cursor=cursor,
        kind=kind,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> PaginatedSnapshotList | Problem | None:
    """The volume's snapshots, newest first.

    Args:
        id (int):
        cursor (str | Unset):
        kind (VolumeKindEnum | Unset): * `filesystem` - filesystem
            * `block` - block
        page_size (int | Unset):
        region (str | Unset):
        state (VolumeStateEnum | Unset): * `creating` - creating
            * `available` - available
            * `attached` - attached
            * `deleting` - deleting
            * `deleted` - deleted

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedSnapshotList | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        cursor=cursor,
        kind=kind,
        page_size=page_size,
        region=region,
        state=state,
    ).parsed


async def asyncio_detailed(
    id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> Response[PaginatedSnapshotList | Problem]:
    """The volume's snapshots, newest first.

    Args:
        id (int):
        cursor (str | Unset):
        kind (VolumeKindEnum | Unset): * `filesystem` - filesystem
            * `block` - block
        page_size (int | Unset):
        region (str | Unset):
        state (VolumeStateEnum | Unset): * `creating` - creating
            * `available` - available
            * `attached` - attached
            * `deleting` - deleting
            * `deleted` - deleted

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedSnapshotList | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        cursor=cursor,
        kind=kind,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: int,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> PaginatedSnapshotList | Problem | None:
    """The volume's snapshots, newest first.

    Args:
        id (int):
        cursor (str | Unset):
        kind (VolumeKindEnum | Unset): * `filesystem` - filesystem
            * `block` - block
        page_size (int | Unset):
        region (str | Unset):
        state (VolumeStateEnum | Unset): * `creating` - creating
            * `available` - available
            * `attached` - attached
            * `deleting` - deleting
            * `deleted` - deleted

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedSnapshotList | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            cursor=cursor,
            kind=kind,
            page_size=page_size,
            region=region,
            state=state,
        )
    ).parsed
