"""The errors a user can fix: each message names the setting or file, what is wrong, and the fix.
A leaf module, so that every layer can raise them without importing the layers above."""
import errno

# what a write can fail with that the user fixes outside the program (space, size limit, permissions): exit 4
WRITE_ERRORS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM))


class ConfigError(ValueError):
    """A config value that cannot work; the CLI turns it into exit 2."""


class InputError(ConfigError):
    """A user's input file that cannot be used (not UTF-8, a missing column, too few tokens)."""


class ModelUnloadable(ConfigError):
    """A model that was found and checked but failed to load: stops its stage once, naming its files."""
