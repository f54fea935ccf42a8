"""Tools for backend authors: the conformance suite every backend, built-in or plugin, must pass."""
