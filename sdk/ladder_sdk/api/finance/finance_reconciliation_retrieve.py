from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.finance_reconciliation_retrieve_response_200 import FinanceReconciliationRetrieveResponse200
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    month: str,
    tenant: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["month"] = month

    params["tenant"] = tenant

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/finance/reconciliation",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> FinanceReconciliationRetrieveResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = FinanceReconciliationRetrieveResponse200.from_dict(response.json())

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
) -> Response[FinanceReconciliationRetrieveResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    month: str,
    tenant: str | Unset = UNSET,
) -> Response[FinanceReconciliationRetrieveResponse200 | Problem]:
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x
    SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few
    requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`.

    Args:
        month (str):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FinanceReconciliationRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        month=month,
        tenant=tenant,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    month: str,
    tenant: str | Unset = UNSET,
) -> FinanceReconciliationRetrieveResponse200 | Problem | None:
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x
    SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few
    requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`.

    Args:
        month (str):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FinanceReconciliationRetrieveResponse200 | Problem
    """

    return sync_detailed(
        client=client,
        month=month,
        tenant=tenant,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    month: str,
    tenant: str | Unset = UNSET,
) -> Response[FinanceReconciliationRetrieveResponse200 | Problem]:
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x
    SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few
    requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`.

    Args:
        month (str):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FinanceReconciliationRetrieveResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        month=month,
        tenant=tenant,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    month: str,
    tenant: str | Unset = UNSET,
) -> FinanceReconciliationRetrieveResponse200 | Problem | None:
    """The month's ledger against what the outbox sent, Stripe's meters and Stripe's invoices, per tenant x
    SKU x
    price, with every difference and its cause (`pending_push`, `failed_push`, `late_adjustment`,
    `rounding_carry`, `unexplained`); `clean` is true when none is unexplained. Reads Stripe live (a few
    requests
    per tenant and price); without Stripe configured, `mode` is `ledger_only`.

    Args:
        month (str):
        tenant (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FinanceReconciliationRetrieveResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            month=month,
            tenant=tenant,
        )
    ).parsed
