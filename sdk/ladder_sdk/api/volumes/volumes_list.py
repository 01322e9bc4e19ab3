from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.paginated_volume_list import PaginatedVolumeList
from ...models.problem import Problem
from ...models.volume_kind_enum import VolumeKindEnum
from ...models.volume_state_enum import VolumeStateEnum
from ...types import UNSET, Response, Unset


def _get_kwargs(
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
        "url": "/api/v1/volumes",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PaginatedVolumeList | Problem | None:
    if response.status_code == 200:
        response_200 = PaginatedVolumeList.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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
) -> Response[PaginatedVolumeList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> Response[PaginatedVolumeList | Problem]:
    """The tenant's volumes: storage that outlives its allocations, in one region, under a data key of its
    own.
    A workload mounts one with ``{"volume": id, "mount_path": ..., "read_only": ...}`` in its
    ``volumes``.

    Args:
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
        Response[PaginatedVolumeList | Problem]
    """

    kwargs = _get_kwargs(
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
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> PaginatedVolumeList | Problem | None:
    """The tenant's volumes: storage that outlives its allocations, in one region, under a data key of its
    own.
    A workload mounts one with ``{"volume": id, "mount_path": ..., "read_only": ...}`` in its
    ``volumes``.

    Args:
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
        PaginatedVolumeList | Problem
    """

    return sync_detailed(
        client=client,
        cursor=cursor,
        kind=kind,
        page_size=page_size,
        region=region,
        state=state,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> Response[PaginatedVolumeList | Problem]:
    """The tenant's volumes: storage that outlives its allocations, in one region, under a data key of its
    own.
    A workload mounts one with ``{"volume": id, "mount_path": ..., "read_only": ...}`` in its
    ``volumes``.

    Args:
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
        Response[PaginatedVolumeList | Problem]
    """

    kwargs = _get_kwargs(
        cursor=cursor,
        kind=kind,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    kind: VolumeKindEnum | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: VolumeStateEnum | Unset = UNSET,
) -> PaginatedVolumeList | Problem | None:
    """The tenant's volumes: storage that outlives its allocations, in one region, under a data key of its
    own.
    A workload mounts one with ``{"volume": id, "mount_path": ..., "read_only": ...}`` in its
    ``volumes``.

    Args:
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
        PaginatedVolumeList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            cursor=cursor,
            kind=kind,
            page_size=page_size,
            region=region,
            state=state,
        )
    ).parsed
