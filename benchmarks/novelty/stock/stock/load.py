"""Load a shelf from CSV text: sku,name,price,count."""

from __future__ import annotations

import csv
import io

from .items import Item, Shelf


def parse_price(text: str) -> int:
    whole, _, frac = text.strip().partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def load(text: str) -> Shelf:
    shelf = Shelf()
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].startswith("#"):
            continue
        sku, name, price, count = row
        shelf.add(Item(sku, name.strip(), parse_price(price)), int(count))
    return shelf
