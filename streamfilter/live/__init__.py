"""Live I/O around the core: sources (files, sockets, stdin, commands), sinks, checkpoints,
the archive that refs read back, the daemon and its config, systemd."""
