from decimal import Decimal

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
