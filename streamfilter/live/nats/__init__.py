"""A pool of workers over NATS JetStream (docs/fleet.md): ``link`` (the connection, streams and
headers they share), ``source`` (a worker), ``leases`` (their renewal on a thread), ``sink`` (a
stream's output events) and ``send`` (``send --nats``). Imported only for a config or command that
uses NATS, so nats-py loads only then."""

__all__ = ()
