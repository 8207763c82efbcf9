"""The home folder and ``config.yaml``: read at call time, so tests and users can move ``HERMES_NB_HOME``."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hermes_nb.tools.errors import ConfigError

__all__ = ["config_path", "expand_vars", "hermes_home", "load_config", "save_config", "update_config", "using_home",
           "write_config_text"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_lock = threading.Lock()
#: Bumped by every write through ``save_config``: readers that keep a parsed copy (the approval rules)
#: compare it, so hermes_nb's own edits apply at the next call without a look at the file.
generation = 0


def hermes_home() -> Path:
    """``$HERMES_NB_HOME``, else ``~/.hermes_nb`` (not created here)."""
    env = os.environ.get("HERMES_NB_HOME")
    return Path(env).expanduser() if env else Path.home() / ".hermes_nb"


@contextmanager
def using_home(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Point ``HERMES_NB_HOME`` at ``path`` for the block (scripts, benchmarks), then put it back."""
    saved = os.environ.get("HERMES_NB_HOME")
    os.environ["HERMES_NB_HOME"] = os.fspath(path)
    try:
        yield Path(path)
    finally:
        if saved is None:
            os.environ.pop("HERMES_NB_HOME", None)
        else:
            os.environ["HERMES_NB_HOME"] = saved


def config_path() -> Path:
    return hermes_home() / "config.yaml"


def config_file() -> str:
    """``config_path()`` as a string, built once per ``HERMES_NB_HOME``/``HOME`` (a Path costs microseconds,
    and the budget asks for it several times per call)."""
    env = os.environ.get("HERMES_NB_HOME")
    return _config_file(env, None if env else os.environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _config_file(home_env: str | None, home: str | None) -> str:
    return str(config_path())


def expand_vars(value: Any) -> Any:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in every string of a YAML tree (unset → empty)."""
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(2) or ""), value)
    if isinstance(value, list):
        return [expand_vars(v) for v in value]
    if isinstance(value, dict):
        return {k: expand_vars(v) for k, v in value.items()}
    return value


def load_config(*, expand: bool = True) -> dict[str, Any]:
    """The parsed config (``{}`` when there is none). A file that is not a YAML mapping is a ConfigError."""
    import yaml

    path = config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    except UnicodeDecodeError as exc:  # a ValueError: every caller handles ConfigError, none this
        raise ConfigError(f"{path}: not UTF-8 text: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(data).__name__}")
    return expand_vars(data) if expand else data


def save_config(config: dict[str, Any]) -> Path:
    """Write the whole config atomically and link-safely (``tools.safety.safe_write``)."""
    import yaml

    return write_config_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))


def write_config_text(text: str) -> Path:
    """Write config.yaml's text as given (an edit that keeps the person's comments), atomically and
    link-safe (``safety.safe_write``)."""
    from hermes_nb.tools.safety.safe_write import write_atomic

    path = config_path()
    write_atomic(Path(os.path.realpath(path.parent)), path.name, text.encode("utf-8"))
    global generation
    generation += 1
    return path


def update_config(mutate) -> dict[str, Any]:
    """Read the unexpanded config, let ``mutate(cfg)`` change it in place, save it, return it."""
    with _lock:
        cfg = load_config(expand=False)
        mutate(cfg)
        save_config(cfg)
        return cfg
