"""Amounts of money as Decimals."""

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation


def parse_amount(text):
    """'$1,234.50' -> Decimal('1234.50'); ValueError if it is not an amount."""
    cleaned = text.strip().replace(",", "").removeprefix("$")
    negative = cleaned.startswith("(") and cleaned.endswith(")")
    if negative:
        cleaned = cleaned[1:-1]
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    return -value if negative else value


def round_cents(value):
    """Round half up to cents."""
    return Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def split_evenly(total, parts):
    """Split ``total`` into ``parts`` amounts that differ by at most a cent and add up to it."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    cents = int(round_cents(total) * 100)
    base, extra = divmod(cents, parts)
    return [Decimal(base + (1 if i < extra else 0)) / 100 for i in range(parts)]
