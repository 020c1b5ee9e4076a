from decimal import Decimal

import pytest

from ledger.money import parse_amount, round_cents, split_evenly


@pytest.mark.parametrize(
    "text, value",
    [
        ("1", "1"), ("$1", "1"), ("1,234.50", "1234.50"), ("$1,234.50", "1234.50"), ("(3.10)", "-3.10"),
        (" 7 ", "7"), ("0.01", "0.01"), ("$0", "0"), ("12,000", "12000"), ("(0.5)", "-0.5"),
    ],
)
def test_parse_amount(text, value):
    assert parse_amount(text) == Decimal(value)


@pytest.mark.parametrize("text", ["", "abc", "$", "1.2.3", "(x)"])
def test_parse_amount_error_message(text):
    with pytest.raises(ValueError, match="not an amount"):
        parse_amount(text)


@pytest.mark.parametrize(
    "value, cents", [("1.005", "1.01"), ("1.004", "1.00"), ("2.675", "2.68"), ("-1.005", "-1.01"), ("0", "0.00")]
)
def test_round_cents(value, cents):
    assert round_cents(value) == Decimal(cents)


@pytest.mark.parametrize("total, parts", [("10", 3), ("0.05", 2), ("100", 7), ("1", 1)])
def test_split_evenly_adds_up(total, parts):
    shares = split_evenly(Decimal(total), parts)
    assert sum(shares) == Decimal(total)
    assert max(shares) - min(shares) <= Decimal("0.01")


def test_split_evenly_error_on_zero_parts():
    with pytest.raises(ValueError):
        split_evenly(Decimal("1"), 0)
