"""git, judged as git reads it: global options, the subcommand's options, and the repository's own config.

git's option parser clusters short options (``-iO<cmd>`` is ``-i -O<cmd>``) and takes any unambiguous prefix
of a long one (``--ou`` is ``--output``). A repository's ``.git/config`` can name programs that read-only
commands run by themselves (``core.pager``, ``core.fsmonitor``, ``diff.external``, ``diff.*.textconv``,
``filter.*``, ``include.path``...): a config holding any key outside a short list of plain settings makes
every git command there ask. (A ``.gitattributes`` only names drivers; what they run is in that config.)
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from hermes_nb.tools.safety.regular import open_regular

__all__ = ["check_git", "repository_programs"]

Verdict = tuple[str, str] | None
_WRITE = "file-write"
_SENTENCES = {
    _WRITE: "`{p}` with these options writes files.",
    "runs-program": "`{p}` with these options runs another program.",
    "git-destructive": "this git command can discard work or rewrite history.",
    "git-write": "this git command changes the repository or talks to a remote.",
    "git-network": "this git command talks to a remote over the network (and may change the repository).",
}
_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--version", "--help", "--literal-pathspecs",
                           "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects",
                           "--no-advice"})


def _sentence(key: str, program: str) -> str:
    return _SENTENCES.get(key, "`{p}` with these arguments needs approval.").format(p=program)


def _abbreviates(word: str, full: str) -> bool:
    return len(word) >= 3 and word.startswith("--") and full.startswith(word)


_GIT_READ = {"status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe", "shortlog",
             "cat-file", "rev-list", "grep", "reflog", "whatchanged", "name-rev", "merge-base", "show-ref", "count-objects",
             "help", "version", "--version", "--help", "check-ignore", "for-each-ref"}
_GIT_DESTRUCTIVE = {"reset", "clean", "checkout", "restore", "rebase", "filter-branch", "filter-repo", "gc", "prune",
                    "update-ref", "rm", "switch", "cherry-pick", "revert", "am", "merge", "pull"}


def check_git(program: str, args: Sequence[str]) -> Verdict:
    """A git command line (``args`` after ``git``), as git's own option parser reads it."""
    i = 0
    folders = ["."]
    while i < len(args) and args[i].startswith("-"):  # global options before the subcommand
        if args[i] == "-C" and i + 1 < len(args):
            folders.append(args[i + 1])
            i += 2
            continue
        if args[i] in _GLOBAL_FLAGS:
            i += 1
            continue
        # -c, --exec-path, --git-dir, --work-tree, -p/--paginate, --config-env...: set programs, paths or pagers
        return "git-write", "`git " + args[i] + "` changes how git runs (it can set hooks, pagers or paths)."
    if i >= len(args):
        return None
    if args[i] not in ("--version", "version"):  # `git help` follows help.format and web.browser
        configured = repository_programs(folders)
        if configured:
            return "runs-program", (f"the repository's git config names programs git runs by itself "
                                    f"({configured}): any git command there can run them.")
    sub, rest = args[i], list(args[i + 1:])
    destructive = ("git-destructive", _sentence("git-destructive", "git"))
    write = ("git-write", _sentence("git-write", "git"))
    longs = [a.partition("=")[0] for a in rest if a.startswith("--")]
    if any(_abbreviates(a, "--output") for a in longs):
        return _WRITE, _sentence(_WRITE, "git " + sub)
    if any(_abbreviates(a, full) for a in longs for full in ("--ext-diff", "--textconv", "--filters")):
        return "runs-program", _sentence("runs-program", "git " + sub)
    if sub == "help" and any(a in ("-w", "--web") or _abbreviates(a, "--web") for a in rest):
        return "runs-program", _sentence("runs-program", "git help")
    # `-O` opens the matches in a "pager" that is any command, clustered anywhere: `-iOsh`, `-nO'sh -c x'`
    if sub == "grep" and any((a.startswith("-") and not a.startswith("--") and "O" in a)
                             or _abbreviates(a.partition("=")[0], "--open-files-in-pager") for a in rest):
        return "runs-program", _sentence("runs-program", "git grep")
    if sub == "config" and _git_config_reads(rest):
        return None
    if sub == "reflog" and rest and rest[0] in ("expire", "delete"):
        return destructive
    if sub in _GIT_READ:
        return None
    if sub == "branch":
        if any(a in ("-D", "-d", "--delete", "-M", "-m", "--move", "-f", "--force") or a.startswith("-D") for a in rest):
            return destructive
        listing = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current",
                   "--merged", "--no-merged", "--contains", "--color", "--no-color"}
        if all(a in listing for a in rest):
            return None
        return write
    if sub in ("tag", "remote", "stash", "config", "worktree", "notes", "submodule"):
        listing_ok = {"tag": ({"-l", "--list"}, True), "remote": ({"-v", "--verbose", "get-url"}, True),
                      "stash": ({"list", "show"}, False), "config": ({"--get", "--list", "-l", "--get-all"}, False),
                      "worktree": ({"list"}, False), "notes": ({"list", "show"}, False),
                      "submodule": ({"status"}, False)}[sub]
        changes = {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "-e",
                   "--edit"}  # git refuses two actions today; do not rely on it
        if ((not rest and listing_ok[1]) or (rest and rest[0] in listing_ok[0])) and not changes & set(rest):
            return None
        if sub == "stash" and rest and rest[0] in ("drop", "clear"):
            return destructive
        return write
    if sub == "push" and any(a in ("-f", "--force", "--mirror", "--delete", "-d") or a.startswith(("--force", "+", ":"))
                             for a in rest):
        return destructive
    if sub in _GIT_DESTRUCTIVE:
        return destructive
    if sub in ("fetch", "clone", "ls-remote", "push", "remote", "submodule"):
        return "git-network", _sentence("git-network", "git")
    return write



_GIT_CONFIG_QUIET = {"--global", "--system", "--local", "--worktree", "--show-origin", "--show-scope", "--includes",
                     "--no-includes", "--null", "-z", "--name-only", "--bool", "--int", "--path", "--bool-or-int",
                     "--expiry-date"}


def _git_config_reads(rest: Sequence[str]) -> bool:
    """``git config [--global] KEY``, ``--get[-all|-regexp] KEY``, ``--list``, ``get KEY``, ``list``."""
    words = [a for a in rest if a not in _GIT_CONFIG_QUIET and not a.startswith(("--type=", "--default="))]
    if not words:
        return False
    head, tail = words[0], words[1:]
    if any(a.startswith("-") for a in tail):
        return False
    if head in ("--get", "--get-all", "--get-regexp", "get") and 1 <= len(tail) <= 2:
        return True
    if head in ("--list", "-l", "list") and not tail:
        return True
    return not head.startswith("-") and not tail and "." in head  # one key: read it


# -- the repository's config ---------------------------------------------------------------------------

_PLAIN_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|autocrlf"
    r"|safecrlf|eol|quotepath|sharedrepository|untrackedcache|splitindex|commitgraph|multipackindex|checkstat"
    r"|trustctime|abbrev|compression|loosecompression|bigfilethreshold|sparsecheckout|sparsecheckoutcone)"
    r"|remote\.[^.]+\.(url|fetch|pushurl|mirror|tagopt|prune|promisor|partialclonefilter)"
    r"|branch\.[^.]+\.(remote|merge|rebase|pushremote|description)|submodule\.[^.]+\.(url|active|branch)"
    r"|user\.(name|email)|init\.defaultbranch|pull\.(rebase|ff)|push\.(default|autosetupremote)|fetch\.prune"
    r"|extensions\.(objectformat|worktreeconfig|preciousobjects|partialclone)|gc\.auto|color\.[a-z.]+"
    r"|lfs\.repositoryformatversion|index\.version|feature\.manyfiles|advice\.[a-z]+|status\.[a-z]+")
_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=.*)?$")
_cache: dict[tuple[str, int, int], str] = {}


def _git_dir(start: Path) -> Path | None:
    """The git folder of the repository ``start`` is in (``.git``, or the folder a ``.git`` file names)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        try:
            mode = os.stat(dot).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return dot
        if stat.S_ISREG(mode):
            try:
                with open_regular(dot) as fh:
                    line = fh.read().decode("utf-8", errors="replace").strip()
            except OSError:
                return dot
            return (folder / line[len("gitdir:"):].strip()) if line.startswith("gitdir:") else dot
    return None


def _unplain(path: Path) -> str:
    """The first key of a config file that is not a plain setting ("" when all are; the reason when unreadable)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return ""
    except OSError:
        return f"{path} cannot be read"
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key in _cache:
        return _cache[key]
    try:
        with open_regular(path) as fh:  # a pipe named config would block the check for good
            text = fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return f"{path} cannot be read"
    found, section = "", ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0] if '"' not in raw else raw
        if not line.strip():
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower() + (f".{m.group(2)}" if m.group(2) is not None else "")
            line = m.group(3)
            if not line.strip():
                continue
        k = _KEY.match(line)
        name = f"{section}.{k.group(1).lower()}" if k and section else ""
        if not name or not _PLAIN_KEYS.fullmatch(name):
            found = name or line.strip()[:60]
            break
    if len(_cache) > 64:
        _cache.clear()
    _cache[key] = found
    return found


def repository_programs(folders: Sequence[str]) -> str:
    """The first setting of the repositories these folders (relative to the workspace) are in that can name a
    program git runs by itself; "" when there is none."""
    from hermes_nb.tools.workspace import workspace_root

    root = workspace_root()
    for folder in folders:
        git_dir = _git_dir(Path(os.path.normpath(root / folder)))
        if git_dir is None:
            continue
        if not git_dir.is_dir():
            return f"{git_dir} is not a folder"
        common = git_dir
        try:  # a linked worktree's settings live in the main repository's folder
            with open_regular(git_dir / "commondir") as fh:
                common = git_dir / fh.read().decode("utf-8").strip()
        except FileNotFoundError:
            pass
        except OSError:  # a pipe, a device, no permission: the settings git would read are not known
            return f"{git_dir / 'commondir'} cannot be read"
        for path in (common / "config", git_dir / "config.worktree"):
            found = _unplain(path)
            if found:
                return found
    return ""
