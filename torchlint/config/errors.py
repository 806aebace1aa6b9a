"""The one error type of settings."""


class ConfigError(Exception):
    """A problem with settings; the CLI prints it and exits 2."""
