import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.paginated_audit_event_list import PaginatedAuditEventList
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    action: str | Unset = UNSET,
    actor: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    from_: datetime.datetime | Unset = UNSET,
    page_size: int | Unset = UNSET,
    target: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["action"] = action

    params["actor"] = actor

    params["cursor"] = cursor

    json_from_: str | Unset = UNSET
    if not isinstance(from_, Unset):
        json_from_ = from_.isoformat()
    params["from"] = json_from_

    params["page_size"] = page_size

    params["target"] = target

    params["tenant"] = tenant

    json_to: str | Unset = UNSET
    if not isinstance(to, Unset):
        json_to = to.isoformat()
    params["to"] = json_to

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/compliance/audit-events",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PaginatedAuditEventList | Problem | None:
    if response.status_code == 200:
        response_200 = PaginatedAuditEventList.from_dict(response.json())

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
) -> Response[PaginatedAuditEventList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    action: str | Unset = UNSET,
    actor: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    from_: datetime.datetime | Unset = UNSET,
    page_size: int | Unset = UNSET,
    target: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[PaginatedAuditEventList | Problem]:
    """
    Args:
        action (str | Unset):
        actor (str | Unset):
        cursor (str | Unset):
        from_ (datetime.datetime | Unset):
        page_size (int | Unset):
        target (str | Unset):
        tenant (str | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedAuditEventList | Problem]
    """

    kwargs = _get_kwargs(
        action=action,
        actor=actor,
        cursor=cursor,
        from_=from_,
        page_size=page_size,
        target=target,
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
    action: str | Unset = UNSET,
    actor: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    from_: datetime.datetime | Unset = UNSET,
    page_size: int | Unset = UNSET,
    target: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> PaginatedAuditEventList | Problem | None:
    """
    Args:
        action (str | Unset):
        actor (str | Unset):
        cursor (str | Unset):
        from_ (datetime.datetime | Unset):
        page_size (int | Unset):
        target (str | Unset):
        tenant (str | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedAuditEventList | Problem
    """

    return sync_detailed(
        client=client,
        action=action,
        actor=actor,
        cursor=cursor,
        from_=from_,
        page_size=page_size,
        target=target,
        tenant=tenant,
        to=to,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    action: str | Unset = UNSET,
    actor: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    from_: datetime.datetime | Unset = UNSET,
    page_size: int | Unset = UNSET,
    target: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> Response[PaginatedAuditEventList | Problem]:
    """
    Args:
        action (str | Unset):
        actor (str | Unset):
        cursor (str | Unset):
        from_ (datetime.datetime | Unset):
        page_size (int | Unset):
        target (str | Unset):
        tenant (str | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PaginatedAuditEventList | Problem]
    """

    kwargs = _get_kwargs(
        action=action,
        actor=actor,
        cursor=cursor,
        from_=from_,
        page_size=page_size,
        target=target,
        tenant=tenant,
        to=to,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    action: str | Unset = UNSET,
    actor: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    from_: datetime.datetime | Unset = UNSET,
    page_size: int | Unset = UNSET,
    target: str | Unset = UNSET,
    tenant: str | Unset = UNSET,
    to: datetime.datetime | Unset = UNSET,
) -> PaginatedAuditEventList | Problem | None:
    """
    Args:
        action (str | Unset):
        actor (str | Unset):
        cursor (str | Unset):
        from_ (datetime.datetime | Unset):
        page_size (int | Unset):
        target (str | Unset):
        tenant (str | Unset):
        to (datetime.datetime | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PaginatedAuditEventList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            action=action,
            actor=actor,
            cursor=cursor,
            from_=from_,
            page_size=page_size,
            target=target,
            tenant=tenant,
            to=to,
        )
    ).parsed
