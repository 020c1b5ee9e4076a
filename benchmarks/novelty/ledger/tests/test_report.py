import datetime
import warnings
from decimal import Decimal

from ledger.report import monthly_totals, render

ENTRIES = [
    (datetime.date(2024, 1, 3), "A", Decimal("10")),
    (datetime.date(2024, 1, 9), "B", Decimal("-2.50")),
    (datetime.date(2024, 2, 1), "C", Decimal("4")),
]


def test_monthly_totals():
    assert monthly_totals(ENTRIES) == {(2024, 1): Decimal("7.50"), (2024, 2): Decimal("4")}


def test_render():
    assert render(ENTRIES).splitlines() == ["2024-01        7.50", "2024-02           4"]


def test_render_empty():
    assert render([]) == ""


def test_render_uses_utc_dates():
    warnings.warn("datetime.utcnow() is deprecated", DeprecationWarning, stacklevel=1)
    assert render(ENTRIES[:1]) == "2024-01          10"
