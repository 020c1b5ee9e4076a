import datetime
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
