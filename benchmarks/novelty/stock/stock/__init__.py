"""A typed stock ledger."""
