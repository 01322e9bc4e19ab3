import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.usage import Usage
from ...models.usage_granularity_enum import UsageGranularityEnum
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    from_: datetime.datetime | Unset = UNSET,
    granularity: UsageGranularityEnum | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_from_: str | Unset = UNSET
    if not isinstance(from_, Unset):
        json_from_ = from_.isoformat()
    params["from"] = json_from_

    json_granularity: str | Unset = UNSET
    if not isinstance(granularity, Unset):
        json_granularity = granularity.value

    params["granularity"] = json_granularity

    json_to: str | Unset = UNSET
    if not isinstance(to, Unset):
        json_to = to.isoformat()
    params["to"] = json_to

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/usage",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Usage | None:
    if response.status_code == 200:
        response_200 = Usage.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Usage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    granularity: UsageGranularityEnum | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[Problem | Usage]:
    """The tenant's usage per SKU and hour (or day), including the open window so far.

    Args:
        from_ (datetime.datetime | Unset):
        granularity (UsageGranularityEnum | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Usage]
    """

    kwargs = _get_kwargs(
        from_=from_,
        granularity=granularity,
        to=to,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    granularity: UsageGranularityEnum | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Problem | Usage | None:
    """The tenant's usage per SKU and hour (or day), including the open window so far.

    Args:
        from_ (datetime.datetime | Unset):
        granularity (UsageGranularityEnum | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Usage
    """

    return sync_detailed(
        client=client,
        from_=from_,
        granularity=granularity,
        to=to,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    granularity: UsageGranularityEnum | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[Problem | Usage]:
    """The tenant's usage per SKU and hour (or day), including the open window so far.

    Args:
        from_ (datetime.datetime | Unset):
        granularity (UsageGranularityEnum | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Usage]
    """

    kwargs = _get_kwargs(
        from_=from_,
        granularity=granularity,
        to=to,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    from_: datetime.datetime | Unset = UNSET,
    granularity: UsageGranularityEnum | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Problem | Usage | None:
    """The tenant's usage per SKU and hour (or day), including the open window so far.

    Args:
        from_ (datetime.datetime | Unset):
        granularity (UsageGranularityEnum | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Usage
    """

    return (
        await asyncio_detailed(
            client=client,
            from_=from_,
            granularity=granularity,
            to=to,
        )
    ).parsed
