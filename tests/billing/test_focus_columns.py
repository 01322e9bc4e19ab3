"""The columnar writers (billing.domain.focus_columns, billing.domain.focus_files) against the row-by-row reference
(billing.domain.focus.Rows), on generated ledgers: the CSV text byte for byte, the Parquet values exactly, summary and
detail, whatever the batch size (the cost carry goes on across batches)."""

from __future__ import annotations

import io
from decimal import Decimal
from unittest import mock

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.domain import focus, focus_columns, focus_files

OCT = 1_790_812_800_000  # 2026-10-01T00:00:00Z
HOUR = focus.HOUR_MS
TENANTS = [focus.Tenant(7, "acme", 'Acme, "Robotics"'), focus.Tenant(9, "globex", "Globex\nCorp")]
SKUS = [
    focus.Sku("container/H100/gpu/eu-west", "container", "gpu", "", "H100", "eu-west", "EU West", "usd"),
    focus.Sku("container/H100/mig-3g.40gb/eu-west", "container", "mig", "3g.40gb", "H100", "eu-west", "EU", "usd"),
    focus.Sku("bare_metal/H100/node/eu-west", "bare_metal", "node", "", "H100", "eu-west", "EU West", "eur"),
    focus.Sku("serverless/H100/gpu/eu-west", "serverless", "gpu", "", "H100", "eu-west", "EU West", "usd"),
    focus.Sku("storage/filesystem/eu-west", "", "gb", "", "", "eu-west", "EU West", "usd", "filesystem"),
    focus.Sku("storage/snapshot/eu-west", "", "gb", "", "", "eu-west", "EU West", "usd", "snapshot"),
]
RESOURCES = [
    focus.Resource(1, 'run, "1"', "container", "mig", "container", "eu-west-1a", {"image": "a/b:1"}),
    focus.Resource(2, "train", "serverless", "soft_share", "container", "eu-west-1b", {"kind": "job", "x": True}),
    # A volume and a snapshot with the allocation's id: a resource is its kind and its id.
    focus.Resource(1, "datasets", "", "", "", "", {"name": "datasets", "storage_kind": "filesystem"}, "volume"),
    focus.Resource(1, "before", "", "", "", "", {"name": "before", "volume": 1}, "snapshot"),
]

prices = st.one_of(
    st.just(focus.UNPRICED),
    st.builds(
        lambda micros, pk: focus.Price(pk, OCT - 30 * 24 * HOUR, Decimal(micros).scaleb(-6)),
        # up to 5,000 an hour, and now and then a price whose rows overflow 64-bit arithmetic
        st.integers(0, 5_000_000_000) | st.sampled_from([10**12, 7 * 10**11 + 1]),
        st.integers(1, 4),
    ),
    st.builds(  # storage's prices per GB-hour: ten places
        lambda units, pk: focus.Price(pk, OCT - 30 * 24 * HOUR, Decimal(units).scaleb(-10)),
        st.integers(0, 10**7) | st.sampled_from([958_904, 1_369_863]),
        st.integers(5, 6),
    ),
)


@st.composite
def ledgers(draw: st.DrawFn, detail: bool) -> list[focus.Charge]:
    """Charges in the export's order (tenant, SKU, hour, ...), one price per id, across a month's end."""
    by_id: dict[int | None, focus.Price] = {}
    charges = []
    for tenant in draw(st.lists(st.sampled_from(TENANTS), min_size=1, max_size=2, unique=True)):
        for sku in draw(st.lists(st.sampled_from(SKUS), min_size=1, max_size=3, unique=True)):
            hours = draw(st.lists(st.integers(-40, 24 * 31 + 40), min_size=1, max_size=30))
            for hour in sorted(hours):
                drawn = draw(prices)
                price = by_id.setdefault(drawn.id, drawn)
                seq = draw(st.integers(0, 2))
                charges.append(
                    focus.Charge(
                        tenant,
                        sku,
                        price,
                        OCT + hour * HOUR,
                        seq,
                        draw(st.integers(0, 3_600_000 * 64) | st.sampled_from([0, 10**13])),
                        OCT + hour * HOUR + draw(st.integers(0, 40 * 24 * HOUR)),
                        draw(st.integers(0, 3_600_000)),
                        draw(st.sampled_from(RESOURCES)) if detail else None,
                    )
                )
    return charges


def reference_csv(charges: list[focus.Charge]) -> str:
    rows = focus.Rows()
    return "".join(line + "\n" for line in [focus_files.HEADER, *(rows.csv_line(c) for c in charges)])


@settings(max_examples=150, deadline=None)
@given(data=st.data(), detail=st.booleans(), size=st.integers(1, 40))
def test_the_csv_is_byte_for_byte_the_reference(data, detail, size):
    charges = data.draw(ledgers(detail))
    out = io.BytesIO()
    assert focus_files.write_csv(out, focus_columns.batches(charges, size=size)) == len(charges)
    assert out.getvalue().decode() == reference_csv(charges)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), detail=st.booleans(), size=st.integers(1, 40), group=st.integers(1, 50))
def test_the_parquet_values_are_the_reference(data, detail, size, group, tmp_path_factory):
    charges = data.draw(ledgers(detail))
    path = tmp_path_factory.mktemp("parquet") / "x.parquet"
    assert focus_files.write_parquet(str(path), focus_columns.batches(charges, size=size), row_group=group) == len(
        charges
    )
    rows = focus.Rows()
    expected = [dict(zip(focus.COLUMN_NAMES, rows.values(c), strict=True)) for c in charges]
    assert pq.read_table(path).to_pylist() == expected


def test_the_carry_goes_on_across_batches_and_starts_again_for_each_tenant_and_sku():
    price = focus.Price(1, OCT, Decimal("0.000001"))  # a cost of 1/3600 of a cent per 1000 milli: carried rounding
    charges = [focus.Charge(tenant, SKUS[0], price, OCT + h * HOUR, 0, 1, 0) for tenant in TENANTS for h in range(10)]
    for size in (1, 3, 10, 20):
        out = io.BytesIO()
        focus_files.write_csv(out, focus_columns.batches(charges, size=size))
        assert out.getvalue().decode() == reference_csv(charges)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), size=st.integers(1, 40))
def test_combinations_too_many_to_pack_are_keyed_one_by_one(data, size):
    charges = data.draw(ledgers(detail=True))
    out = io.BytesIO()
    with mock.patch.object(focus_columns, "_PACK_LIMIT", 1):
        focus_files.write_csv(out, focus_columns.batches(charges, size=size))
    assert out.getvalue().decode() == reference_csv(charges)


def test_ordinary_rows_take_the_64_bit_path_and_huge_ones_python_integers():
    price = focus.Price(1, OCT, Decimal("2.49"))
    month = [focus.Charge(TENANTS[0], SKUS[0], price, OCT + h * HOUR, 0, 8 * 3_600_000, 0) for h in range(744)]
    [batch] = focus_columns.batches(month, size=1000)
    made = focus_columns.Columns().make(batch)
    assert not isinstance(made.cost, list)
    assert not isinstance(made.quantity, list)
    huge = [focus.Charge(TENANTS[0], SKUS[0], price, OCT, 0, 10**15, 0)]  # 690,000 a row: past 64 bits
    made = focus_columns.Columns().make(next(focus_columns.batches(huge)))
    assert made.cost == [focus.cost_units(10**15, 24_900_000_000)]
