import datetime
from http import HTTPStatus
from io import BytesIO
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.export_format_enum import ExportFormatEnum
from ...models.problem import Problem
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    *,
    detail: bool | Unset = UNSET,
    format_: ExportFormatEnum | Unset = UNSET,
    from_: datetime.date,
    tenant: str | Unset = UNSET,
    to: datetime.date,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["detail"] = detail

    json_format_: str | Unset = UNSET
    if not isinstance(format_, Unset):
        json_format_ = format_.value

    params["format"] = json_format_

    json_from_ = from_.isoformat()
    params["from"] = json_from_

    params["tenant"] = tenant

    json_to = to.isoformat()
    params["to"] = json_to

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/finance/exports",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> File | Problem | None:
    if response.status_code == 200:
        response_200 = File(payload=BytesIO(response.text))

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

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
    *,
    client: AuthenticatedClient,
    detail: bool | Unset = UNSET,
    format_: ExportFormatEnum | Unset = UNSET,
    from_: datetime.date,
    tenant: str | Unset = UNSET,
    to: datetime.date,
) -> Response[File | Problem]:
    """A small range's export, streamed and signed (a larger one is an export job: POST).

    Args:
        detail (bool | Unset):
        format_ (ExportFormatEnum | Unset): * `csv` - csv
            * `parquet` - parquet
        from_ (datetime.date):
        tenant (str | Unset):
        to (datetime.date):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | Problem]
    """

    kwargs = _get_kwargs(
        detail=detail,
        format_=format_,
        from_=from_,
        tenant=tenant,
        to=to,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    detail: bool | Unset = UNSET,
    format_: ExportFormatEnum | Unset = UNSET,
    from_: datetime.date,
    tenant: str | Unset = UNSET,
    to: datetime.date,
) -> File | Problem | None:
    """A small range's export, streamed and signed (a larger one is an export job: POST).

    Args:
        detail (bool | Unset):
        format_ (ExportFormatEnum | Unset): * `csv` - csv
            * `parquet` - parquet
        from_ (datetime.date):
        tenant (str | Unset):
        to (datetime.date):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | Problem
    """

    return sync_detailed(
        client=client,
        detail=detail,
        format_=format_,
        from_=from_,
        tenant=tenant,
        to=to,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    detail: bool | Unset = UNSET,
    format_: ExportFormatEnum | Unset = UNSET,
    from_: datetime.date,
    tenant: str | Unset = UNSET,
    to: datetime.date,
) -> Response[File | Problem]:
    """A small range's export, streamed and signed (a larger one is an export job: POST).

    Args:
        detail (bool | Unset):
        format_ (ExportFormatEnum | Unset): * `csv` - csv
            * `parquet` - parquet
        from_ (datetime.date):
        tenant (str | Unset):
        to (datetime.date):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | Problem]
    """

    kwargs = _get_kwargs(
        detail=detail,
        format_=format_,
        from_=from_,
        tenant=tenant,
        to=to,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    detail: bool | Unset = UNSET,
    format_: ExportFormatEnum | Unset = UNSET,
    from_: datetime.date,
    tenant: str | Unset = UNSET,
    to: datetime.date,
) -> File | Problem | None:
    """A small range's export, streamed and signed (a larger one is an export job: POST).

    Args:
        detail (bool | Unset):
        format_ (ExportFormatEnum | Unset): * `csv` - csv
            * `parquet` - parquet
        from_ (datetime.date):
        tenant (str | Unset):
        to (datetime.date):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            detail=detail,
            format_=format_,
            from_=from_,
            tenant=tenant,
            to=to,
        )
    ).parsed
