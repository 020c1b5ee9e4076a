"""Guess an entry's category from its payee."""

RULES = {
    "groceries": ("grocer", "market", "bakery", "butcher"),
    "transport": ("rail", "bus", "taxi", "fuel"),
    "housing": ("rent", "water", "power", "gas co"),
    "leisure": ("cinema", "theatre", "museum", "pool"),
}


def categorize(payee):
    name = payee.lower()
    for category, words in RULES.items():
        if any(word in name for word in words):
            return category
    return "other"


def totals_by_category(entries):
    totals = {}
    for _date, payee, amount in entries:
        key = categorize(payee)
        totals[key] = totals.get(key, 0) + amount
    return totals
