"""Accounts with a balance and a history."""

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
