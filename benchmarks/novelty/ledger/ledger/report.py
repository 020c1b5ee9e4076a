"""Monthly totals and a plain-text report."""

from collections import defaultdict
from decimal import Decimal


def monthly_totals(entries):
    totals = defaultdict(Decimal)
    for date, _payee, amount in entries:
        totals[(date.year, date.month)] += amount
    return dict(sorted(totals.items()))


def render(entries):
    lines = []
    for (year, month), total in monthly_totals(entries).items():
        lines.append(f"{year}-{month:02d}  {total:>10}")
    return "\n".join(lines)
