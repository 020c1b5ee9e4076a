"""The pure, synchronous stages: bytes -> lines -> windows -> scores -> decisions -> runs.

Nothing here reads a clock, a socket or a file other than the shipped prior weights; the
live I/O (``streamfilter.live``) and the command line (``streamfilter.cli``) import from here,
never the other way.
"""
