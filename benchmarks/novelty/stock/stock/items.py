"""Items and their quantities."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    price_cents: int


@dataclass
class Shelf:
    items: dict[str, Item] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, item: Item, count: int = 1) -> None:
        self.items[item.sku] = item
        self.counts[item.sku] = self.counts.get(item.sku, 0) + count

    def remove(self, sku: str, count: int = 1) -> int:
        left = self.counts.get(sku, 0) - count
        if left < 0:
            raise ValueError(f"only {self.counts.get(sku, 0)} of {sku} on the shelf")
        self.counts[sku] = left
        return left

    def value_cents(self) -> int:
        return sum(self.items[sku].price_cents * n for sku, n in self.counts.items())
