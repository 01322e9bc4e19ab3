from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.evidence_request import EvidenceRequest
from ...models.problem import Problem
from ...models.verdict import Verdict
from ...types import Response


def _get_kwargs(
    allocation_id: int,
    *,
    body: EvidenceRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/attestation/{allocation_id}/evidence".format(
            allocation_id=quote(str(allocation_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Verdict | None:
    if response.status_code == 200:
        response_200 = Verdict.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Verdict]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
    body: EvidenceRequest,
) -> Response[Problem | Verdict]:
    """Judge the evidence and record the verdict. Verified: the workload's secrets, sealed to the
    evidence's
    ``tee_pubkey``. Refused: 403 ``attestation_forged`` (not the host's, or for another allocation),
    ``attestation_refused`` (the host says it is not confidential), ``attestation_unverifiable`` (no key
    is
    registered for the host), or 409 ``attestation_stale`` (a nonce not issued for it, expired or used).

    Args:
        allocation_id (int):
        body (EvidenceRequest): Refuses, with 422 ``validation_error``, every field of the body it
            does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Verdict]
    """

    kwargs = _get_kwargs(
        allocation_id=allocation_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
    body: EvidenceRequest,
) -> Problem | Verdict | None:
    """Judge the evidence and record the verdict. Verified: the workload's secrets, sealed to the
    evidence's
    ``tee_pubkey``. Refused: 403 ``attestation_forged`` (not the host's, or for another allocation),
    ``attestation_refused`` (the host says it is not confidential), ``attestation_unverifiable`` (no key
    is
    registered for the host), or 409 ``attestation_stale`` (a nonce not issued for it, expired or used).

    Args:
        allocation_id (int):
        body (EvidenceRequest): Refuses, with 422 ``validation_error``, every field of the body it
            does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Verdict
    """

    return sync_detailed(
        allocation_id=allocation_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
    body: EvidenceRequest,
) -> Response[Problem | Verdict]:
    """Judge the evidence and record the verdict. Verified: the workload's secrets, sealed to the
    evidence's
    ``tee_pubkey``. Refused: 403 ``attestation_forged`` (not the host's, or for another allocation),
    ``attestation_refused`` (the host says it is not confidential), ``attestation_unverifiable`` (no key
    is
    registered for the host), or 409 ``attestation_stale`` (a nonce not issued for it, expired or used).

    Args:
        allocation_id (int):
        body (EvidenceRequest): Refuses, with 422 ``validation_error``, every field of the body it
            does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Verdict]
    """

    kwargs = _get_kwargs(
        allocation_id=allocation_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    allocation_id: int,
    *,
    client: AuthenticatedClient,
    body: EvidenceRequest,
) -> Problem | Verdict | None:
    """Judge the evidence and record the verdict. Verified: the workload's secrets, sealed to the
    evidence's
    ``tee_pubkey``. Refused: 403 ``attestation_forged`` (not the host's, or for another allocation),
    ``attestation_refused`` (the host says it is not confidential), ``attestation_unverifiable`` (no key
    is
    registered for the host), or 409 ``attestation_stale`` (a nonce not issued for it, expired or used).

    Args:
        allocation_id (int):
        body (EvidenceRequest): Refuses, with 422 ``validation_error``, every field of the body it
            does not declare as writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body
            ``share.mdoe``), together
            with the declared fields' own errors.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Verdict
    """

    return (
        await asyncio_detailed(
            allocation_id=allocation_id,
            client=client,
            body=body,
        )
    ).parsed
