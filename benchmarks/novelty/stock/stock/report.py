"""Text reports of a shelf."""

from __future__ import annotations

from collections.abc import Iterable

from .items import Item, Shelf


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def lines(shelf: Shelf) -> list[str]:
    out = []
    for sku in sorted(shelf.counts):
        item = shelf.items[sku]
        out.append(f"{item.sku:<8} {item.name:<20} {shelf.counts[sku]:>4} x {money(item.price_cents)}")
    return out


def cheapest(items: Iterable[Item]) -> Item | None:
    best: Item | None = None
    for item in items:
        if best is None or item.price_cents < best.price_cents:
            best = item
    return best


def total_line(shelf: Shelf) -> str:
    return f"total: {money(shelf.value_cents())}"
