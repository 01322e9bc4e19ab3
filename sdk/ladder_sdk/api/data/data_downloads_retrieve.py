from http import HTTPStatus
from io import BytesIO
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.data_assets_format_enum import DataAssetsFormatEnum
from ...models.problem import Problem
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    asset_id: int,
    *,
    expires: str,
    format_: DataAssetsFormatEnum | Unset = UNSET,
    signature: str,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["expires"] = expires

    json_format_: str | Unset = UNSET
    if not isinstance(format_, Unset):
        json_format_ = format_.value

    params["format"] = json_format_

    params["signature"] = signature

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/data/downloads/{asset_id}".format(
            asset_id=quote(str(asset_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> File | Problem | None:
    if response.status_code == 200:
        response_200 = File(payload=BytesIO(response.content))

        return response_200

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[File | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    asset_id: int,
    *,
    client: AuthenticatedClient,
    expires: str,
    format_: DataAssetsFormatEnum | Unset = UNSET,
    signature: str,
) -> Response[File | Problem]:
    """A data asset's content behind a signed link (how a workload's init container fetches a dataset it
    mounts): the link is the credential, so no API key is asked. 403 ``download_refused`` for a wrong or
    expired link.

    Args:
        asset_id (int):
        expires (str):
        format_ (DataAssetsFormatEnum | Unset):
        signature (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | Problem]
    """

    kwargs = _get_kwargs(
        asset_id=asset_id,
        expires=expires,
        format_=format_,
        signature=signature,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    asset_id: int,
    *,
    client: AuthenticatedClient,
    expires: str,
    format_: DataAssetsFormatEnum | Unset = UNSET,
    signature: str,
) -> File | Problem | None:
    """A data asset's content behind a signed link (how a workload's init container fetches a dataset it
    mounts): the link is the credential, so no API key is asked. 403 ``download_refused`` for a wrong or
    expired link.

    Args:
        asset_id (int):
        expires (str):
        format_ (DataAssetsFormatEnum | Unset):
        signature (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | Problem
    """

    return sync_detailed(
        asset_id=asset_id,
        client=client,
        expires=expires,
        format_=format_,
        signature=signature,
    ).parsed


async def asyncio_detailed(
    asset_id: int,
    *,
    client: AuthenticatedClient,
    expires: str,
    format_: DataAssetsFormatEnum | Unset = UNSET,
    signature: str,
) -> Response[File | Problem]:
    """A data asset's content behind a signed link (how a workload's init container fetches a dataset it
    mounts): the link is the credential, so no API key is asked. 403 ``download_refused`` for a wrong or
    expired link.

    Args:
        asset_id (int):
        expires (str):
        format_ (DataAssetsFormatEnum | Unset):
        signature (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | Problem]
    """

    kwargs = _get_kwargs(
        asset_id=asset_id,
        expires=expires,
        format_=format_,
        signature=signature,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    asset_id: int,
    *,
    client: AuthenticatedClient,
    expires: str,
    format_: DataAssetsFormatEnum | Unset = UNSET,
    signature: str,
) -> File | Problem | None:
    """A data asset's content behind a signed link (how a workload's init container fetches a dataset it
    mounts): the link is the credential, so no API key is asked. 403 ``download_refused`` for a wrong or
    expired link.

    Args:
        asset_id (int):
        expires (str):
        format_ (DataAssetsFormatEnum | Unset):
        signature (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | Problem
    """

    return (
        await asyncio_detailed(
            asset_id=asset_id,
            client=client,
            expires=expires,
            format_=format_,
            signature=signature,
        )
    ).parsed
