from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.category_enum import CategoryEnum
from ...models.data_asset_state_enum import DataAssetStateEnum
from ...models.paginated_data_asset_list import PaginatedDataAssetList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    category: CategoryEnum | Unset = UNSET,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: DataAssetStateEnum | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_category: str | Unset = UNSET
    if not isinstance(category, Unset):
        json_category = category.value

    params["category"] = json_category

    params["cursor"] = cursor

    params["page_size"] = page_size

    params["region"] = region

    json_state: str | Unset = UNSET
    if not isinstance(state, Unset):
        json_state = state.value

    params["state"] = json_state

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/data-assets",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PaginatedDataAssetList | Problem | None:
    if response.status_code == 200:
        response_200 = PaginatedDataAssetList.from_dict(response.json())

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
) -> Response[PaginatedDataAssetList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    category: CategoryEnum | Unset = UNSET,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: DataAssetStateEnum | Unset = UNSET,
) -> Response[PaginatedDataAssetList | Problem]:
    """The tenant's data assets. Content is stored encrypted under a data key of each asset's own; deleting
    starts
    a waiting period (cancellable) after which the key is destroyed (crypto-shredding).

    Args:
        category (CategoryEnum | Unset): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        cursor (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (DataAssetStateEnum | Unset): * `live` - Live
            * `shredding` - Shredding
            * `shredded` - Shredded

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedDataAssetList | Problem]
    """

    kwargs = _get_kwargs(
        category=category,
        cursor=cursor,
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
    category: CategoryEnum | Unset = UNSET,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: DataAssetStateEnum | Unset = UNSET,
) -> PaginatedDataAssetList | Problem | None:
    """The tenant's data assets. Content is stored encrypted under a data key of each asset's own; deleting
    starts
    a waiting period (cancellable) after which the key is destroyed (crypto-shredding).

    Args:
        category (CategoryEnum | Unset): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        cursor (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (DataAssetStateEnum | Unset): * `live` - Live
            * `shredding` - Shredding
            * `shredded` - Shredded

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedDataAssetList | Problem
    """

    return sync_detailed(
        client=client,
        category=category,
        cursor=cursor,
        page_size=page_size,
        region=region,
        state=state,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    category: CategoryEnum | Unset = UNSET,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: DataAssetStateEnum | Unset = UNSET,
) -> Response[PaginatedDataAssetList | Problem]:
    """The tenant's data assets. Content is stored encrypted under a data key of each asset's own; deleting
    starts
    a waiting period (cancellable) after which the key is destroyed (crypto-shredding).

    Args:
        category (CategoryEnum | Unset): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        cursor (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (DataAssetStateEnum | Unset): * `live` - Live
            * `shredding` - Shredding
            * `shredded` - Shredded

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedDataAssetList | Problem]
    """

    kwargs = _get_kwargs(
        category=category,
        cursor=cursor,
        page_size=page_size,
        region=region,
        state=state,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    category: CategoryEnum | Unset = UNSET,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    region: str | Unset = UNSET,
    state: DataAssetStateEnum | Unset = UNSET,
) -> PaginatedDataAssetList | Problem | None:
    """The tenant's data assets. Content is stored encrypted under a data key of each asset's own; deleting
    starts
    a waiting period (cancellable) after which the key is destroyed (crypto-shredding).

    Args:
        category (CategoryEnum | Unset): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        cursor (str | Unset):
        page_size (int | Unset):
        region (str | Unset):
        state (DataAssetStateEnum | Unset): * `live` - Live
            * `shredding` - Shredding
            * `shredded` - Shredded

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedDataAssetList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            category=category,
            cursor=cursor,
            page_size=page_size,
            region=region,
            state=state,
        )
    ).parsed
