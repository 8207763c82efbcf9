"""``%load_ext hermes-nb`` (the distribution's name, with a dash) answers in one line instead of a
ModuleNotFoundError traceback: the extension is the import name, ``hermes_nb``."""

from typing import Any


def load_ipython_extension(ip: Any) -> None:
    from IPython.core.error import UsageError

    raise UsageError("the extension's name has an underscore: %load_ext hermes_nb")
