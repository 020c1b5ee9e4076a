import datetime
from decimal import Decimal

import pytest

from ledger.categories import categorize, totals_by_category


@pytest.mark.parametrize(
    "payee, category",
    [
        ("City Grocer", "groceries"), ("Farmers Market", "groceries"), ("Corner Bakery", "groceries"),
        ("The Butcher", "groceries"), ("National Rail", "transport"), ("Bus Company", "transport"),
        ("Taxi 42", "transport"), ("Fuel Stop", "transport"), ("Rent June", "housing"),
        ("Water Board", "housing"), ("Power Ltd", "housing"), ("Gas Co", "housing"),
        ("Cinema Paradiso", "leisure"), ("Old Theatre", "leisure"), ("Museum Shop", "leisure"),
        ("Swimming Pool", "leisure"), ("Bookshop", "other"), ("Unknown", "other"),
    ],
)
def test_categorize(payee, category):
    assert categorize(payee) == category


def test_totals_by_category():
    entries = [
        (datetime.date(2024, 1, 1), "Grocer", Decimal("5")),
        (datetime.date(2024, 1, 2), "Bus", Decimal("2")),
        (datetime.date(2024, 1, 3), "Market", Decimal("1.50")),
    ]
    assert totals_by_category(entries) == {"groceries": Decimal("6.50"), "transport": Decimal("2")}


def test_totals_of_nothing():
    assert totals_by_category([]) == {}
