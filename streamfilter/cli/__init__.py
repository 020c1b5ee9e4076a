"""The command line: one module per subcommand, ``main`` in ``streamfilter.cli.main``."""
