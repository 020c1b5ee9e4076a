"""The daemon's Prometheus endpoint (``[metrics] address = "HOST:PORT"``): ``GET /metrics``.

Everything is read from ``Totals`` when Prometheus scrapes (a thread of prometheus-client's own
serves it), so counting costs the daemon no more than it did. Names (each with a ``source``
label unless said otherwise):

- ``streamfilter_input_lines_total``, ``streamfilter_input_bytes_total``: what came in.
- ``streamfilter_kept_lines_total``, ``streamfilter_kept_bytes_total``,
  ``streamfilter_dropped_lines_total``, ``streamfilter_dropped_bytes_total``: what was decided.
- ``streamfilter_output_runs_total{decision}``: KEEP and DROP runs written.
- ``streamfilter_command_runs_total{outcome}``: commands' runs ended (success, failure, unknown).
- ``streamfilter_decision_latency_seconds``: from a chunk's arrival to its last byte's decision
  written (a histogram).
- ``streamfilter_backpressure_pauses_total{where, reason}`` and
  ``streamfilter_backpressure_seconds_total{where, reason}``: reading waited for a sink (``sink``)
  or a NATS stream's queue (``stream_queue``).
- ``streamfilter_nats_redeliveries_total``: messages NATS delivered again;
  ``streamfilter_nats_consumer_lag_messages{partition}``: messages not yet delivered to this
  worker's consumers; ``streamfilter_nats_unacked_messages{partition}``: delivered and not yet
  acked (a partition whose messages wait on this worker: at ``max_ack_pending`` the server sends
  no more); ``streamfilter_nats_streams_resumed_total``: streams taken over here.

Only ``/metrics`` is served; another path is 404 (a probe of ``/health`` had been answered 200
with the metrics, whatever the worker's state, helper-82).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from ..core.errors import StreamfilterError
from .totals import COUNTS, LATENCY_BUCKETS, Totals

__all__ = ("MetricsServer", "TotalsCollector")

_PER_SOURCE = {  # Totals.by_source's column -> (metric name, help)
    "lines": ("streamfilter_input_lines", "Lines read."),
    "bytes": ("streamfilter_input_bytes", "Bytes read (of complete lines)."),
    "kept_lines": ("streamfilter_kept_lines", "Lines kept verbatim."),
    "kept_bytes": ("streamfilter_kept_bytes", "Bytes kept verbatim."),
    "dropped_lines": ("streamfilter_dropped_lines", "Lines dropped (counted in a summary)."),
    "dropped_bytes": ("streamfilter_dropped_bytes", "Bytes dropped (counted in a summary)."),
}


class TotalsCollector(Collector):
    """Prometheus metrics made from ``totals`` at each scrape (see the module docstring)."""

    def __init__(self, totals: Totals) -> None:
        self.totals = totals

    def collect(self) -> Iterator[Metric]:
        """The metric families, from a copy of each table (the event loop goes on changing them)."""
        t = self.totals
        # (list(d.items()) copies in one step under the GIL: no 'changed size during iteration')
        rows = list(t.by_source.items())
        for column, (name, text) in _PER_SOURCE.items():
            family = CounterMetricFamily(name, text, labels=["source"])
            for source, row in rows:
                family.add_metric([source], row[COUNTS.index(column)])
            yield family
        runs = CounterMetricFamily(
            "streamfilter_output_runs", "KEEP and DROP runs written.", labels=["source", "decision"]
        )
        for source, row in rows:
            runs.add_metric([source, "keep"], row[COUNTS.index("keep_runs")])
            runs.add_metric([source, "drop"], row[COUNTS.index("drop_runs")])
        yield runs
        commands = CounterMetricFamily(
            "streamfilter_command_runs", "Commands' runs ended, by outcome.", labels=["source", "outcome"]
        )
        for (source, outcome), n in list(t.command_runs.items()):
            commands.add_metric([source, outcome], n)
        yield commands
        latency = HistogramMetricFamily(
            "streamfilter_decision_latency_seconds",
            "Seconds from a chunk's arrival to the decision on its last byte being written.",
            labels=["source"],
        )
        for source, cells in list(t.latency.items()):
            counts = list(cells)
            cumulative, buckets = 0.0, []
            for bound, in_bucket in zip([*(str(b) for b in LATENCY_BUCKETS), "+Inf"], counts[:-1], strict=True):
                cumulative += in_bucket
                buckets.append((bound, cumulative))
            latency.add_metric([source], buckets, sum_value=counts[-1])
        yield latency
        pauses = CounterMetricFamily(
            "streamfilter_backpressure_pauses", "Times reading waited for a sink or queue.", labels=["where", "reason"]
        )
        seconds = CounterMetricFamily(
            "streamfilter_backpressure_seconds", "Seconds reading waited.", labels=["where", "reason"]
        )
        for (where, reason), n in list(t.pauses.items()):
            pauses.add_metric([where, reason], n)
            seconds.add_metric([where, reason], t.paused_seconds.get((where, reason), 0.0))
        yield pauses
        yield seconds
        redelivered = CounterMetricFamily(
            "streamfilter_nats_redeliveries", "Messages NATS delivered again.", labels=["source"]
        )
        for source, n in list(t.redeliveries.items()):
            redelivered.add_metric([source], n)
        yield redelivered
        moved = CounterMetricFamily(
            "streamfilter_nats_streams_resumed", "Streams taken over from another worker.", labels=["source"]
        )
        for source, n in list(t.moved.items()):
            moved.add_metric([source], n)
        yield moved
        for name, what, values in (
            ("consumer_lag_messages", "not yet delivered to this worker", t.lag),
            ("unacked_messages", "delivered to this worker and not yet acked", t.unacked),
        ):
            gauge = GaugeMetricFamily(
                f"streamfilter_nats_{name}", f"Messages of a held partition {what}.", labels=["source", "partition"]
            )
            for (source, partition), n in list(values.items()):
                gauge.add_metric([source, partition], n)
            yield gauge


class MetricsServer:
    """``/metrics`` served on ``address`` (``HOST:PORT``) from ``totals`` until ``close``.

    Raises:
        StreamfilterError: the address cannot be listened on.
    """

    def __init__(self, address: str, totals: Totals) -> None:
        host, _, port = address.rpartition(":")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(TotalsCollector(totals))
        try:
            self._server: WSGIServer = make_server(
                host, int(port), _only_metrics(make_wsgi_app(registry)), _Server, handler_class=_Quiet
            )
        except OSError as exc:
            raise StreamfilterError(f"metrics: cannot listen on {address}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)
        self._thread.start()
        self.address = f"{host}:{self._server.server_port}"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(ThreadingMixIn, WSGIServer):
    """A scrape a thread (a slow scraper holds no other)."""

    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    """No line on stderr per scrape (the daemon's stderr is its JSON log)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


_App = Callable[[dict[str, Any], Callable[..., Any]], Any]


def _only_metrics(app: _App) -> _App:
    """``app`` at ``/metrics``; 404 at any other path (prometheus-client answers every path); a
    ``HEAD`` answered as a ``GET`` without its body (prometheus-client's is 405, helper-83)."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO", "") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"only /metrics is served here\n"]
        if environ.get("REQUEST_METHOD") == "HEAD":
            list(app({**environ, "REQUEST_METHOD": "GET"}, start_response))
            return []
        return app(environ, start_response)

    return serve
