"""Import entries from CSV lines: date,payee,amount."""

import datetime

from .money import parse_amount


class ParseError(Exception):
    def __init__(self, number, reason):
        super().__init__(f"line {number}: {reason}")
        self.number = number


def parse_line(number, line):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 3:
        raise ParseError(number, f"expected 3 fields, got {len(parts)}")
    day, payee, amount = parts
    try:
        date = datetime.date.fromisoformat(day)
    except ValueError:
        raise ParseError(number, f"bad date {day!r}") from None
    try:
        value = parse_amount(amount)
    except ValueError as exc:
        raise ParseError(number, str(exc)) from None
    return date, payee, value


def import_lines(lines):
    """-> (entries, errors): the lines that parse, and the ParseErrors of those that do not."""
    entries, errors = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            entries.append(parse_line(number, line))
        except ParseError as exc:
            errors.append(exc)
    return entries, errors
