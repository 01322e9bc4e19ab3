"""A reservation's term as billing counts it (billing.domain.commitments): each month bills its part of the term, at
730 GPU-hours a GPU for a whole month."""

from datetime import UTC, datetime
from fractions import Fraction

from billing.domain.commitments import Commitment, billed_milli, committed_milli, months_met, utilisation

HOUR = 3_600_000


def test_a_month_bills_its_part_of_the_term_only():
    term = Commitment(7, gpus=8, starts_ms=10 * HOUR, ends_ms=100 * HOUR)
    assert term.sku == "reservation/7"
    assert committed_milli(term, 0, 50 * HOUR) == 8 * 40 * HOUR  # 40 of its hours fall in the period
    assert committed_milli(term, 50 * HOUR, 200 * HOUR) == 8 * 50 * HOUR
    assert committed_milli(term, 100 * HOUR, 200 * HOUR) == 0  # over
    assert committed_milli(term, 0, 10 * HOUR) == 0  # not begun


def test_utilisation_is_used_over_committed():
    assert utilisation(HOUR, 4 * HOUR) == 0.25
    assert utilisation(0, 0) is None


def ms(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1000)


def test_a_whole_month_bills_730_hours_a_gpu_whatever_its_length():
    year = Commitment(1, gpus=8, starts_ms=ms(2027, 1, 1), ends_ms=ms(2028, 1, 1))
    assert billed_milli(year, ms(2027, 2, 1), ms(2027, 3, 1)) == 8 * 730 * HOUR  # 28 days
    assert billed_milli(year, ms(2027, 3, 1), ms(2027, 4, 1)) == 8 * 730 * HOUR  # 31 days
    assert billed_milli(year, ms(2026, 1, 1), ms(2029, 1, 1)) == 12 * 8 * 730 * HOUR  # a year is 8,760 hours
    assert committed_milli(year, ms(2027, 2, 1), ms(2027, 3, 1)) == 8 * 28 * 24 * HOUR  # the time it covers


def test_a_partial_month_bills_its_share_of_the_month():
    term = Commitment(2, gpus=4, starts_ms=ms(2027, 4, 16), ends_ms=ms(2027, 6, 11))
    assert billed_milli(term, ms(2027, 4, 1), ms(2027, 5, 1)) == 4 * 730 * HOUR // 2  # 15 of April's 30 days
    assert billed_milli(term, ms(2027, 6, 1), ms(2027, 7, 1)) == 4 * 730 * HOUR // 3  # 10 of June's 30
    # A period that is not a month is cut into the months it meets: the same total.
    whole = billed_milli(term, ms(2027, 1, 1), ms(2028, 1, 1))
    assert whole == 4 * 730 * HOUR * (1 + Fraction(1, 2) + Fraction(1, 3))
    assert billed_milli(term, ms(2027, 4, 1), ms(2027, 5, 20)) + billed_milli(
        term, ms(2027, 5, 20), ms(2028, 1, 1)
    ) in (
        whole,
        whole - 1,  # each piece rounds down to the milli-unit-second
    )
    assert billed_milli(term, ms(2027, 6, 11), ms(2027, 7, 1)) == 0  # over
    assert list(months_met(ms(2027, 4, 16), ms(2027, 6, 11))) == [
        (ms(2027, 4, 1), ms(2027, 5, 1)),
        (ms(2027, 5, 1), ms(2027, 6, 1)),
        (ms(2027, 6, 1), ms(2027, 7, 1)),
    ]
