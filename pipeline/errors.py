"""The errors a user can fix: each message names the setting or file, what is wrong, and the fix.
A leaf module, so that every layer can raise them without importing the layers above."""


class ConfigError(ValueError):
    """A config value that cannot work; the CLI turns it into exit 2."""


class InputError(ConfigError):
    """A user's input file that cannot be used (not UTF-8, a missing column, too few tokens)."""
