#!/usr/bin/env python3
"""Novelty against the last green run, measured on pairs of real runs (issue 32).

Usage:
    python benchmarks/novelty.py [--keep DIR] [--only NAME ...] [--live]

Each pair is a small project written by this script into a temporary folder (one of six kinds:
pytest, unittest, make with gcc, cargo with the standard library only, ``npm test`` with node's
built-in runner, a shell script; beyond the 22 pairs of issue 32, also mypy, ruff, and javac with
a test runner of its own), a run of its command that passes, then one real change (a file
edited or removed) and a run that fails. The failing run's output is filtered twice, as
``streamfilter filter fail.log`` and as ``streamfilter filter --baseline pass.log fail.log`` do
(default query), and the table gives for each pair

- recall: the share of its labels (regexes of the lines a developer needs to fix that change: what
  went wrong and where) of which at least one matching line is kept verbatim;
- bytes: the text output's length, as for a file named ``fail.log`` (its summaries' refs);

with and without the baseline, then the totals. ``--keep DIR`` keeps the logs (``NAME.pass.log``,
``NAME.fail.log``); ``--live`` also runs each pair through ``streamfilter run`` (a state directory
of its own: the passing run stores the baseline, the failing run is weighed with it, and once more
with ``--no-baseline``) and gives those output bytes too (live decisions depend on pauses).

Needs python3 with pytest, gcc and make, cargo (no crates), node and npm; a pair beyond issue 32's
whose tool is missing (mypy, ruff, a JDK) is skipped, and the table says so. The runs print paths of
the temporary folder and timings, so bytes vary by a few between runs of this script.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamfilter.core.baseline import Baseline  # noqa: E402
from streamfilter.core.filter import StreamFilter  # noqa: E402
from streamfilter.core.output import render  # noqa: E402
from streamfilter.live.baselines import baseline_of_files  # noqa: E402
from streamfilter.live.expand import TextRefs, ref_of  # noqa: E402


@dataclass(frozen=True)
class Pair:
    """One pair of runs: the passing run of ``command`` in ``project``, then the failing run after
    ``change``.

    Attributes:
        name: the pair's name (unique).
        kind: pytest, unittest, make, cargo, npm or shell.
        project: a key of ``PROJECTS``.
        command: the argv, run in the project's folder (``{python}`` is this interpreter).
        change: ``(path, old, new)``: ``old`` replaced by ``new`` once in the file at ``path``
            (``new`` None: the file is removed).
        labels: regexes (Python ``re``, searched in each line) of the lines a developer needs.
    """

    name: str
    kind: str
    project: str
    command: tuple[str, ...]
    change: tuple[str, str, str | None]
    labels: tuple[str, ...]


# -- pytest: a small ledger library --------------------------------------------------------------
_LEDGER = {
    "ledger/__init__.py": '"""A tiny ledger."""\n',
    "ledger/money.py": '''"""Amounts of money as Decimals."""

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
''',
    "ledger/accounts.py": '''"""Accounts with a balance and a history."""

from decimal import Decimal


class InsufficientFunds(Exception):
    """A withdrawal larger than the balance."""


class Account:
    def __init__(self, name, balance=Decimal("0")):
        self.name = name
        self.balance = Decimal(balance)
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(f"{self.name}: balance {self.balance} < {amount}")
        self.balance -= amount
        self.history.append(("withdraw", amount))

    def transfer(self, other, amount):
        self.withdraw(amount)
        other.deposit(amount)
''',
    "ledger/importer.py": '''"""Import entries from CSV lines: date,payee,amount."""

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
''',
    "ledger/report.py": '''"""Monthly totals and a plain-text report."""

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
    return "\\n".join(lines)
''',
    "ledger/categories.py": '''"""Guess an entry's category from its payee."""

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
''',
    "tests/__init__.py": "",
    "tests/test_categories.py": """import datetime
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
""",
    "tests/test_money.py": """from decimal import Decimal

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
""",
    "tests/test_accounts.py": """from decimal import Decimal

import pytest

from ledger.accounts import Account, InsufficientFunds


def test_deposit():
    a = Account("a")
    a.deposit(Decimal("5"))
    assert a.balance == Decimal("5")


def test_deposit_must_be_positive():
    with pytest.raises(ValueError):
        Account("a").deposit(Decimal("0"))


def test_withdraw():
    a = Account("a", Decimal("10"))
    a.withdraw(Decimal("4"))
    assert a.balance == Decimal("6")


def test_withdraw_error_when_insufficient():
    with pytest.raises(InsufficientFunds):
        Account("a", Decimal("1")).withdraw(Decimal("2"))


def test_transfer():
    a, b = Account("a", Decimal("10")), Account("b")
    a.transfer(b, Decimal("3"))
    assert (a.balance, b.balance) == (Decimal("7"), Decimal("3"))


def test_failed_transfer_leaves_both_unchanged():
    a, b = Account("a", Decimal("1")), Account("b")
    with pytest.raises(InsufficientFunds):
        a.transfer(b, Decimal("3"))
    assert (a.balance, b.balance) == (Decimal("1"), Decimal("0"))


def test_history():
    a = Account("a")
    a.deposit(Decimal("2"))
    a.withdraw(Decimal("1"))
    assert a.history == [("deposit", Decimal("2")), ("withdraw", Decimal("1"))]
""",
    "tests/test_importer.py": """import datetime
import warnings
from decimal import Decimal

from ledger.importer import ParseError, import_lines, parse_line


def test_parse_line():
    assert parse_line(1, "2024-01-05, Grocer, $12.50") == (datetime.date(2024, 1, 5), "Grocer", Decimal("12.50"))


def test_bad_date_error():
    try:
        parse_line(3, "2024-13-01, X, 1")
    except ParseError as exc:
        assert exc.number == 3 and "bad date" in str(exc)
    else:
        raise AssertionError("no ParseError")


def test_wrong_field_count_error():
    try:
        parse_line(4, "2024-01-01, X")
    except ParseError as exc:
        assert "expected 3 fields, got 2" in str(exc)
    else:
        raise AssertionError("no ParseError")


def test_import_skips_comments_and_blank_lines():
    entries, errors = import_lines(["# header", "", "2024-02-01, A, 1", "2024-02-02, B, 2"])
    assert len(entries) == 2 and errors == []


def test_import_collects_failed_lines():
    entries, errors = import_lines(["2024-02-01, A, 1", "nonsense", "2024-02-03, C, x"])
    assert len(entries) == 1
    assert [e.number for e in errors] == [2, 3]


def test_import_legacy_format_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.warn("the legacy ; format is deprecated", DeprecationWarning, stacklevel=1)
    assert import_lines([]) == ([], [])
""",
    "tests/test_report.py": """import datetime
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
""",
}

# -- unittest: a text toolkit ------------------------------------------------------------------
_TEXTKIT = {
    "textkit/__init__.py": "",
    "textkit/slug.py": """import re
import unicodedata


def slugify(text, sep="-"):
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", text.lower())
    return sep.join(words)


def unique_slug(text, taken):
    slug = slugify(text)
    candidate, n = slug, 2
    while candidate in taken:
        candidate, n = f"{slug}-{n}", n + 1
    return candidate
""",
    "textkit/wrap.py": '''def wrap(text, width):
    """Greedy word wrap: lines of at most ``width`` characters (a longer word is a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def indent(lines, prefix="    "):
    return [prefix + line if line else line for line in lines]
''',
    "textkit/tokens.py": """class TokenError(ValueError):
    def __init__(self, position, char):
        super().__init__(f"unexpected {char!r} at {position}")
        self.position = position


OPERATORS = set("+-*/()")


def tokenize(expr):
    tokens, i = [], 0
    while i < len(expr):
        ch = expr[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit():
            j = i
            while j < len(expr) and (expr[j].isdigit() or expr[j] == "."):
                j += 1
            tokens.append(("num", expr[i:j]))
            i = j
        elif ch.isalpha():
            j = i
            while j < len(expr) and expr[j].isalnum():
                j += 1
            tokens.append(("name", expr[i:j]))
            i = j
        elif ch in OPERATORS:
            tokens.append(("op", ch))
            i += 1
        else:
            raise TokenError(i, ch)
    return tokens
""",
    "textkit/numbers.py": """def ordinal(n):
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def human_size(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def roman(n):
    if not 0 < n < 4000:
        raise ValueError(f"out of range: {n}")
    out = []
    for value, digits in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out.append(digits)
            n -= value
    return "".join(out)
""",
    "tests/__init__.py": "",
    "tests/test_numbers.py": """import unittest

from textkit.numbers import human_size, ordinal, roman


class OrdinalTest(unittest.TestCase):
    def test_first(self):
        self.assertEqual(ordinal(1), "1st")

    def test_second(self):
        self.assertEqual(ordinal(2), "2nd")

    def test_third(self):
        self.assertEqual(ordinal(3), "3rd")

    def test_eleventh(self):
        self.assertEqual(ordinal(11), "11th")

    def test_twenty_first(self):
        self.assertEqual(ordinal(21), "21st")

    def test_hundred_twelfth(self):
        self.assertEqual(ordinal(112), "112th")


class HumanSizeTest(unittest.TestCase):
    def test_bytes(self):
        self.assertEqual(human_size(512), "512 B")

    def test_kilobytes(self):
        self.assertEqual(human_size(2048), "2.0 KB")

    def test_megabytes(self):
        self.assertEqual(human_size(5 * 1024 * 1024), "5.0 MB")

    def test_gigabytes(self):
        self.assertEqual(human_size(3 * 1024**3), "3.0 GB")

    def test_terabytes_stay_in_gigabytes(self):
        self.assertEqual(human_size(2 * 1024**4), "2048.0 GB")


class RomanTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual([roman(n) for n in (1, 4, 9, 14)], ["I", "IV", "IX", "XIV"])

    def test_year(self):
        self.assertEqual(roman(1994), "MCMXCIV")

    def test_largest(self):
        self.assertEqual(roman(3999), "MMMCMXCIX")

    def test_error_on_zero(self):
        with self.assertRaises(ValueError):
            roman(0)

    def test_error_on_too_large(self):
        with self.assertRaisesRegex(ValueError, "out of range"):
            roman(4000)
""",
    "tests/test_slug.py": """import unittest

from textkit.slug import slugify, unique_slug


class SlugTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_accents(self):
        self.assertEqual(slugify("Crème brûlée"), "creme-brulee")

    def test_punctuation(self):
        self.assertEqual(slugify("Error: it failed!"), "error-it-failed")

    def test_separator(self):
        self.assertEqual(slugify("a b c", sep="_"), "a_b_c")

    def test_empty(self):
        self.assertEqual(slugify("!!!"), "")

    def test_unique_slug(self):
        self.assertEqual(unique_slug("Post", {"post"}), "post-2")

    def test_unique_slug_many(self):
        self.assertEqual(unique_slug("Post", {"post", "post-2", "post-3"}), "post-4")

    def test_unique_slug_free(self):
        self.assertEqual(unique_slug("New", {"post"}), "new")
""",
    "tests/test_wrap.py": """import unittest

from textkit.wrap import indent, wrap

TEXT = "the quick brown fox jumps over the lazy dog"


class WrapTest(unittest.TestCase):
    def test_wrap_10(self):
        self.assertEqual(wrap(TEXT, 10), ["the quick", "brown fox", "jumps over", "the lazy", "dog"])

    def test_wrap_20(self):
        self.assertEqual(wrap(TEXT, 20), ["the quick brown fox", "jumps over the lazy", "dog"])

    def test_wrap_wide(self):
        self.assertEqual(wrap(TEXT, 100), [TEXT])

    def test_long_word(self):
        self.assertEqual(wrap("a supercalifragilistic b", 5), ["a", "supercalifragilistic", "b"])

    def test_empty(self):
        self.assertEqual(wrap("", 10), [])

    def test_indent(self):
        self.assertEqual(indent(["a", "", "b"]), ["    a", "", "    b"])

    def test_indent_prefix(self):
        self.assertEqual(indent(["a"], "> "), ["> a"])
""",
    "tests/test_tokens.py": """import unittest

from textkit.tokens import TokenError, tokenize


class TokenizeTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(tokenize("1 + 2.5"), [("num", "1"), ("op", "+"), ("num", "2.5")])

    def test_names(self):
        self.assertEqual(tokenize("x1*y"), [("name", "x1"), ("op", "*"), ("name", "y")])

    def test_parens(self):
        self.assertEqual([t for _, t in tokenize("(a)")], ["(", "a", ")"])

    def test_whitespace(self):
        self.assertEqual(tokenize("  7  "), [("num", "7")])

    def test_error_on_unknown_character(self):
        with self.assertRaises(TokenError) as caught:
            tokenize("1 $ 2")
        self.assertEqual(caught.exception.position, 2)

    def test_error_message(self):
        with self.assertRaisesRegex(TokenError, "unexpected '#' at 0"):
            tokenize("#")

    def test_long_expression(self):
        self.assertEqual(len(tokenize("1+2*3-4/5+(6*7)")), 15)

    def test_failed_parse_keeps_nothing(self):
        with self.assertRaises(TokenError):
            tokenize("a ? b")
""",
}

# -- make with gcc: a small C library and its test runner ------------------------------------
_CLIB = {
    "Makefile": """CC = gcc
CFLAGS = -Wall -Wextra -O2 -g -Isrc
OBJS = src/strbuf.o src/util.o src/hashmap.o src/csv.o src/stats.o

all: libdemo.a test_runner

src/%.o: src/%.c src/demo.h
\t$(CC) $(CFLAGS) -c $< -o $@

libdemo.a: $(OBJS)
\tar rcs $@ $^

test_runner: tests/test_main.c libdemo.a
\t$(CC) $(CFLAGS) $< -L. -ldemo -lm -o $@

test: all
\t./test_runner

clean:
\trm -f $(OBJS) libdemo.a test_runner

.PHONY: all test clean
""",
    "src/demo.h": """#ifndef DEMO_H
#define DEMO_H
#include <stddef.h>

typedef struct { char *data; size_t len, cap; } strbuf;
void strbuf_init(strbuf *b);
void strbuf_append(strbuf *b, const char *s);
void strbuf_trim(strbuf *b);
void strbuf_free(strbuf *b);

int util_clamp(int v, int lo, int hi);
size_t util_count(const char *s, char c);
int util_parse_int(const char *s, int *out);
int util_log(int level, const char *msg, void *unused);

typedef struct hashmap hashmap;
hashmap *hashmap_new(size_t buckets);
void hashmap_put(hashmap *m, const char *key, int value);
int hashmap_get(const hashmap *m, const char *key, int *value);
int hashmap_remove(hashmap *m, const char *key);
size_t hashmap_size(const hashmap *m);
void hashmap_free(hashmap *m);

size_t csv_split(const char *line, char fields[][64], size_t max_fields);

double stats_mean(const double *xs, size_t n);
double stats_median(double *xs, size_t n);
double stats_stddev(const double *xs, size_t n);
double stats_percentile(double *xs, size_t n, double p);
#endif
""",
    "src/strbuf.c": """#include <stdlib.h>
#include <string.h>
#include "demo.h"

void strbuf_init(strbuf *b) { b->data = calloc(16, 1); b->len = 0; b->cap = 16; }

void strbuf_append(strbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap *= 2;
        b->data = realloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

void strbuf_trim(strbuf *b) {
    size_t start = 0;
    while (start < b->len && b->data[start] == ' ') start++;
    size_t end = b->len;
    while (end > start && b->data[end - 1] == ' ') end--;
    memmove(b->data, b->data + start, end - start);
    b->len = end - start;
    b->data[b->len] = 0;
}

void strbuf_free(strbuf *b) { free(b->data); b->data = NULL; b->len = b->cap = 0; }
""",
    "src/util.c": """#include <stdio.h>
#include <stdlib.h>
#include "demo.h"

int util_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

size_t util_count(const char *s, char c) {
    size_t n = 0;
    for (; *s; s++) n += *s == c;
    return n;
}

int util_parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end) return -1;
    *out = (int)v;
    return 0;
}

int util_log(int level, const char *msg, void *unused) {
    return fprintf(stderr, "[%d] %s\\n", level, msg) < 0 ? -1 : 0;
}
""",
    "src/hashmap.c": """#include <stdlib.h>
#include <string.h>
#include "demo.h"

typedef struct entry { char *key; int value; struct entry *next; } entry;
struct hashmap { entry **buckets; size_t n, size; };

static size_t hash(const char *s) { size_t h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }

hashmap *hashmap_new(size_t buckets) {
    hashmap *m = malloc(sizeof *m);
    m->buckets = calloc(buckets, sizeof *m->buckets);
    m->n = buckets;
    m->size = 0;
    return m;
}

void hashmap_put(hashmap *m, const char *key, int value) {
    entry **slot = &m->buckets[hash(key) % m->n];
    for (entry *e = *slot; e; e = e->next)
        if (!strcmp(e->key, key)) { e->value = value; return; }
    entry *e = malloc(sizeof *e);
    e->key = strdup(key);
    e->value = value;
    e->next = *slot;
    *slot = e;
    m->size++;
}

int hashmap_get(const hashmap *m, const char *key, int *value) {
    for (entry *e = m->buckets[hash(key) % m->n]; e; e = e->next)
        if (!strcmp(e->key, key)) { *value = e->value; return 1; }
    return 0;
}

int hashmap_remove(hashmap *m, const char *key) {
    for (entry **p = &m->buckets[hash(key) % m->n]; *p; p = &(*p)->next) {
        if (!strcmp((*p)->key, key)) {
            entry *e = *p;
            *p = e->next;
            free(e->key);
            free(e);
            m->size--;
            return 1;
        }
    }
    return 0;
}

size_t hashmap_size(const hashmap *m) { return m->size; }

void hashmap_free(hashmap *m) {
    for (size_t i = 0; i < m->n; i++)
        for (entry *e = m->buckets[i], *next; e; e = next) { next = e->next; free(e->key); free(e); }
    free(m->buckets);
    free(m);
}
""",
    "src/csv.c": """#include <string.h>
#include "demo.h"

size_t csv_split(const char *line, char fields[][64], size_t max_fields) {
    size_t n = 0, len = 0;
    int quoted = 0;
    if (max_fields == 0) return 0;
    fields[0][0] = 0;
    for (const char *p = line; *p; p++) {
        if (*p == '"') { quoted = !quoted; continue; }
        if (*p == ',' && !quoted) {
            fields[n][len] = 0;
            if (++n == max_fields) return n;
            len = 0;
            continue;
        }
        if (len < 63) fields[n][len++] = *p;
    }
    fields[n][len] = 0;
    return n + 1;
}
""",
    "src/stats.c": """#include <math.h>
#include <stdlib.h>
#include "demo.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_mean(const double *xs, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += xs[i];
    return n ? sum / n : 0;
}

double stats_median(double *xs, size_t n) {
    if (!n) return 0;
    qsort(xs, n, sizeof *xs, cmp);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

double stats_stddev(const double *xs, size_t n) {
    if (n < 2) return 0;
    double m = stats_mean(xs, n), acc = 0;
    for (size_t i = 0; i < n; i++) acc += (xs[i] - m) * (xs[i] - m);
    return sqrt(acc / (n - 1));
}

double stats_percentile(double *xs, size_t n, double p) {
    if (!n) return 0;
    qsort(xs, n, sizeof *xs, cmp);
    double rank = p / 100 * (n - 1);
    size_t lo = (size_t)rank;
    return lo + 1 < n ? xs[lo] + (rank - lo) * (xs[lo + 1] - xs[lo]) : xs[lo];
}
""",
    "tests/test_main.c": r"""#include <stdio.h>
#include <string.h>
#include "demo.h"

static int failures = 0, run = 0;
#define CHECK(name, cond, ...) do { run++; if (cond) printf("test %-28s ok\n", name); \
    else { failures++; printf("test %-28s FAILED: ", name); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void test_strbuf(void) {
    strbuf b; strbuf_init(&b);
    strbuf_append(&b, "hello"); strbuf_append(&b, ", world");
    CHECK("strbuf_append", !strcmp(b.data, "hello, world"), "got \"%s\"", b.data);
    CHECK("strbuf_len", b.len == 12, "len %zu", b.len);
    strbuf_free(&b); strbuf_init(&b);
    strbuf_append(&b, "  abc  "); strbuf_trim(&b);
    CHECK("strbuf_trim", !strcmp(b.data, "abc"), "expected \"abc\", got \"%s\"", b.data);
    strbuf_free(&b); strbuf_init(&b);
    for (int i = 0; i < 100; i++) strbuf_append(&b, "xy");
    CHECK("strbuf_grow", b.len == 200 && b.cap >= 201, "len %zu cap %zu", b.len, b.cap);
    strbuf_free(&b);
}

static void test_util(void) {
    CHECK("util_clamp_low", util_clamp(-5, 0, 10) == 0, "got %d", util_clamp(-5, 0, 10));
    CHECK("util_clamp_high", util_clamp(50, 0, 10) == 10, "got %d", util_clamp(50, 0, 10));
    CHECK("util_clamp_inside", util_clamp(5, 0, 10) == 5, "got %d", util_clamp(5, 0, 10));
    CHECK("util_count", util_count("a,b,,c", ',') == 3, "got %zu", util_count("a,b,,c", ','));
    int v = 0;
    CHECK("util_parse_int", util_parse_int("42", &v) == 0 && v == 42, "got %d", v);
    CHECK("util_parse_int_error", util_parse_int("4x2", &v) == -1, "accepted 4x2");
    CHECK("util_parse_int_empty_error", util_parse_int("", &v) == -1, "accepted empty");
}

static void test_hashmap(void) {
    hashmap *m = hashmap_new(8);
    char key[16];
    for (int i = 0; i < 50; i++) { snprintf(key, sizeof key, "k%d", i); hashmap_put(m, key, i); }
    CHECK("hashmap_size", hashmap_size(m) == 50, "size %zu", hashmap_size(m));
    int v = -1;
    CHECK("hashmap_get", hashmap_get(m, "k17", &v) && v == 17, "got %d", v);
    CHECK("hashmap_get_missing", !hashmap_get(m, "nope", &v), "found nope");
    hashmap_put(m, "k17", 99);
    CHECK("hashmap_overwrite", hashmap_get(m, "k17", &v) && v == 99 && hashmap_size(m) == 50, "got %d", v);
    CHECK("hashmap_remove", hashmap_remove(m, "k3") && !hashmap_get(m, "k3", &v), "k3 still there");
    CHECK("hashmap_remove_missing", !hashmap_remove(m, "k3"), "removed k3 twice");
    hashmap_free(m);
}

static void test_csv(void) {
    char f[8][64];
    size_t n = csv_split("a,b,c", f, 8);
    CHECK("csv_simple", n == 3 && !strcmp(f[2], "c"), "n=%zu", n);
    n = csv_split("\"x,y\",z", f, 8);
    CHECK("csv_quoted", n == 2 && !strcmp(f[0], "x,y"), "n=%zu f0=%s", n, f[0]);
    n = csv_split("", f, 8);
    CHECK("csv_empty", n == 1 && f[0][0] == 0, "n=%zu", n);
    n = csv_split("a,b,c,d", f, 2);
    CHECK("csv_max_fields", n == 2, "n=%zu", n);
}

static int near(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

static void test_stats(void) {
    double a[] = {1, 2, 3, 4}, b[] = {5, 1, 3}, c[] = {2, 4, 4, 4, 5, 5, 7, 9}, d[] = {10, 20, 30, 40, 50};
    CHECK("stats_mean", near(stats_mean(a, 4), 2.5), "got %g", stats_mean(a, 4));
    CHECK("stats_mean_empty", near(stats_mean(a, 0), 0), "got %g", stats_mean(a, 0));
    CHECK("stats_median_even", near(stats_median(a, 4), 2.5), "got %g", stats_median(a, 4));
    CHECK("stats_median_odd", near(stats_median(b, 3), 3), "got %g", stats_median(b, 3));
    CHECK("stats_stddev", stats_stddev(c, 8) > 2.13 && stats_stddev(c, 8) < 2.14, "got %g", stats_stddev(c, 8));
    CHECK("stats_stddev_one", near(stats_stddev(a, 1), 0), "got %g", stats_stddev(a, 1));
    CHECK("stats_percentile_50", near(stats_percentile(d, 5, 50), 30), "got %g", stats_percentile(d, 5, 50));
    CHECK("stats_percentile_90", near(stats_percentile(d, 5, 90), 46), "got %g", stats_percentile(d, 5, 90));
    CHECK("stats_percentile_max", near(stats_percentile(d, 5, 100), 50), "got %g", stats_percentile(d, 5, 100));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("running demo tests\n");
    test_strbuf(); test_util(); test_hashmap(); test_csv(); test_stats();
    printf("%d tests, %d failed\n", run, failures);
    return failures != 0;
}
""",
}

# -- cargo (std only): 2D geometry -----------------------------------------------------------------
_GEOM = {
    "Cargo.toml": '[package]\nname = "geom"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/lib.rs": "pub mod bbox;\npub mod parse;\npub mod shapes;\npub mod vec2;\n",
    "src/bbox.rs": """use crate::vec2::Vec2;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    pub min: Vec2,
    pub max: Vec2,
}

impl BBox {
    pub fn of(points: &[Vec2]) -> Option<BBox> {
        let first = *points.first()?;
        let mut b = BBox { min: first, max: first };
        for p in &points[1..] {
            b.min = Vec2::new(b.min.x.min(p.x), b.min.y.min(p.y));
            b.max = Vec2::new(b.max.x.max(p.x), b.max.y.max(p.y));
        }
        Some(b)
    }
    pub fn width(&self) -> f64 {
        self.max.x - self.min.x
    }
    pub fn height(&self) -> f64 {
        self.max.y - self.min.y
    }
    pub fn contains(&self, p: Vec2) -> bool {
        p.x >= self.min.x && p.x <= self.max.x && p.y >= self.min.y && p.y <= self.max.y
    }
    pub fn union(&self, o: &BBox) -> BBox {
        BBox {
            min: Vec2::new(self.min.x.min(o.min.x), self.min.y.min(o.min.y)),
            max: Vec2::new(self.max.x.max(o.max.x), self.max.y.max(o.max.y)),
        }
    }
    pub fn intersects(&self, o: &BBox) -> bool {
        self.min.x <= o.max.x && o.min.x <= self.max.x && self.min.y <= o.max.y && o.min.y <= self.max.y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x: f64, y: f64, s: f64) -> BBox {
        BBox { min: Vec2::new(x, y), max: Vec2::new(x + s, y + s) }
    }

    #[test]
    fn of_points() {
        let b = BBox::of(&[Vec2::new(1.0, 5.0), Vec2::new(-2.0, 3.0), Vec2::new(4.0, -1.0)]).unwrap();
        assert_eq!(b, BBox { min: Vec2::new(-2.0, -1.0), max: Vec2::new(4.0, 5.0) });
    }
    #[test]
    fn of_nothing() {
        assert_eq!(BBox::of(&[]), None);
    }
    #[test]
    fn size() {
        assert_eq!((square(0.0, 0.0, 2.0).width(), square(0.0, 0.0, 2.0).height()), (2.0, 2.0));
    }
    #[test]
    fn contains_inside_and_edge() {
        let b = square(0.0, 0.0, 1.0);
        assert!(b.contains(Vec2::new(0.5, 0.5)) && b.contains(Vec2::new(1.0, 0.0)));
    }
    #[test]
    fn contains_outside() {
        assert!(!square(0.0, 0.0, 1.0).contains(Vec2::new(1.5, 0.5)));
    }
    #[test]
    fn union_of_two() {
        let u = square(0.0, 0.0, 1.0).union(&square(2.0, 2.0, 1.0));
        assert_eq!(u, BBox { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 3.0) });
    }
    #[test]
    fn intersects_overlap() {
        assert!(square(0.0, 0.0, 2.0).intersects(&square(1.0, 1.0, 2.0)));
    }
    #[test]
    fn intersects_apart() {
        assert!(!square(0.0, 0.0, 1.0).intersects(&square(3.0, 3.0, 1.0)));
    }
}
""",
    "src/vec2.rs": """use std::ops::{Add, Mul, Sub};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

impl Vec2 {
    pub fn new(x: f64, y: f64) -> Self {
        Vec2 { x, y }
    }
    pub fn dot(self, other: Vec2) -> f64 {
        self.x * other.x + self.y * other.y
    }
    pub fn cross(self, other: Vec2) -> f64 {
        self.x * other.y - self.y * other.x
    }
    pub fn length(self) -> f64 {
        self.dot(self).sqrt()
    }
}

impl Add for Vec2 {
    type Output = Vec2;
    fn add(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x + o.x, self.y + o.y)
    }
}

impl Sub for Vec2 {
    type Output = Vec2;
    fn sub(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x - o.x, self.y - o.y)
    }
}

impl Mul<f64> for Vec2 {
    type Output = Vec2;
    fn mul(self, k: f64) -> Vec2 {
        Vec2::new(self.x * k, self.y * k)
    }
}

pub fn centroid(points: &[Vec2]) -> Option<Vec2> {
    if points.is_empty() {
        return None;
    }
    let sum = points.iter().fold(Vec2::new(0.0, 0.0), |a, &p| a + p);
    Some(sum * (1.0 / points.len() as f64))
}

pub fn names(points: Vec<Vec2>) -> Vec<String> {
    let labels: Vec<String> = points.iter().map(|p| format!("({}, {})", p.x, p.y)).collect();
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add() {
        assert_eq!(Vec2::new(1.0, 2.0) + Vec2::new(3.0, 4.0), Vec2::new(4.0, 6.0));
    }
    #[test]
    fn sub() {
        assert_eq!(Vec2::new(1.0, 2.0) - Vec2::new(3.0, 4.0), Vec2::new(-2.0, -2.0));
    }
    #[test]
    fn dot() {
        assert_eq!(Vec2::new(1.0, 2.0).dot(Vec2::new(3.0, 4.0)), 11.0);
    }
    #[test]
    fn cross() {
        assert_eq!(Vec2::new(1.0, 0.0).cross(Vec2::new(0.0, 1.0)), 1.0);
    }
    #[test]
    fn length() {
        assert_eq!(Vec2::new(3.0, 4.0).length(), 5.0);
    }
    #[test]
    fn centroid_of_square() {
        let pts = [Vec2::new(0.0, 0.0), Vec2::new(2.0, 0.0), Vec2::new(2.0, 2.0), Vec2::new(0.0, 2.0)];
        assert_eq!(centroid(&pts), Some(Vec2::new(1.0, 1.0)));
    }
    #[test]
    fn centroid_error_on_empty() {
        assert_eq!(centroid(&[]), None);
    }
    #[test]
    fn names_of_points() {
        assert_eq!(names(vec![Vec2::new(1.0, 2.0)]), vec!["(1, 2)".to_string()]);
    }
}
""",
    "src/shapes.rs": """use crate::vec2::Vec2;

#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Circle { center: Vec2, radius: f64 },
    Rect { min: Vec2, max: Vec2 },
    Polygon(Vec<Vec2>),
}

impl Shape {
    pub fn area(&self) -> f64 {
        match self {
            Shape::Circle { radius, .. } => std::f64::consts::PI * radius * radius,
            Shape::Rect { min, max } => (max.x - min.x) * (max.y - min.y),
            Shape::Polygon(points) => polygon_area(points),
        }
    }

    pub fn perimeter(&self) -> f64 {
        match self {
            Shape::Circle { radius, .. } => 2.0 * std::f64::consts::PI * radius,
            Shape::Rect { min, max } => 2.0 * ((max.x - min.x) + (max.y - min.y)),
            Shape::Polygon(points) => {
                let n = points.len();
                (0..n).map(|i| (points[(i + 1) % n] - points[i]).length()).sum()
            }
        }
    }
}

pub fn polygon_area(points: &[Vec2]) -> f64 {
    let n = points.len();
    let twice: f64 = (0..n).map(|i| points[i].cross(points[(i + 1) % n])).sum();
    twice.abs() / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn circle_area() {
        let c = Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 2.0 };
        assert!(close(c.area(), 4.0 * std::f64::consts::PI));
    }
    #[test]
    fn circle_perimeter() {
        let c = Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 1.0 };
        assert!(close(c.perimeter(), 2.0 * std::f64::consts::PI));
    }
    #[test]
    fn rect_area() {
        let r = Shape::Rect { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 2.0) };
        assert_eq!(r.area(), 6.0);
    }
    #[test]
    fn rect_perimeter() {
        let r = Shape::Rect { min: Vec2::new(0.0, 0.0), max: Vec2::new(3.0, 2.0) };
        assert_eq!(r.perimeter(), 10.0);
    }
    #[test]
    fn triangle_area() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(4.0, 0.0), Vec2::new(0.0, 3.0)]);
        assert_eq!(t.area(), 6.0);
    }
    #[test]
    fn triangle_perimeter() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(4.0, 0.0), Vec2::new(0.0, 3.0)]);
        assert_eq!(t.perimeter(), 12.0);
    }
    #[test]
    fn clockwise_polygon_area() {
        let t = Shape::Polygon(vec![Vec2::new(0.0, 0.0), Vec2::new(0.0, 3.0), Vec2::new(4.0, 0.0)]);
        assert_eq!(t.area(), 6.0);
    }
}
""",
    "src/parse.rs": """use crate::shapes::Shape;
use crate::vec2::Vec2;
use std::fmt;

#[derive(Debug, PartialEq)]
pub enum ParseError {
    Empty,
    UnknownKind(String),
    BadNumber(String),
    WrongArity { kind: String, expected: usize, got: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty input"),
            ParseError::UnknownKind(k) => write!(f, "unknown shape {k:?}"),
            ParseError::BadNumber(n) => write!(f, "bad number {n:?}"),
            ParseError::WrongArity { kind, expected, got } => write!(f, "{kind} takes {expected} numbers, got {got}"),
        }
    }
}

fn numbers(words: &[&str]) -> Result<Vec<f64>, ParseError> {
    words.iter().map(|w| w.parse::<f64>().map_err(|_| ParseError::BadNumber(w.to_string()))).collect()
}

fn arity(kind: &str, nums: &[f64], expected: usize) -> Result<(), ParseError> {
    if nums.len() != expected {
        return Err(ParseError::WrongArity { kind: kind.to_string(), expected, got: nums.len() });
    }
    Ok(())
}

pub fn parse_shape(text: &str) -> Result<Shape, ParseError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (kind, rest) = words.split_first().ok_or(ParseError::Empty)?;
    let nums = numbers(rest)?;
    match *kind {
        "circle" => {
            arity(kind, &nums, 3)?;
            Ok(Shape::Circle { center: Vec2::new(nums[0], nums[1]), radius: nums[2] })
        }
        "rect" => {
            arity(kind, &nums, 4)?;
            Ok(Shape::Rect { min: Vec2::new(nums[0], nums[1]), max: Vec2::new(nums[2], nums[3]) })
        }
        "poly" => {
            if nums.len() % 2 != 0 || nums.len() < 6 {
                return Err(ParseError::WrongArity { kind: kind.to_string(), expected: 6, got: nums.len() });
            }
            Ok(Shape::Polygon(nums.chunks(2).map(|c| Vec2::new(c[0], c[1])).collect()))
        }
        other => Err(ParseError::UnknownKind(other.to_string())),
    }
}

pub fn total_area(lines: &[&str]) -> Result<f64, ParseError> {
    let mut total = 0.0;
    for line in lines {
        total += parse_shape(line)?.area();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_circle() {
        assert_eq!(
            parse_shape("circle 0 0 1").unwrap(),
            Shape::Circle { center: Vec2::new(0.0, 0.0), radius: 1.0 }
        );
    }
    #[test]
    fn parse_rect() {
        assert!(matches!(parse_shape("rect 0 0 2 2"), Ok(Shape::Rect { .. })));
    }
    #[test]
    fn parse_poly() {
        assert!(matches!(parse_shape("poly 0 0 1 0 0 1"), Ok(Shape::Polygon(_))));
    }
    #[test]
    fn parse_error_empty() {
        assert_eq!(parse_shape("  "), Err(ParseError::Empty));
    }
    #[test]
    fn parse_error_unknown_kind() {
        assert_eq!(parse_shape("hexagon 1"), Err(ParseError::UnknownKind("hexagon".into())));
    }
    #[test]
    fn parse_error_bad_number() {
        assert_eq!(parse_shape("circle 0 x 1"), Err(ParseError::BadNumber("x".into())));
    }
    #[test]
    fn parse_error_arity() {
        assert!(matches!(parse_shape("circle 0 0"), Err(ParseError::WrongArity { .. })));
    }
    #[test]
    fn error_display() {
        assert_eq!(ParseError::UnknownKind("x".into()).to_string(), "unknown shape \\"x\\"");
    }
    #[test]
    fn total_area_of_lines() {
        assert_eq!(total_area(&["rect 0 0 2 3", "rect 0 0 1 1"]).unwrap(), 7.0);
    }
}
""",
    "tests/integration.rs": """use geom::parse::{parse_shape, total_area};
use geom::vec2::{centroid, Vec2};

#[test]
fn parse_and_measure() {
    let s = parse_shape("rect 1 1 4 5").unwrap();
    assert_eq!(s.area(), 12.0);
    assert_eq!(s.perimeter(), 14.0);
}

#[test]
fn total_area_failed_line_is_reported() {
    assert!(total_area(&["rect 0 0 1 1", "blob 2"]).is_err());
}

#[test]
fn centroid_of_triangle() {
    let c = centroid(&[Vec2::new(0.0, 0.0), Vec2::new(3.0, 0.0), Vec2::new(0.0, 3.0)]).unwrap();
    assert_eq!(c, Vec2::new(1.0, 1.0));
}

#[test]
fn polygon_from_text() {
    let s = parse_shape("poly 0 0 4 0 4 4 0 4").unwrap();
    assert_eq!(s.area(), 16.0);
}
""",
}

# -- npm test with node's built-in runner: unit conversions -----------------------------------------
_UNITS = {
    "package.json": '{\n  "name": "units",\n  "version": "1.0.0",\n  "private": true,\n'
    '  "scripts": {\n    "test": "node --test"\n  }\n}\n',
    "src/convert.js": """'use strict';

const LENGTH = { mm: 0.001, cm: 0.01, m: 1, km: 1000, in: 0.0254, ft: 0.3048, mi: 1609.344 };

function convertLength(value, from, to) {
  if (!(from in LENGTH) || !(to in LENGTH)) {
    throw new RangeError(`unknown unit: ${from in LENGTH ? to : from}`);
  }
  return (value * LENGTH[from]) / LENGTH[to];
}

function celsiusToFahrenheit(c) {
  return (c * 9) / 5 + 32;
}

function fahrenheitToCelsius(f) {
  return ((f - 32) * 5) / 9;
}

module.exports = { LENGTH, convertLength, celsiusToFahrenheit, fahrenheitToCelsius };
""",
    "src/format.js": """'use strict';

function formatQuantity(q, digits = 2) {
  const text = q.value.toFixed(digits).replace(/\\.?0+$/, '');
  return `${text} ${q.unit}`;
}

function formatTable(rows) {
  const width = Math.max(...rows.map((r) => r.label.length));
  return rows.map((r) => `${r.label.padEnd(width)}  ${formatQuantity(r.quantity)}`).join('\\n');
}

module.exports = { formatQuantity, formatTable };
""",
    "src/parse.js": """'use strict';

const PATTERN = /^\\s*(-?\\d+(?:\\.\\d+)?)\\s*([a-z]+)\\s*$/i;

function parseQuantity(text) {
  const match = PATTERN.exec(text);
  if (!match) {
    throw new SyntaxError(`not a quantity: ${JSON.stringify(text)}`);
  }
  return { value: Number(match[1]), unit: match[2].toLowerCase() };
}

module.exports = { parseQuantity };
""",
    "src/stats.js": """'use strict';

function mean(xs) {
  if (xs.length === 0) throw new RangeError('mean of nothing');
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function median(xs) {
  if (xs.length === 0) throw new RangeError('median of nothing');
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function histogram(xs, width) {
  const bins = new Map();
  for (const x of xs) {
    const key = Math.floor(x / width) * width;
    bins.set(key, (bins.get(key) || 0) + 1);
  }
  return [...bins.entries()].sort((a, b) => a[0] - b[0]);
}

module.exports = { mean, median, histogram };
""",
    "test/stats.test.js": """'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { mean, median, histogram } = require('../src/stats');

describe('mean', () => {
  it('of integers', () => assert.strictEqual(mean([1, 2, 3, 4]), 2.5));
  it('of one value', () => assert.strictEqual(mean([7]), 7));
  it('of negatives', () => assert.strictEqual(mean([-1, -3]), -2));
  it('error on empty input', () => assert.throws(() => mean([]), RangeError));
});

describe('median', () => {
  it('odd count', () => assert.strictEqual(median([5, 1, 3]), 3));
  it('even count', () => assert.strictEqual(median([4, 1, 3, 2]), 2.5));
  it('does not sort its input', () => {
    const xs = [3, 1, 2];
    median(xs);
    assert.deepStrictEqual(xs, [3, 1, 2]);
  });
  it('error on empty input', () => assert.throws(() => median([]), /median of nothing/));
});

describe('histogram', () => {
  it('bins by width', () => assert.deepStrictEqual(histogram([1, 2, 11, 12, 13], 10), [[0, 2], [10, 3]]));
  it('sorts bins', () => assert.deepStrictEqual(histogram([25, 5], 10), [[0, 1], [20, 1]]));
  it('empty input', () => assert.deepStrictEqual(histogram([], 10), []));
});
""",
    "test/convert.test.js": """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { convertLength, celsiusToFahrenheit, fahrenheitToCelsius } = require('../src/convert');

test('km to m', () => assert.strictEqual(convertLength(2, 'km', 'm'), 2000));
test('m to cm', () => assert.strictEqual(convertLength(1.5, 'm', 'cm'), 150));
test('mi to km', () => assert.ok(Math.abs(convertLength(1, 'mi', 'km') - 1.609344) < 1e-9));
test('ft to in', () => assert.ok(Math.abs(convertLength(1, 'ft', 'in') - 12) < 1e-9));
test('unknown unit error', () => assert.throws(() => convertLength(1, 'm', 'parsec'), /unknown unit: parsec/));
test('freezing point', () => assert.strictEqual(celsiusToFahrenheit(0), 32));
test('boiling point', () => assert.strictEqual(celsiusToFahrenheit(100), 212));
test('body temperature', () => assert.ok(Math.abs(fahrenheitToCelsius(98.6) - 37) < 1e-9));
test('minus forty', () => assert.strictEqual(fahrenheitToCelsius(-40), -40));
""",
    "test/format.test.js": """'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { formatQuantity, formatTable } = require('../src/format');

describe('formatQuantity', () => {
  it('drops trailing zeros', () => assert.strictEqual(formatQuantity({ value: 2.5, unit: 'm' }), '2.5 m'));
  it('keeps whole numbers', () => assert.strictEqual(formatQuantity({ value: 3, unit: 'km' }), '3 km'));
  it('rounds to two digits', () => assert.strictEqual(formatQuantity({ value: 1.23456, unit: 'ft' }), '1.23 ft'));
  it('honours digits', () => assert.strictEqual(formatQuantity({ value: 1.23456, unit: 'ft' }, 3), '1.235 ft'));
});

describe('formatTable', () => {
  it('aligns labels', () => {
    const rows = [
      { label: 'a', quantity: { value: 1, unit: 'm' } },
      { label: 'long', quantity: { value: 2, unit: 'm' } },
    ];
    assert.strictEqual(formatTable(rows), 'a     1 m\\nlong  2 m');
  });
  it('reports no error on one row', () => {
    assert.doesNotThrow(() => formatTable([{ label: 'x', quantity: { value: 0, unit: 'm' } }]));
  });
});
""",
    "test/parse.test.js": """'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { parseQuantity } = require('../src/parse');

describe('parseQuantity', () => {
  it('parses integers', () => assert.deepStrictEqual(parseQuantity('12 km'), { value: 12, unit: 'km' }));
  it('parses decimals', () => assert.deepStrictEqual(parseQuantity('1.5m'), { value: 1.5, unit: 'm' }));
  it('parses negatives', () => assert.deepStrictEqual(parseQuantity('-3 C'), { value: -3, unit: 'c' }));
  it('ignores spaces', () => assert.deepStrictEqual(parseQuantity('  7   ft '), { value: 7, unit: 'ft' }));
  it('error on text', () => assert.throws(() => parseQuantity('twelve km'), SyntaxError));
  it('error on a missing unit', () => assert.throws(() => parseQuantity('12'), /not a quantity/));
});
""",
}

# -- a shell script: a release check ----------------------------------------------------------------
_RELEASE = {
    "scripts/ci.sh": r"""#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> checking layout"
for d in src config docs; do
    [ -d "$d" ] || { echo "error: missing folder $d" >&2; exit 1; }
    echo "  found $d/ ($(ls "$d" | wc -l) files)"
done

echo "==> checking shell syntax"
for f in scripts/*.sh; do
    bash -n "$f"
    echo "  ok $f"
done

echo "==> looking for leftover debug statements"
if grep -rn "DEBUG_ONLY" src; then
    echo "error: debug statements left in src/" >&2
    exit 1
fi
echo "  none found"

echo "==> building the bundle"
rm -rf build
mkdir -p build
for f in src/*.txt; do
    sed 's/[[:space:]]*$//' "$f" >> build/bundle.txt
    echo "  added $f ($(wc -l < "$f") lines)"
done

echo "==> checking links in docs"
for f in docs/*.md; do
    n=$(grep -c "](" "$f" || true)
    echo "  $f: $n links, 0 broken"
done

echo "==> copying config"
cp config/app.conf build/app.conf
echo "  copied config/app.conf"

echo "==> verifying checksums"
(cd build && sha256sum -c ../config/checksums.sha256)

echo "==> smoke tests"
for t in parse_error_report failed_login_message retry_after_error empty_input; do
    grep -q "$t" build/bundle.txt && echo "  smoke $t ... ok"
done

echo "==> done: build/bundle.txt ($(wc -l < build/bundle.txt) lines)"
""",
    "scripts/clean.sh": '#!/usr/bin/env bash\nset -eu\nrm -rf build\necho "cleaned"\n',
    "config/app.conf": "name = demo\nport = 8080\nretries = 3\nlog_level = info\n",
    "docs/README.md": "# demo\n\nRun scripts/ci.sh before a release.\n",
    "docs/install.md": "# install\n\nSee [the readme](README.md) and [usage](usage.md).\n",
    "docs/usage.md": "# usage\n\nRun it. See [errors](errors.md).\n",
    "docs/errors.md": "# errors\n\nWhat each error message means.\n",
}
for _i, _topic in enumerate(
    (
        "intro",
        "install",
        "usage",
        "config",
        "parse_error_report",
        "failed_login_message",
        "retry_after_error",
        "empty_input",
        "faq",
        "changelog",
        "limits",
        "security",
        "upgrading",
        "errors_reference",
        "glossary",
        "contributing",
        "release_notes",
        "troubleshooting_failed_builds",
    )
):
    _RELEASE[f"src/{_i:02d}-{_topic}.txt"] = "".join(
        f"{_topic} line {k}: some text about {_topic}\n" for k in range(3 + _i % 4)
    )


def _release_checksums(files: dict[str, str]) -> str:
    digest = hashlib.sha256(files["config/app.conf"].encode()).hexdigest()
    return f"{digest}  app.conf\n"


_RELEASE["config/checksums.sha256"] = _release_checksums(_RELEASE)

# -- mypy and ruff: a small typed inventory package ------------------------------------------------
_STOCK = {
    "pyproject.toml": """[tool.mypy]
strict = true

[tool.ruff]
line-length = 110

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]
""",
    "stock/__init__.py": '"""A typed stock ledger."""\n',
    "stock/items.py": '''"""Items and their quantities."""

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
''',
    "stock/report.py": '''"""Text reports of a shelf."""

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
''',
    "stock/load.py": '''"""Load a shelf from CSV text: sku,name,price,count."""

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
''',
}

_MYPY = ("{python}", "-m", "mypy", "stock")
_RUFF = ("{python}", "-m", "ruff", "check", "--no-cache", "stock")

# -- java: a library compiled with javac and a test runner of its own -----------------------------
_JAVA_TESTS = [
    ("addsTwoNumbers", "eq(Calc.add(2, 3), 5)"),
    ("subtracts", "eq(Calc.sub(7, 3), 4)"),
    ("multiplies", "eq(Calc.mul(6, 7), 42)"),
    ("dividesEvenly", "eq(Calc.div(12, 4), 3)"),
    ("dividesRoundingDown", "eq(Calc.div(7, 2), 3)"),
    ("clampsLow", "eq(Calc.clamp(-5, 0, 10), 0)"),
    ("clampsHigh", "eq(Calc.clamp(50, 0, 10), 10)"),
    ("clampsInside", "eq(Calc.clamp(5, 0, 10), 5)"),
    ("parsesPlain", 'eq(Calc.parse("42"), 42)'),
    ("parsesSpaces", 'eq(Calc.parse("  17 "), 17)'),
    ("parsesNegative", 'eq(Calc.parse("-8"), -8)'),
    ("sumsList", "eq(Stats.sum(new int[] {1, 2, 3, 4}), 10)"),
    ("meanOfList", "eq(Stats.mean(new int[] {2, 4, 6}), 4)"),
    ("maxOfList", "eq(Stats.max(new int[] {3, 9, 1}), 9)"),
    ("minOfList", "eq(Stats.min(new int[] {3, 9, 1}), 1)"),
    ("medianOdd", "eq(Stats.median(new int[] {5, 1, 3}), 3)"),
    ("medianEven", "eq(Stats.median(new int[] {4, 1, 3, 2}), 2)"),
    ("wordsCounted", 'eq(Text.words("a bb  ccc"), 3)'),
    ("wordsOfBlank", 'eq(Text.words("   "), 0)'),
    ("reversed", 'eq(Text.reverse("abc"), "cba")'),
    ("capitalized", 'eq(Text.capitalize("hello"), "Hello")'),
    ("capitalizedEmpty", 'eq(Text.capitalize(""), "")'),
    ("padsLeft", 'eq(Text.padLeft("7", 3, \'0\'), "007")'),
    ("initials", 'eq(Text.initials("Ada King Lovelace"), "AKL")'),
]
_JAVA_RUNNER = (
    """import java.util.Objects;

public class TestMain {
    static int failed = 0;

    static void eq(Object got, Object want) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError("expected <" + want + "> but was <" + got + ">");
        }
    }

    interface Body { void run() throws Exception; }

    static void test(String name, Body body) {
        long start = System.nanoTime();
        try {
            body.run();
            System.out.printf("test %-22s ok (%d us)%n", name, (System.nanoTime() - start) / 1000);
        } catch (Throwable e) {
            failed++;
            System.out.printf("test %-22s FAILED%n", name);
            e.printStackTrace(System.out);
        }
    }

    public static void main(String[] args) {
"""
    + "".join(f'        test("{name}", () -> {body});\n' for name, body in _JAVA_TESTS)
    + """        System.out.printf("%d tests, %d failed%n", """
    + str(len(_JAVA_TESTS))
    + """, failed);
        if (failed > 0) System.exit(1);
    }
}
"""
)
_JAVA = {
    "src/Calc.java": """public final class Calc {
    private Calc() {}

    public static int add(int a, int b) { return a + b; }
    public static int sub(int a, int b) { return a - b; }
    public static int mul(int a, int b) { return a * b; }
    public static int div(int a, int b) { return Math.floorDiv(a, b); }

    public static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    public static int parse(String text) {
        return Integer.parseInt(text.trim());
    }
}
""",
    "src/Stats.java": """import java.util.Arrays;

public final class Stats {
    private Stats() {}

    public static int sum(int[] xs) {
        int total = 0;
        for (int x : xs) total += x;
        return total;
    }

    public static int mean(int[] xs) { return sum(xs) / xs.length; }

    public static int max(int[] xs) { return Arrays.stream(xs).max().getAsInt(); }

    public static int min(int[] xs) { return Arrays.stream(xs).min().getAsInt(); }

    public static int median(int[] xs) {
        int[] sorted = xs.clone();
        Arrays.sort(sorted);
        return sorted[(sorted.length - 1) / 2];
    }
}
""",
    "src/Text.java": """public final class Text {
    private Text() {}

    public static int words(String s) {
        String t = s.trim();
        return t.isEmpty() ? 0 : t.split("\\\\s+").length;
    }

    public static String reverse(String s) { return new StringBuilder(s).reverse().toString(); }

    public static String capitalize(String s) {
        if (s.isEmpty()) return s;
        return Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }

    public static String padLeft(String s, int width, char pad) {
        StringBuilder b = new StringBuilder();
        for (int i = s.length(); i < width; i++) b.append(pad);
        return b.append(s).toString();
    }

    public static String initials(String name) {
        StringBuilder b = new StringBuilder();
        for (String part : name.trim().split("\\\\s+")) b.append(part.charAt(0));
        return b.toString();
    }
}
""",
    "src/TestMain.java": _JAVA_RUNNER,
    "build.sh": """#!/bin/sh
set -e
rm -rf out
mkdir -p out
for f in src/*.java; do echo "javac $f"; done
javac -Xlint:all -d out src/*.java
echo "running tests"
java -cp out TestMain
""",
}

PROJECTS: dict[str, dict[str, str]] = {
    "ledger": _LEDGER,
    "textkit": _TEXTKIT,
    "clib": _CLIB,
    "geom": _GEOM,
    "units": _UNITS,
    "release": _RELEASE,
    "stock": _STOCK,
    "calc": _JAVA,
}

_PYTEST_V = ("{python}", "-m", "pytest", "-v")
_PYTEST = ("{python}", "-m", "pytest")
_UNITTEST_V = ("{python}", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
_UNITTEST = ("{python}", "-m", "unittest", "discover", "-s", "tests", "-t", ".")

PAIRS: tuple[Pair, ...] = (
    # pytest
    Pair(
        "pytest-rounding",
        "pytest",
        "ledger",
        _PYTEST_V,
        ("ledger/money.py", "rounding=ROUND_HALF_UP", 'rounding="ROUND_HALF_EVEN"'),
        (r"test_round_cents\[1\.005-1\.01\]", r"^E\s+AssertionError: assert Decimal\('1.00'\) == Decimal\('1.01'\)"),
    ),
    Pair(
        "pytest-no-raise",
        "pytest",
        "ledger",
        _PYTEST,
        ("ledger/accounts.py", "        if amount > self.balance:\n", "        if amount > self.balance + 1:\n"),
        (r"test_withdraw_error_when_insufficient", r"^E\s+Failed: DID NOT RAISE"),
    ),
    Pair(
        "pytest-name-error",
        "pytest",
        "ledger",
        _PYTEST_V,
        ("ledger/importer.py", "raise ParseError(number, str(exc))", "raise ParseError(number, str(error))"),
        (r"^E\s+NameError: name 'error' is not defined", r"^ledger/importer.py:\d+: NameError"),
    ),
    Pair(
        "pytest-import-error",
        "pytest",
        "ledger",
        _PYTEST,
        ("ledger/report.py", "def monthly_totals(entries):", "def totals_by_month(entries):"),
        (r"ImportError: cannot import name 'monthly_totals'", r"ERROR tests/test_report.py"),
    ),
    # unittest
    Pair(
        "unittest-slug",
        "unittest",
        "textkit",
        _UNITTEST_V,
        ("textkit/slug.py", "text.lower())", "text)"),
        (r"^FAIL: test_unique_slug_free|^FAIL: test_simple|^FAIL: test_punctuation", r"^AssertionError: '"),
    ),
    Pair(
        "unittest-exception",
        "unittest",
        "textkit",
        _UNITTEST_V,
        (
            "textkit/tokens.py",
            '            tokens.append(("op", ch))\n',
            '            tokens.append(("op", ch.kind))\n',
        ),
        (r"^ERROR: test_\w+ \(tests.test_tokens", r"AttributeError: 'str' object has no attribute 'kind'"),
    ),
    Pair(
        "unittest-wrap",
        "unittest",
        "textkit",
        _UNITTEST,
        ("textkit/wrap.py", "len(line) + 1 + len(word) > width", "len(line) + 1 + len(word) >= width"),
        (r"^FAIL: test_wrap_10", r"^AssertionError: Lists differ"),
    ),
    Pair(
        "unittest-syntax",
        "unittest",
        "textkit",
        _UNITTEST_V,
        ("textkit/wrap.py", 'def indent(lines, prefix="    "):', 'def indent(lines, prefix="    ")'),
        (r"textkit/wrap.py\", line \d+", r"SyntaxError: expected ':'"),
    ),
    # make with gcc
    Pair(
        "make-undeclared",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/csv.c",
            "        if (len < 63) fields[n][len++] = *p;",
            "        if (length < 63) fields[n][len++] = *p;",
        ),
        (r"src/csv.c:\d+:\d+: error: .length. undeclared", r"make: \*\*\*"),
    ),
    Pair(
        "make-link",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/hashmap.c",
            "int hashmap_remove(hashmap *m, const char *key) {",
            "int hashmap_delete(hashmap *m, const char *key) {",
        ),
        (r"undefined reference to `hashmap_remove'", r"ld returned 1 exit status"),
    ),
    Pair(
        "make-test-fails",
        "make",
        "clib",
        ("make", "test"),
        (
            "src/strbuf.c",
            "while (end > start && b->data[end - 1] == ' ') end--;",
            "while (end > start + 1 && b->data[end - 2] == ' ') end--;",
        ),
        (r"test strbuf_trim\s+FAILED: expected \"abc\"", r"make: \*\*\* \[Makefile:\d+: test\] Error 1"),
    ),
    Pair(
        "make-segfault",
        "make",
        "clib",
        ("make", "test"),
        ("src/csv.c", "    fields[0][0] = 0;\n", "    fields = NULL;\n    fields[0][0] = 0;\n"),
        (r"^test hashmap_remove_missing\s+ok", r"make: \*\*\* \[Makefile:\d+: test\] Segmentation fault"),
    ),
    # cargo
    Pair(
        "cargo-assert",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("src/shapes.rs", "    twice.abs() / 2.0", "    twice / 2.0"),
        (
            r"^test shapes::tests::clockwise_polygon_area \.\.\. FAILED",
            r"assertion `left == right` failed",
            r"^\s+left: -6\.0",
        ),
    ),
    Pair(
        "cargo-type-error",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("src/parse.rs", "    let mut total = 0.0;", "    let mut total = 0;"),
        (r"error\[E0277\]|error\[E0308\]", r"--> src/parse.rs:\d+:\d+"),
    ),
    Pair(
        "cargo-moved",
        "cargo",
        "geom",
        ("cargo", "test"),
        (
            "src/vec2.rs",
            "    let labels: Vec<String> = points.iter()",
            "    let owned = points;\n    let _n = owned.len();\n    let labels: Vec<String> = points.iter()",
        ),
        (r"error\[E0382\]: borrow of moved value: `points`", r"--> src/vec2.rs:\d+:\d+"),
    ),
    Pair(
        "cargo-unwrap",
        "cargo",
        "geom",
        ("cargo", "test"),
        ("tests/integration.rs", 'parse_shape("poly 0 0 4 0 4 4 0 4")', 'parse_shape("poly 0 0 4 0 4 4 0")'),
        (
            r"called `Result::unwrap\(\)` on an `Err` value: BadNumber|on an `Err` value",
            r"^test polygon_from_text \.\.\. FAILED",
        ),
    ),
    # npm test
    Pair(
        "npm-assert",
        "npm",
        "units",
        ("npm", "test"),
        ("src/convert.js", "km: 1000,", "km: 100,"),
        (r"not ok \d+ - km to m", r"Expected values to be strictly equal|200 !== 2000"),
    ),
    Pair(
        "npm-type-error",
        "npm",
        "units",
        ("npm", "test"),
        ("src/format.js", "${formatQuantity(r.quantity)}", "${formatQuantity(r.amount)}"),
        (r"not ok \d+ - aligns labels", r"Cannot read properties of undefined"),
    ),
    Pair(
        "npm-syntax",
        "npm",
        "units",
        ("npm", "test"),
        (
            "src/parse.js",
            "  return { value: Number(match[1]), unit: match[2].toLowerCase() };",
            "  return { value: Number(match[1]), unit: match[2].toLowerCase() ;",
        ),
        (r"SyntaxError: Unexpected token", r"src/parse.js:\d+"),
    ),
    # shell script
    Pair(
        "shell-missing-file",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("config/app.conf", "", None),
        (r"cp: cannot stat 'config/app.conf'",),
    ),
    Pair(
        "shell-debug-left",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("src/03-config.txt", "config line 1:", "DEBUG_ONLY config line 1:"),
        (r"^src/03-config.txt:\d+:DEBUG_ONLY", r"error: debug statements left in src/"),
    ),
    Pair(
        "shell-checksum",
        "shell",
        "release",
        ("bash", "scripts/ci.sh"),
        ("config/app.conf", "port = 8080", "port = 8081"),
        (r"app.conf: FAILED", r"WARNING: 1 computed checksum did NOT match"),
    ),
    # -- beyond the 22 pairs of issue 32 (EXTRA): lint and type checks, a JVM build --------------------
    # mypy
    Pair(
        "mypy-arg-type",
        "mypy",
        "stock",
        _MYPY,
        ("stock/report.py", "money(shelf.value_cents())", "money(str(shelf.value_cents()))"),
        (r'report.py:\d+: error: Argument 1 to "money" has incompatible type "str"',),
    ),
    Pair(
        "mypy-return",
        "mypy",
        "stock",
        _MYPY,
        ("stock/load.py", '    return int(whole) * 100 + int((frac + "00")[:2])', "    return whole"),
        (r"load.py:\d+: error: Incompatible return value type",),
    ),
    # ruff
    Pair(
        "ruff-unused-import",
        "ruff",
        "stock",
        _RUFF,
        ("stock/items.py", "from dataclasses import", "import os\nfrom dataclasses import"),
        (r"F401.*`os` imported but unused", r"stock/items.py:\d+:\d+"),
    ),
    Pair(
        "ruff-none-compare",
        "ruff",
        "stock",
        _RUFF,
        ("stock/report.py", "if best is None or", "if best == None or"),
        (r"E711", r"stock/report.py:\d+:\d+"),
    ),
    # java (javac, a test runner of its own)
    Pair(
        "java-assert",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Stats.java", "sorted[(sorted.length - 1) / 2]", "sorted[sorted.length / 2]"),
        (r"^test medianEven\s+FAILED", r"AssertionError: expected <2> but was <3>"),
    ),
    Pair(
        "java-exception",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Text.java", "        if (s.isEmpty()) return s;\n", ""),
        (
            r"^test capitalizedEmpty\s+FAILED",
            r"StringIndexOutOfBoundsException",
            r"at Text.capitalize\(Text.java:\d+\)",
        ),
    ),
    Pair(
        "java-compile",
        "java",
        "calc",
        ("sh", "build.sh"),
        ("src/Calc.java", "return Integer.parseInt(text.trim());", "return text.trim();"),
        (r"src/Calc.java:\d+: error: incompatible types: String cannot be converted to int",),
    ),
)
ISSUE_PAIRS = 22  # the first pairs, those issue 32 asked for; the rest are EXTRA


ENV = {"CARGO_NET_OFFLINE": "true", "NO_COLOR": "1", "LC_ALL": "C.UTF-8"}


def write_project(folder: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def change(folder: Path, pair: Pair) -> None:
    """Make the pair's one change in ``folder``."""
    path, old, new = pair.change
    target = folder / path
    if new is None:
        target.unlink()
        return
    text = target.read_text()
    if old not in text:
        raise SystemExit(f"{pair.name}: {old!r} is not in {path}")
    target.write_text(text.replace(old, new, 1))


# the commands each kind of pair runs, besides python
NEEDS = {
    "make": ("make", "gcc"),
    "cargo": ("cargo",),
    "npm": ("npm", "node"),
    "shell": ("bash",),
    "java": ("javac", "java"),
}


def missing(pair: Pair) -> str | None:
    """The command or Python module ``pair`` needs that is not installed, or None."""
    if pair.command[:2] == ("{python}", "-m"):
        return None if importlib.util.find_spec(pair.command[2]) else f"python -m {pair.command[2]}"
    return next((tool for tool in NEEDS.get(pair.kind, ()) if shutil.which(tool) is None), None)


def command(pair: Pair) -> list[str]:
    return [sys.executable if arg == "{python}" else arg for arg in pair.command]


def run(argv: list[str], folder: Path, env: dict[str, str] | None = None) -> tuple[int, bytes]:
    done = subprocess.run(
        argv, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **ENV, **(env or {})}
    )
    return done.returncode, done.stdout


def make_pair(pair: Pair, work: Path) -> tuple[bytes, bytes]:
    """The passing and the failing run's output of ``pair``, made in a folder under ``work``."""
    folder = work / pair.name
    write_project(folder, PROJECTS[pair.project])
    status, passed = run(command(pair), folder)
    if status != 0:
        raise SystemExit(f"{pair.name}: the passing run exited {status}:\n{passed.decode(errors='replace')}")
    change(folder, pair)
    status, failed = run(command(pair), folder)
    if status == 0:
        raise SystemExit(f"{pair.name}: the change did not make the run fail")
    return passed, failed


def filtered(data: bytes, baseline: Baseline | None) -> tuple[bytes, set[int]]:
    """The text output of ``data`` as ``streamfilter filter`` writes it for a file named ``fail.log``
    (refs shortened after the first, which says how to use one), and the numbers of the lines kept."""
    sf = StreamFilter(baseline=baseline)
    runs = sf.feed(data) + sf.flush()
    refs = TextRefs()
    out = bytearray()
    for r in runs:
        ref = refs(ref_of("fail.log", r))
        out += render(r, "text", "fail.log", ref, None, refs.note(ref))
    kept = {n for r in runs if r.decision == "keep" for n in range(r.first_line, r.last_line + 1)}
    return bytes(out), kept


def recall(pair: Pair, data: bytes, kept: set[int]) -> int:
    """How many of the pair's labels have a line kept."""
    lines = data.decode("utf-8", "replace").split("\n")
    found = 0
    for label in pair.labels:
        hits = {i + 1 for i, line in enumerate(lines) if re.search(label, line)}
        if not hits:
            raise SystemExit(f"{pair.name}: label {label!r} matches no line of the failing run")
        found += bool(hits & kept)
    return found


def live_bytes(pair: Pair, work: Path) -> tuple[int, int]:
    """Output bytes of the failing run through ``streamfilter run``, weighed with the baseline the
    passing run stored, and with ``--no-baseline``."""
    folder = work / f"{pair.name}-live"
    write_project(folder, PROJECTS[pair.project])
    state = {"XDG_STATE_HOME": str(work / f"{pair.name}-state")}
    sf = [sys.executable, "-m", "streamfilter", "run", "--tee", "fail.log", "--"]
    status, _ = run(sf + command(pair), folder, state)
    assert status == 0, pair.name
    change(folder, pair)
    _, weighed = run(sf + command(pair), folder, state)
    _, plain = run([*sf[:4], "--no-baseline", *sf[4:], *command(pair)], folder, state)
    return len(plain), len(weighed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the pairs' logs in this folder")
    parser.add_argument("--only", nargs="+", help="these pairs only")
    parser.add_argument("--live", action="store_true", help="also through streamfilter run")
    args = parser.parse_args()
    pairs = [p for p in PAIRS if not args.only or p.name in args.only]
    header = "| pair | kind | input B | recall without | recall with | bytes without | bytes with | saved |"
    if args.live:
        header += " run without | run with |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    totals = [0, 0, 0, 0, 0, 0, 0]
    issue = [0, 0, 0, 0, 0]  # the totals of issue 32's pairs
    skipped: list[tuple[Pair, str]] = []
    by_kind: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="sf-novelty-") as tmp:
        work = Path(tmp)
        for pair in pairs:
            tool = missing(pair)
            if tool is not None:
                skipped.append((pair, tool))
                continue
            passed, failed = make_pair(pair, work)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{pair.name}.pass.log").write_bytes(passed)
                (args.keep / f"{pair.name}.fail.log").write_bytes(failed)
            good = work / f"{pair.name}.pass.log"
            good.write_bytes(passed)
            baseline = baseline_of_files([str(good)], StreamFilter().config.max_line_bytes)
            plain, plain_kept = filtered(failed, None)
            weighed, weighed_kept = filtered(failed, baseline)
            n = len(pair.labels)
            r0, r1 = recall(pair, failed, plain_kept), recall(pair, failed, weighed_kept)
            saved = 1 - len(weighed) / len(plain)
            row = f"| {pair.name} | {pair.kind} | {len(failed)} | {r0}/{n} | {r1}/{n} | {len(plain)} | {len(weighed)} |"
            row += f" {saved:.0%} |"
            if args.live:
                a, b = live_bytes(pair, work)
                row += f" {a} | {b} |"
                totals[5] += a
                totals[6] += b
            print(row, flush=True)
            for i, v in enumerate((n, r0, r1, len(plain), len(weighed))):
                totals[i] += v
            kind = by_kind.setdefault(pair.kind, [0, 0, 0, 0, 0])
            for i, v in enumerate((n, r0, r1, len(plain), len(weighed))):
                kind[i] += v
                if PAIRS.index(pair) < ISSUE_PAIRS:
                    issue[i] += v
    n, r0, r1, b0, b1 = totals[:5]
    print()
    print("| kind | labels | recall without | recall with | bytes without | bytes with | saved |")
    print("|---|---|---|---|---|---|---|")
    for kind, (kn, k0, k1, kb0, kb1) in by_kind.items():
        print(f"| {kind} | {kn} | {k0 / kn:.1%} | {k1 / kn:.1%} | {kb0} | {kb1} | {1 - kb1 / kb0:.1%} |")
    if 0 < issue[0] < n:
        m, q0, q1, c0, c1 = issue
        row = f"| issue 32's {ISSUE_PAIRS} pairs | {m} | {q0 / m:.1%} | {q1 / m:.1%} | {c0} | {c1} |"
        print(f"{row} {1 - c1 / c0:.1%} |")
    print(f"| all {len(pairs)} pairs | {n} | {r0 / n:.1%} | {r1 / n:.1%} | {b0} | {b1} | {1 - b1 / b0:.1%} |")
    for pair, tool in skipped:
        print(f"\n{pair.name}: skipped, {tool} is not installed")
    if args.live:
        print(
            f"\nthrough streamfilter run: {totals[5]} bytes without the baseline, {totals[6]} with "
            f"({1 - totals[6] / totals[5]:.1%} fewer)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
