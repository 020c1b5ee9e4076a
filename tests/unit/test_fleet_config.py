"""The nats source and sink keys and ``[metrics]`` in a daemon config; what a header-less NATS
message adds to its stream; the metrics exposition of the daemon's counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from streamfilter.live.config import ConfigError, DaemonConfig, load_config
from streamfilter.live.metrics import TotalsCollector
from streamfilter.live.nats.source import message_lines
from streamfilter.live.totals import Totals

WORKER = '[[source]]\ntype = "nats"\nservers = ["nats://127.0.0.1:4222"]\n'


def load(tmp_path: Path, body: str) -> DaemonConfig:
    path = tmp_path / "c.toml"
    path.write_text(body)
    return load_config(path)


def test_a_nats_source_needs_only_its_servers(tmp_path: Path) -> None:
    (source,) = load(tmp_path, WORKER).sources
    assert source.servers == ("nats://127.0.0.1:4222",)
    assert (source.stream, source.subject, source.partitions, source.consumer) == (
        "STREAMFILTER",
        "logs",
        8,
        "streamfilter",
    )
    assert (source.ack_wait_seconds, source.lease_seconds, source.max_ack_pending, source.payload) == (
        30.0,
        10.0,
        256,
        "lines",
    )


def test_a_nats_sink_publishes_jsonl_and_metrics_take_an_address(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        WORKER + 'sinks = ["out"]\n[[sink]]\nname = "out"\ntype = "nats"\nservers = ["nats://h:4222"]\n'
        '[metrics]\naddress = ":9464"\n',
    )
    sink = config.sinks[1]
    assert (sink.type, sink.format, sink.stream, sink.subject, sink.path) == (
        "nats",
        "jsonl",
        "STREAMFILTER_OUT",
        "filtered",
        "",
    )
    assert config.metrics == "127.0.0.1:9464"
    assert load(tmp_path, WORKER).metrics == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[[source]]\ntype = "nats"\n', "source[0].servers: missing"),
        ('[[source]]\ntype = "nats"\nservers = []\n', "source[0].servers: is empty"),
        ('[[source]]\ntype = "nats"\nservers = ["127.0.0.1:4222"]\n', "must be nats://HOST:PORT"),
        (WORKER + "partitions = 0\n", "source[0].partitions: must be 1 to 1024, not 0"),
        (WORKER + "max_ack_pending = 4\n", "source[0].max_ack_pending: must be 64 to 1048576, not 4"),
        (WORKER + 'subject = "logs.a"\n', "source[0].subject: 'logs.a': use letters"),
        (WORKER + "lease_seconds = 0.5\n", "source[0].lease_seconds: must be 1 to 86400"),
        (WORKER + 'payload = "json"\n', "source[0].payload: must be one of lines, fluent-bit"),
        (WORKER + 'path = "/x"\n', "source[0].path: only a file or unix source has one, not nats"),
        ('[[source]]\ntype = "stdin"\nservers = ["nats://h:1"]\n', "source[0].servers: only a nats source"),
        (
            WORKER + '[[sink]]\nname = "o"\ntype = "nats"\nservers = ["nats://h:1"]\nformat = "text"\n',
            "sink[0].format: a nats sink publishes jsonl events",
        ),
        (
            WORKER + '[[sink]]\nname = "o"\ntype = "nats"\nservers = ["nats://h:1"]\npath = "/x"\n',
            "sink[0].path: only a file or unix sink has one, not nats",
        ),
        (WORKER + "[metrics]\n", "metrics.address: missing"),
        (WORKER + '[metrics]\naddress = "localhost"\n', "metrics.address: must be HOST:PORT"),
        (WORKER + '[metrics]\naddress = ":1"\nport = 2\n', "metrics.port: unknown key"),
    ],
)
def test_nats_and_metrics_mistakes_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, body)
    assert message in str(caught.value)


def test_a_message_without_an_offset_is_whole_lines() -> None:
    assert message_lines(b"make: *** [all] Error 2", "lines") == b"make: *** [all] Error 2\n"
    assert message_lines(b"two\nlines\n", "lines") == b"two\nlines\n"
    assert message_lines(b"", "lines") == b"\n"
    fluent = json.dumps([[1700000000.5, {"log": "error: x\n", "file": "a.log"}], [1700000001, {"other": 1}]])
    assert message_lines(fluent.encode(), "fluent-bit") == b'error: x\n{"other": 1}\n'
    assert message_lines(b"[INFO] not json", "fluent-bit") == b"[INFO] not json\n"


def test_the_daemons_counts_as_prometheus_metrics() -> None:
    totals = Totals()
    totals.add("ci", [10, 3, 7, 100, 30, 70, 1, 2])
    totals.decided("ci", 0.003)
    totals.decided("ci", 40.0)
    totals.run_ended("ci", 2)
    totals.paused("stdout", "sink", 1.5)
    totals.redeliveries["fleet"] = 4
    totals.lag["fleet", "3"] = 12
    totals.unacked["fleet", "3"] = 256
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TotalsCollector(totals))
    text = generate_latest(registry).decode()
    for sample in (
        'streamfilter_input_lines_total{source="ci"} 10.0',
        'streamfilter_input_bytes_total{source="ci"} 100.0',
        'streamfilter_kept_lines_total{source="ci"} 3.0',
        'streamfilter_dropped_bytes_total{source="ci"} 70.0',
        'streamfilter_output_runs_total{decision="drop",source="ci"} 2.0',
        'streamfilter_command_runs_total{outcome="failure",source="ci"} 1.0',
        'streamfilter_decision_latency_seconds_bucket{le="0.005",source="ci"} 1.0',
        'streamfilter_decision_latency_seconds_bucket{le="+Inf",source="ci"} 2.0',
        'streamfilter_decision_latency_seconds_count{source="ci"} 2.0',
        'streamfilter_backpressure_pauses_total{reason="sink",where="stdout"} 1.0',
        'streamfilter_backpressure_seconds_total{reason="sink",where="stdout"} 1.5',
        'streamfilter_nats_redeliveries_total{source="fleet"} 4.0',
        'streamfilter_nats_consumer_lag_messages{partition="3",source="fleet"} 12.0',
        'streamfilter_nats_unacked_messages{partition="3",source="fleet"} 256.0',
    ):
        assert sample in text, sample
