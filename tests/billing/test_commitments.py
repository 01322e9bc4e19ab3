"""A reservation's term as billing counts it (billing.domain.commitments): each month bills its part of the term."""

from billing.domain.commitments import Commitment, committed_milli, utilisation

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
