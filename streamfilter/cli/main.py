"""The command line's entry: ``main(argv) -> exit status``, one subcommand module each.

Exit status: 0 done, 1 runtime error, 2 usage error (bad option, bad regex, missing file: one
line on stderr, nothing written to stdout), 78 config error (``daemon``, ``check-config``); ``run``
and ``send`` exit with the command's status.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import __version__
from ..core.errors import StreamfilterError, first_cause
from ..live._logging import configure_logging, get_logger

if TYPE_CHECKING:
    import argparse  # (not at run time: the hook, which runs before every agent command, needs none)

__all__ = ("main",)

# each subcommand: the module of streamfilter.cli and its function that adds the subcommand's parser
_SUBCOMMANDS = {
    "filter": ("filter", "add_parser"),
    "follow": ("follow", "add_parser"),
    "run": ("run", "add_parser"),
    "send": ("run", "add_send_parser"),
    "daemon": ("daemon", "add_parser"),
    "check-config": ("daemon", "add_check_parser"),
    "expand": ("expand", "add_parser"),
    "hook": ("hook", "add_parser"),
    "install": ("install", "add_parser"),  # (and uninstall)
    "uninstall": ("install", "add_parser"),
    "mcp": ("mcp", "add_parser"),
}


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with every subcommand, or with ``command``'s alone when it names
    one (its modules alone are imported: a wrapped command pays for no other subcommand's)."""
    from .options import Parser

    parser = Parser(prog="streamfilter", description="Cut build and test logs down to what matters.")
    parser.add_argument("--version", action="version", version=f"streamfilter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    chosen = [_SUBCOMMANDS[command]] if command in _SUBCOMMANDS else dict.fromkeys(_SUBCOMMANDS.values())
    for module, add in chosen:
        getattr(importlib.import_module(f".{module}", __package__), add)(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status. As the
    program itself (no ``argv``), ``run`` and ``send`` die of the signal that killed their command
    (``run.die_of``) instead of returning its status, and a ^C that no subcommand took (one as it
    starts) kills it with SIGINT, as it would a program without a handler: a shell's loop stops
    (it had exited 130, and the loop went on, helper-104); else 130."""
    program = argv is None
    if program and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        # a ^C before a subcommand takes the signal kills the program by it at once: Python's
        # KeyboardInterrupt in an import had printed a traceback and exited 1, or left numpy half
        # loaded ("cannot load module more than once per process", helper-113)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        return _main(argv, program)
    except KeyboardInterrupt:
        if program:
            from ..live.envelope import Ended
            from .run import die_of

            die_of(Ended.of(-signal.SIGINT))
        return 130


def _main(argv: Sequence[str] | None, program: bool) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:  # an agent runs it before every command: no more imports than it needs
        from . import hook

        try:
            return hook.main(argv[1:])
        except BrokenPipeError:
            return _reader_gone()
    _numpy_on_one_thread()
    configure_logging()
    args = _parser(argv[0] if argv else None).parse_args(argv)
    try:
        try:
            result = args.handler(args)
            if not isinstance(result, int):  # (run's and send's ``Ended``; not imported by the hooks' path)
                if program:
                    from .run import die_of

                    die_of(result)
                return int(result.status)
            return result
        except BaseExceptionGroup as group:  # from the daemon's task groups: report the first cause
            raise first_cause(group) from None
    except StreamfilterError as exc:
        from ..live.terminal import escape_control_text  # (errors name paths a log can forge: shown, not acted on)

        lines = str(exc).splitlines() or [""]
        sys.stderr.writelines(f"streamfilter: error: {escape_control_text(line).decode()}\n" for line in lines)
        _failed(args.command, str(exc), exc.exit_code)
        return exc.exit_code
    except BrokenPipeError:
        return _reader_gone()
    except OSError as exc:  # a socket or file the daemon could not open
        where = f" {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"streamfilter: error:{where} {exc.strerror or exc}\n")
        _failed(args.command, f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc), 1)
        return 1


# read by numpy's OpenBLAS once, as it loads: the threads it starts for its matrix products
BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def _numpy_on_one_thread() -> None:
    """Import numpy with OpenBLAS on one thread, then put the environment back as it was.

    OpenBLAS starts a thread per core as numpy loads, and each spins for work (about 0.1 s) before
    it sleeps: about 100 ms of CPU of every wrapped command (``benchmarks/hook_latency.py``), in a
    program that multiplies no matrices. The environment is as it was before anything else runs,
    so the commands streamfilter starts get it as it was given; a value the user set is kept.
    """
    if "numpy" in sys.modules or BLAS_THREADS in os.environ:
        return
    os.environ[BLAS_THREADS] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ[BLAS_THREADS]


def _reader_gone() -> int:
    """The reader of stdout went away (e.g. ``| head``): not an error of ours, exit 0 quietly, as
    ``filter`` does; stdout goes to /dev/null so Python does not complain when it flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def _failed(command: str, error: str, exit_code: int) -> None:
    """A daemon that cannot start or go on says so in its own logs too (``daemon.failed``, a JSON
    line in the journal beside its other events), after the plain line."""
    if command == "daemon":
        get_logger().error("daemon.failed", error=error, exit_code=exit_code)


if __name__ == "__main__":
    sys.exit(main())
