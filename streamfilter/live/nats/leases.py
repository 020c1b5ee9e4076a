"""The renewal of a NATS worker's partition leases, on a thread of its own.

A worker's event loop can be busy for seconds (a burst of new streams, large chunks to decide); a
lease renewed from it would then expire, and the partition stop for no reason. So the leases a
worker holds are renewed here, on a thread with its own event loop and connection, every third of
``lease_seconds``; each renewal moves the lease's deadline (``Lease.deadline``, read by the worker's
streams before each write). A renewal that finds the key taken or gone sets the deadline to 0: the
worker's next write for that partition stops it. The thread also renews the worker's own key
(``workers.<id>.<partitions>``), by which the pool counts its workers, and sees the partitions
each is set to.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import nats
import nats.errors
import nats.js.errors
from nats.js.kv import KeyValue

from .._logging import get_logger
from .link import drain_and_close

__all__ = ("LEASE_MARGIN_SECONDS", "Lease", "LeaseKeeper", "pool_partitions")

LEASE_MARGIN_SECONDS = 0.5  # a lease is taken as lost this long (or a quarter of it) before it can expire


def pool_partitions(subjects: Iterable[str]) -> frozenset[str]:
    """The partitions the workers whose keys' subjects are ``subjects`` (``...workers.<id>.<partitions>``,
    ``LeaseKeeper.worker_key``) are set to."""
    return frozenset(count for subject in subjects if (count := subject.rpartition(".")[2]).isdigit())


@dataclass(slots=True)
class Lease:
    """One partition's lease: its key's last revision, and until when (``time.monotonic()``) it is
    surely this worker's (0: lost)."""

    revision: int
    deadline: float


class LeaseKeeper:
    """Renews the leases registered with it (``hold``) from its own thread until ``close``.

    Args:
        servers: the NATS server URLs.
        bucket: the key-value bucket of the leases.
        ident: this worker's id (the value of its lease keys).
        lease_seconds: the bucket's time to live.
        partitions: the partitions this worker is set to (in its own key's name, ``worker_key``).
    """

    def __init__(self, servers: Sequence[str], bucket: str, ident: str, lease_seconds: float, partitions: int) -> None:
        self.servers = list(servers)
        self.bucket = bucket
        self.ident = ident
        self.worker_key = f"workers.{ident}.{partitions}"
        self.lease_seconds = lease_seconds
        self.leases: dict[int, Lease] = {}  # partition -> its lease (shared with the worker's loop)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._log = get_logger().bind(bucket=bucket, worker=ident)
        self._thread = threading.Thread(target=self._main, name="streamfilter-leases", daemon=True)

    def deadline(self, sent: float) -> float:
        """Until when a lease written by a request sent at ``sent`` is this worker's for sure: the
        server counts its age from when it stored it (later), less a margin for a write that is on
        its way when the deadline passes."""
        return sent + self.lease_seconds - max(LEASE_MARGIN_SECONDS, self.lease_seconds / 4)

    def start(self) -> None:
        """Start renewing."""
        self._thread.start()

    def hold(self, partition: int, lease: Lease) -> None:
        """Renew ``lease`` (just claimed) from now on."""
        with self._lock:
            self.leases[partition] = lease

    def drop(self, partition: int) -> Lease | None:
        """Stop renewing ``partition``'s lease; it, or None."""
        with self._lock:
            return self.leases.pop(partition, None)

    def close(self) -> None:
        """Stop the thread (within a renewal's time), if it was started."""
        self._stop.set()
        if self._thread.ident is not None:  # (a stop before the pool's bucket was found: never started)
            self._thread.join(timeout=self.lease_seconds)

    def _main(self) -> None:
        asyncio.run(self._renew_all())

    async def _renew_all(self) -> None:
        name = f"streamfilter leases {self.ident}"
        nc = None
        while not self._stop.is_set():
            try:
                if nc is None or nc.is_closed:
                    # (nats-py's own callbacks print "nats: encountered error" and a traceback, not a
                    # JSON event, while the server restarts, helper-52)
                    nc = await nats.connect(servers=self.servers, name=name, error_cb=self._nats_error)
                kv = await nc.jetstream().key_value(self.bucket)
                await kv.put(self.worker_key, b"")
                with self._lock:
                    held = list(self.leases.items())
                await asyncio.gather(*(self._renew(kv, number, lease) for number, lease in held))
            except (OSError, TimeoutError, nats.errors.Error, nats.js.errors.Error) as exc:
                self._log.warning("leases.unavailable", error=str(exc) or repr(exc))
            await asyncio.to_thread(self._stop.wait, self.lease_seconds / 3)  # (a close ends the wait)
        if nc is not None:
            await drain_and_close(nc, name)

    async def _nats_error(self, exc: Exception) -> None:
        """The leases' connection's errors, as log events (``leases.nats_error``)."""
        self._log.warning("leases.nats_error", error=str(exc) or type(exc).__name__)

    async def _renew(self, kv: KeyValue, number: int, lease: Lease) -> None:
        key, me = f"partition.{number}", self.ident.encode()
        sent = time.monotonic()
        try:
            revision = await kv.update(key, me, last=lease.revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            # an update that timed out may have been stored: still ours if it holds our name
            try:
                entry = await kv.get(key)
            except nats.js.errors.KeyNotFoundError:
                entry = None
            if entry is None or entry.value != me or entry.revision is None:
                lease.deadline = 0.0
                return
            revision = await kv.update(key, me, last=entry.revision)
        except nats.js.errors.KeyNotFoundError:
            lease.deadline = 0.0
            return
        lease.revision = revision
        lease.deadline = self.deadline(sent)
