"""``streamfilter run`` and ``send``: a command's output, filtered here or sent to a daemon."""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import sys
from typing import Any, BinaryIO, cast

from ..core.errors import StreamfilterError, UsageError
from ..live.envelope import SUCCESS_TAIL_LINES, Ended
from ..live.writes import Escaped
from .options import command_argv, count, filter_config, filter_options

__all__ = ("add_parser", "add_send_parser", "die_of")


def add_parser(sub: Any) -> None:
    """The ``run`` subcommand's options."""
    rn = sub.add_parser(
        "run",
        help="run a command and filter its output as it prints (or, within a token budget, when it ends)",
        description="Run CMD (stdout and stderr merged), print what matters as it comes, exit with CMD's status.",
    )
    filter_options(rn)
    rn.add_argument("--separate", action="store_true", help="filter stdout and stderr as two streams")
    rn.add_argument("--tee", metavar="FILE", help="also write the whole raw output to FILE; refs point into it")
    rn.add_argument(
        "--success-tail",
        type=count(0),
        default=SUCCESS_TAIL_LINES,
        metavar="N",
        help="last lines kept when CMD exits 0 (on failure: --tail) (default %(default)s)",
    )
    rn.add_argument("--raw", action="store_true", help="on a terminal, write control bytes as they are")
    rn.add_argument(
        "--no-baseline",
        action="store_true",
        help="neither weigh the output against CMD's last green run nor store this run's as its baseline",
    )
    rn.add_argument(
        "--budget-tokens",
        type=count(1),
        metavar="N",
        help="decide the output when CMD ends, within about N tokens (what an agent reads); the whole "
        "output is kept in the --tee file or the state directory, named on the last line",
    )
    rn.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the command to run")
    rn.set_defaults(handler=_run)


def add_send_parser(sub: Any) -> None:
    """The ``send`` subcommand's options."""
    sd = sub.add_parser(
        "send",
        help="run a command and stream its output, as one run, to a daemon's socket source or to NATS",
        description="Run CMD and send its output as one run, to a daemon or to NATS workers; exit with CMD's status.",
    )
    to = sd.add_mutually_exclusive_group(required=True)
    to.add_argument("--socket", metavar="PATH|HOST:PORT", help="the daemon's unix or tcp source")
    to.add_argument("--nats", metavar="URL", help="a NATS server (nats://HOST:PORT) that workers consume from")
    sd.add_argument("--stream", metavar="ID", help="with --nats: the stream's id, one per run (letters, digits, _, -)")
    sd.add_argument(
        "--subject",
        default="logs",
        metavar="PREFIX",
        help="with --nats: publish to PREFIX.<partition>.ID (default %(default)s)",
    )
    sd.add_argument(
        "--partitions",
        type=int,
        default=8,
        metavar="N",
        help="with --nats: the workers' partitions (default %(default)s): publish to PREFIX.<partition>.ID",
    )
    sd.add_argument("-q", "--query", help="the run's query (default: the source's)")
    sd.add_argument("--run-id", metavar="ID", help="the run's id (default: random)")
    sd.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the command to run")
    sd.set_defaults(handler=_send)


def _run(args: argparse.Namespace) -> Ended:
    import anyio

    from ..live.baselines import BaselineStore
    from ..live.run import run_budgeted, run_command

    baselines = None if args.no_baseline else BaselineStore()
    if sys.stdout is None:  # (fd 1 closed, `>&-`: CMD runs all the same, as without run, helper-57)
        _stdout_from_devnull()
        sys.stderr.write("streamfilter: warning: standard output is closed: CMD runs, its output is shown nowhere\n")

    if args.budget_tokens is not None:
        if args.separate:
            raise UsageError("--separate does not go with --budget-tokens: a budget decides one stream, at its end")
        config, argv = filter_config(args), command_argv(args)
        out: BinaryIO = sys.stdout.buffer
        if not args.raw and out.isatty():
            out = cast(BinaryIO, Escaped(out))  # only write and flush are used
        end, _ = run_budgeted(
            argv, config, args.format, args.budget_tokens, out, args.tee, args.success_tail, baselines
        )
        return end
    failure_tail = args.tail_lines
    args.tail_lines = max(args.tail_lines, args.success_tail)  # held back for the end either way
    config = filter_config(args)
    argv = command_argv(args)
    return anyio.run(
        lambda: run_command(
            argv, config, args.format, args.separate, args.tee, args.success_tail, args.raw, failure_tail, baselines
        )
    )


def _stdout_from_devnull() -> None:
    """Make a closed standard output (fd 1) /dev/null, and ``sys.stdout`` write to it."""
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:  # (the lowest free descriptor: 1 itself, when it is the one closed)
        os.dup2(fd, 1)
        os.close(fd)
    sys.stdout = open(1, "w", closefd=False)  # (the process's own stdout, as Python opens it)


def die_of(end: Ended) -> None:
    """Kill this process with the signal that killed the command (``end.signum``, if one did), its
    output flushed first, no core dump: as ``timeout`` does, so that a shell's loop stops at a
    Ctrl-C and xargs stops its jobs (helper-57); returns when none did, or it does not kill (a
    signal handled by no default action, one blocked by whoever started us)."""
    if end.signum is None:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (a reader gone, a stream closed: the status says it all)
            if stream is not None:
                stream.flush()
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # (SIGQUIT's and SIGABRT's core is CMD's, not ours)
    # (apart: SIGKILL has no handler to reset, and setting one raised, so run exited 137, helper-68)
    with contextlib.suppress(ValueError, OSError):
        signal.signal(end.signum, signal.SIG_DFL)
    with contextlib.suppress(ValueError, OSError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {end.signum})
        os.kill(os.getpid(), end.signum)


def _send(args: argparse.Namespace) -> Ended:
    import anyio

    from ..live.run import parse_socket, send_command

    if args.query is not None and not args.query.split():
        raise UsageError("--query is empty: give at least one word")
    argv = command_argv(args)
    if args.nats is not None:
        return _send_nats(args, argv)
    if args.stream is not None:
        raise UsageError("--stream goes with --nats")
    kind, where, port = parse_socket(args.socket)

    async def go() -> Ended:
        try:
            stream = await (anyio.connect_tcp(where, port) if kind == "tcp" else anyio.connect_unix(where))
        except OSError as exc:
            raise StreamfilterError(f"cannot connect to {args.socket}: {exc.strerror or exc}") from None
        return await send_command(stream, argv, args.query, args.run_id)

    return anyio.run(go)


def _send_nats(args: argparse.Namespace, argv: list[str]) -> Ended:
    import anyio

    from ..live.config import MAX_PARTITIONS
    from ..live.nats.link import STREAM_ID
    from ..live.nats.send import send_to_nats

    if args.stream is None:
        raise UsageError("--nats needs --stream ID")
    for option, value in (("--stream", args.stream), ("--subject", args.subject)):
        if not STREAM_ID.fullmatch(value):
            raise UsageError(f"{option} {value!r}: use letters, digits, '_' or '-' (one subject token)")
    if not 1 <= args.partitions <= MAX_PARTITIONS:
        raise UsageError(f"--partitions {args.partitions}: from 1 to {MAX_PARTITIONS}, as the workers' partitions")
    return anyio.run(
        lambda: send_to_nats([args.nats], args.stream, argv, args.query, args.run_id, args.subject, args.partitions)
    )
