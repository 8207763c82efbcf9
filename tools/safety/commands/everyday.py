"""Read-only uses of programs that are otherwise dangerous: what a data scientist runs every day.

``pip list``, ``conda env list``, ``python --version``, ``nvidia-smi``, ``docker ps``, ``tar -tf``,
``ip addr``, ``less FILE`` (no terminal: it copies), ``git config user.name``. Each checker returns
``SAFE`` for a use it can prove read-only and ``None`` when it cannot (the caller then applies the
program's usual verdict). Anything with an option the checker does not know is not proven.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["SAFE", "everyday", "is_everyday"]

SAFE = "safe"
Checker = Callable[[Sequence[str]], str | None]

# Never `-h` (shutdown -h halts) nor bare `help`/`version` (make runs a target of that name).
_VERSION_WORDS = frozenset({"--version", "-V", "-VV", "--help"})


def _only(args: Sequence[str], allowed: frozenset[str]) -> bool:
    return all(a in allowed for a in args)


def _flags_ok(args: Sequence[str], allowed: tuple[str, ...]) -> bool:
    """Every option word is exactly one of ``allowed`` (its ``=value`` aside); operands (no dash) pass.

    Exact names only: a prefix test would let ``nvidia-smi -lgc`` (lock clocks) pass as ``-l``, and an
    abbreviation (``--pr``) may name another option than the one it resembles.
    """
    return all(not a.startswith("-") or a.partition("=")[0] in allowed for a in args)


# -- package and environment listings ----------------------------------------------------------------

# never --log (writes), --python (runs that interpreter), --cache-dir, --cert...
_PIP_GLOBAL_OK = ("-q", "--quiet", "-v", "--verbose", "--no-color", "--disable-pip-version-check", "--isolated",
                  "--no-input")
_PIP_READ = {"list": ("-o", "--outdated", "-u", "--uptodate", "-e", "--editable", "-l", "--local", "--user",
                      "--format", "--not-required", "--exclude-editable", "--include-editable", "--pre", "--path",
                      "--exclude"),
             "freeze": ("-l", "--local", "--user", "--all", "--exclude-editable", "--path", "--exclude"),
             "show": ("-f", "--files", "-v", "--verbose"), "check": (), "inspect": ("--local", "--user", "--path"),
             "help": (), "--version": (), "-V": (), "--help": ()}


def _pip(args: Sequence[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in _PIP_READ:
        if not args[i].startswith(_PIP_GLOBAL_OK):
            return None
        i += 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1:]
    allowed = _PIP_READ.get(sub)
    if allowed is None:
        return None
    return SAFE if _flags_ok(rest, allowed + ("-q", "-v", "--verbose", "--quiet")) else None


def _conda(args: Sequence[str]) -> str | None:
    if not args:
        return None
    sub, rest = args[0], args[1:]
    if sub in ("list", "info", "--version", "-V", "--help", "search") and _flags_ok(
            rest, ("-n", "--name", "-p", "--prefix", "--json", "-e", "--export", "--explicit", "--revisions",
                   "--envs", "-a", "--all", "--full-name", "--show-channel-urls", "-c", "--channel", "--info")):
        return SAFE
    if sub == "env" and rest[:1] == ["list"] and _flags_ok(rest[1:], ("--json",)):
        return SAFE
    if sub == "config" and rest[:1] in (["--show"], ["--show-sources"], ["--get"]):
        return SAFE
    return None


def _uv(args: Sequence[str]) -> str | None:
    if args[:1] and args[0] in ("--version", "-V", "version", "--help"):
        return SAFE
    if args[:2] in (["pip", "list"], ["pip", "freeze"], ["pip", "show"], ["pip", "check"]):
        return SAFE if _flags_ok(args[2:], ("--format", "--outdated", "--strict", "-f", "--files")) else None
    return None


# -- GPUs, containers, network listings ----------------------------------------------------------------

_SMI_QUERY = ("-L", "--list-gpus", "-q", "--query", "-d", "--display", "-i", "--id", "--query-gpu",
              "--query-compute-apps", "--format", "-l", "--loop", "-lms", "--loop-ms", "-x", "--xml-format",
              "-u", "--unit")


def _nvidia_smi(args: Sequence[str]) -> str | None:
    rest = list(args)
    if rest[:1] in (["topo"], ["dmon"], ["pmon"], ["nvlink"]):  # monitoring subcommands
        return SAFE if _flags_ok(rest[1:], ("-m", "-s", "-c", "-i", "-d", "-g")) else None
    return SAFE if _flags_ok(rest, _SMI_QUERY) else None


_DOCKER_READ = {"ps", "images", "version", "info", "logs", "inspect", "stats", "top", "port", "history"}


def _docker(args: Sequence[str]) -> str | None:
    if not args:
        return None
    sub, rest = args[0], list(args[1:])
    if sub in ("container", "image", "volume", "network") and rest[:1] in (["ls"], ["list"], ["inspect"]):
        sub, rest = "ps", rest[1:]
    if sub == "compose" and rest[:1] in (["ps"], ["ls"], ["logs"], ["version"]):
        sub, rest = "ps", rest[1:]
    if sub not in _DOCKER_READ and sub not in ("--version", "-v"):
        return None
    if sub == "stats" and "--no-stream" not in rest:
        return None  # it would run until the timeout: harmless, but say so by asking
    if sub == "logs" and any(a in ("-f", "--follow") for a in rest):
        return None
    return SAFE if _flags_ok(rest, ("-a", "--all", "-q", "--quiet", "--format", "--filter", "-f", "--no-trunc",
                                    "-n", "--last", "-l", "--latest", "-s", "--size", "--tail", "-t", "--timestamps",
                                    "--since", "--until", "--no-stream", "--digests", "--type", "-H", "--human")) else None


_IP_OBJECTS = {"addr", "address", "a", "link", "l", "route", "r", "neigh", "n", "neighbour", "rule", "maddr"}


def _ip(args: Sequence[str]) -> str | None:
    rest = [a for a in args if a not in ("-br", "-brief", "-c", "-color", "-4", "-6", "-s", "-d", "-j", "-p")]
    if not rest or rest[0] not in _IP_OBJECTS:
        return None
    verb = rest[1:2]
    return SAFE if not verb or verb[0] in ("show", "list", "ls", "s") else None


# -- archives: listing only --------------------------------------------------------------------------

_TAR_SHORT_OK = set("tvfzjJaO")  # list, verbose, file, the compressions, to stdout
_TAR_LONG_OK = {"--list", "--file", "--verbose", "--gzip", "--gunzip", "--bzip2", "--xz", "--lzma", "--zstd",
                "--auto-compress", "--numeric-owner", "--wildcards", "--no-wildcards", "--to-stdout",
                "--ignore-case", "--full-time", "--utc", "--quoting-style", "--show-transformed-names"}


def _tar(args: Sequence[str]) -> str | None:
    """Listing only, with options from a short list (tar honours abbreviations like ``--to-c=sh``)."""
    if not args:
        return None
    letters = ""
    for i, a in enumerate(args):
        if a.startswith("--"):
            if a.partition("=")[0] not in _TAR_LONG_OK:
                return None
        elif a.startswith("-") or i == 0:  # old style: `tar tzf x`
            letters += a.lstrip("-")
    if "t" not in letters and "--list" not in args:
        return None
    return SAFE if set(letters) <= _TAR_SHORT_OK else None


def _unzip(args: Sequence[str]) -> str | None:
    return SAFE if args and args[0] in ("-l", "-v", "-t", "-Z", "-lv", "-tq") else None


def _gzip(args: Sequence[str]) -> str | None:
    opts = [a for a in args if a.startswith("-")]
    if opts and all(a in ("-l", "--list", "-t", "--test", "-v", "-c", "--stdout", "-d", "-dc", "-cd") for a in opts) \
            and any(a in ("-l", "--list", "-t", "--test", "-c", "--stdout", "-dc", "-cd") for a in opts):
        return SAFE  # lists, tests or writes to stdout only
    return None


# -- pagers with no terminal (they copy their input to the pipe) ----------------------------------------

def _pager(args: Sequence[str]) -> str | None:
    for a in args:
        if a.startswith("+") or a.startswith(("--log-file", "--LOG-FILE", "--lesskey", "--tag")):
            return None  # `+cmd` runs less commands; -o/-O/--log-file write a copy
        if a.startswith("-") and not a.startswith("--") and set(a[1:]) & set("oOkt"):
            return None
    return SAFE


# -- interpreters: their version and help only ----------------------------------------------------------

def _version_only(args: Sequence[str]) -> str | None:
    return SAFE if len(args) == 1 and args[0] in _VERSION_WORDS else None


def _jupyter(args: Sequence[str]) -> str | None:
    # Only these: Jupyter applications (`jupyter kernelspec list`...) load jupyter_*_config.py from the
    # current folder, which the model can write.
    return SAFE if _version_only(args) or list(args) == ["--paths"] else None


_CHECKERS: dict[str, Checker] = {
    "pip": _pip, "pip3": _pip, "conda": _conda, "mamba": _conda, "micromamba": _conda, "uv": _uv,
    "nvidia-smi": _nvidia_smi, "docker": _docker, "podman": _docker, "ip": _ip, "tar": _tar, "unzip": _unzip,
    "gzip": _gzip, "gunzip": _gzip, "less": _pager, "more": _pager, "jupyter": _jupyter,
}


def is_everyday(program: str) -> bool:
    """Has a checker here: its options decide, so a glob or variable among its words could change the verdict."""
    return program in _CHECKERS


def everyday(program: str, args: Sequence[str], known: bool) -> str | None:
    """``SAFE`` when this use of ``program`` is proven read-only; ``known`` says the program is in a table
    (an unknown program's ``--version`` could be anything, so it still asks)."""
    checker = _CHECKERS.get(program)
    if checker is not None and checker(args) == SAFE:
        return SAFE
    if known and (_version_only(args) or (program in ("java", "javac") and list(args) == ["-version"])):
        return SAFE
    return None
