"""The command line's entry: ``main(argv) -> exit status``, one subcommand module each.

Exit status: 0 done, 1 runtime error, 2 usage error (bad option, bad regex, missing file: one
line on stderr, nothing written to stdout), 78 config error (``daemon``, ``check-config``); ``run``
and ``send`` exit with the command's status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..core.errors import StreamfilterError, first_cause
from ..live._logging import configure_logging, get_logger
from . import hook

__all__ = ("main",)


def _parser() -> argparse.ArgumentParser:
    # (here, not at the top: `hook` runs before every agent command and needs none of them)
    from . import daemon, expand, filter, follow, install, mcp, run
    from .options import Parser

    parser = Parser(prog="streamfilter", description="Cut build and test logs down to what matters.")
    parser.add_argument("--version", action="version", version=f"streamfilter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    filter.add_parser(sub)
    follow.add_parser(sub)
    run.add_parser(sub)
    run.add_send_parser(sub)
    daemon.add_parser(sub)
    daemon.add_check_parser(sub)
    expand.add_parser(sub)
    hook.add_parser(sub)
    install.add_parser(sub)
    mcp.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:  # an agent runs it before every command: no more imports than it needs
        return hook.main(argv[1:])
    configure_logging()
    args = _parser().parse_args(argv)
    try:
        try:
            status: int = args.handler(args)
            return status
        except BaseExceptionGroup as group:  # from the daemon's task groups: report the first cause
            raise first_cause(group) from None
    except StreamfilterError as exc:
        sys.stderr.writelines(f"streamfilter: error: {line}\n" for line in str(exc).splitlines() or [""])
        _failed(args.command, str(exc), exc.exit_code)
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not an error of ours; keep Python from
        # complaining again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a socket or file the daemon could not open
        where = f" {exc.filename}" if exc.filename else ""
        sys.stderr.write(f"streamfilter: error:{where} {exc.strerror or exc}\n")
        _failed(args.command, f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc), 1)
        return 1


def _failed(command: str, error: str, exit_code: int) -> None:
    """A daemon that cannot start or go on says so in its own logs too (``daemon.failed``, a JSON
    line in the journal beside its other events), after the plain line."""
    if command == "daemon":
        get_logger().error("daemon.failed", error=error, exit_code=exit_code)


if __name__ == "__main__":
    sys.exit(main())
