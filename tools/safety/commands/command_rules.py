"""The tables behind shell-command approval: which programs are read-only, flag by flag, and which are not.

``tools.approval`` walks the parsed command; this module answers one question per simple command:
given a program name and its (already unquoted) argument words, is it harmless, and if not, why?
A program missing from every table is unknown, and unknown means "ask".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hermes_nb.tools.safety.commands.awk_rules import check_awk
from hermes_nb.tools.safety.commands.everyday import SAFE, everyday, is_everyday
from hermes_nb.tools.safety.commands.git_rules import check_git
from hermes_nb.tools.safety.commands.programs import SHELLS, WRAPPERS

__all__ = ["DANGER_KEYS", "INTERPRETERS", "SHELLS", "WRAPPERS", "Verdict", "check_program", "flag_sensitive"]

Verdict = tuple[str, str] | None  # (pattern_key, description) when dangerous, else None


# --- programs that are never safe, each with its stable key and one sentence -----------------------

_DANGER: dict[str, tuple[str, str]] = {}


def _danger(key: str, sentence: str, *names: str) -> None:
    for name in names:
        _DANGER[name] = (key, sentence)


_danger("rm", "`{p}` deletes files or folders.", "rm", "rmdir", "unlink", "srm")
_danger("mv", "`{p}` moves or renames files and can overwrite them.", "mv")
_danger("cp", "`{p}` copies files and can overwrite existing ones.", "cp", "install", "rsync", "scp")
_danger("ln", "`{p}` creates links that can replace files.", "ln")
_danger("file-write", "`{p}` creates or changes files.", "touch", "mkdir", "mktemp", "split", "csplit", "patch", "tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "xz", "7z", "wget")
_danger("truncate", "`{p}` cuts files to a given size, destroying their content.", "truncate")
_danger("shred", "`{p}` overwrites files to destroy their content.", "shred", "wipe")
_danger("dd", "`{p}` copies raw blocks and can overwrite disks or files.", "dd")
_danger("disk", "`{p}` changes disks, partitions or mounts.", "mkfs", "fdisk", "sfdisk", "parted", "wipefs", "mkswap", "swapon", "swapoff", "mount", "umount", "losetup", "blkdiscard", "fsck", "hdparm")
_danger("permissions", "`{p}` changes file ownership or permissions.", "chmod", "chown", "chgrp", "chattr", "setfacl", "chcon")
_danger("kill", "`{p}` stops or signals processes.", "kill", "pkill", "killall", "skill", "xkill")
_danger("system", "`{p}` changes the state of the machine or its services.", "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "systemctl", "service", "crontab", "at", "useradd", "userdel", "usermod", "passwd", "chpasswd", "groupadd", "visudo", "iptables", "nft", "sysctl", "modprobe", "insmod", "rmmod", "hostnamectl", "timedatectl", "ip", "ifconfig", "route")
_danger("network", "`{p}` talks to the network and may download or send data.", "curl", "ssh", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "sftp", "ping", "ping6", "traceroute", "tracepath", "dig", "nslookup", "host", "whois", "mtr")
_danger("package-install", "`{p}` installs or removes software.", "apt", "apt-get", "dpkg", "yum", "dnf", "rpm", "pacman", "apk", "brew", "pip", "pip3", "pipx", "uv", "npm", "npx", "yarn", "pnpm", "gem", "cargo", "conda", "mamba", "snap", "flatpak")
_danger("interpreter", "`{p}` runs code (a program written in another language).", "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "tclsh", "Rscript", "julia", "osascript", "make", "cmake", "ipython", "jupyter")
_danger("editor", "`{p}` is an interactive editor or pager that can change files or run commands.", "vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "less", "more", "most", "man")

_danger("nested-shell", "`{p}` runs its arguments or input as shell code.", *SHELLS, "eval", "source", ".")
INTERPRETERS = frozenset(n for n, (k, _) in _DANGER.items() if k == "interpreter")
DANGER_KEYS = frozenset(k for k, _ in _DANGER.values()) | {f"wrapper:{w}" for w in WRAPPERS}


# --- read-only programs, with the flags that would make them write or run something ----------------

@dataclass(frozen=True, slots=True, kw_only=True)
class _Rule:
    deny_short: dict[str, str] = field(default_factory=dict)  # letter -> key
    deny_long: dict[str, str] = field(default_factory=dict)  # --option (GNU prefixes match) -> key
    deny_words: dict[str, str] = field(default_factory=dict)  # exact words, e.g. find's -delete
    arg_short: str = ""  # short options that take a value (the rest of the cluster, or the next word)
    max_operands: int | None = None  # more operands than this writes (uniq IN OUT) or sets something
    operand_key: str = "file-write"
    check: Callable[[str, Sequence[str]], Verdict] | None = None


_PLAIN = _Rule()
_WRITE = "file-write"
_SAFE: dict[str, _Rule] = {name: _PLAIN for name in (
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "echo", "pwd", "whoami", "id", "groups", "uname",
    "cut", "tr", "stat", "du", "df", "which", "whereis", "type", "printf", "printenv", "true", "false", "test", "[",
    "basename", "dirname", "realpath", "readlink", "nl", "tac", "rev", "column", "fold", "fmt", "expand", "unexpand",
    "paste", "join", "comm", "diff", "cmp", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
    "b2sum", "cksum", "base64", "base32", "od", "hexdump", "strings", "seq", "sleep", "expr", "yes", "ps", "uptime",
    "nproc", "free", "tty", "locale", "arch", "cal", "jq", "cd", ":", "zcat", "zgrep", "lsblk", "lscpu", "getconf",
    "read", "exit", "return", "top", "lsof", "netstat",
)}
_SAFE.update({
    "sort": _Rule(deny_short={"o": _WRITE}, deny_long={"--output": _WRITE, "--compress-program": "runs-program"},
                  arg_short="kStT"),
    "uniq": _Rule(arg_short="fsw", max_operands=1),
    "tee": _Rule(max_operands=0),
    # -R: an 00Tree.html in every folder, each made by running tree again (through system() before 1.8.1)
    "tree": _Rule(deny_short={"o": _WRITE, "R": "runs-program"}, arg_short="LPIH"),
    "file": _Rule(deny_short={"C": _WRITE}, deny_long={"--compile": _WRITE}, arg_short="mfFeP"),
    "rg": _Rule(deny_long={"--pre": "runs-program", "--hostname-bin": "runs-program"}),
    "ss": _Rule(deny_short={"K": "kill"}, deny_long={"--kill": "kill"}, arg_short="fAF"),
    "date": _Rule(deny_short={"s": "system"}, deny_long={"--set": "system"}, arg_short="dfr"),
    "hostname": _Rule(deny_short={"F": "system", "b": "system"}, deny_long={"--file": "system", "--boot": "system"},
                      max_operands=0, operand_key="system"),
})

_KEY_SENTENCES = {
    _WRITE: "`{p}` with these options writes files.",
    "kill": "`{p}` with these options closes other programs' connections.",
    "runs-program": "`{p}` with these options runs another program.",
    "find-exec": "`find -exec` runs a command on every file it finds.",
    "find-delete": "`find -delete` deletes every file it finds.",
    "system": "`{p}` with these arguments changes the machine's settings.",
    "in-place-edit": "`{p}` edits files in place.",
    "script-file": "`{p}` runs a script from a file that was not shown.",
    "git-destructive": "this git command can discard work or rewrite history.",
    "git-write": "this git command changes the repository or talks to a remote.",
    "awk-program": "the awk program can run commands or write files.",
    "sed-program": "the sed script can write files or run commands.",
}


def _sentence(key: str, program: str) -> str:
    return _KEY_SENTENCES.get(key, "`{p}` with these arguments needs approval.").format(p=program)


def _options(args: Sequence[str], rule: _Rule) -> tuple[list[str], list[str], list[str]]:
    """Split words into (short letters seen, long options and single-dash words, operands), honouring ``--``."""
    letters: list[str] = []
    longs: list[str] = []
    operands: list[str] = []
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        if word == "--":
            operands.extend(args[i + 1:])
            break
        if word.startswith("--"):
            longs.append(word.split("=", 1)[0])
        elif word.startswith("-") and len(word) > 1:
            longs.append(word)  # single-dash words (find's -delete) are checked whole too
            for j, letter in enumerate(word[1:]):
                letters.append(letter)
                if letter in rule.arg_short:
                    if j == len(word) - 2:
                        i += 1  # the value is the next word
                    break
        else:
            operands.append(word)
        i += 1
    return letters, longs, operands


def _brace_pieces(word: str) -> list[str]:
    # `find . {-delete,}` expands to a flag: check every piece a brace expansion could produce.
    if "{" in word and ("," in word or ".." in word):
        return [p for p in re.split(r"[{},]", word) if p]
    return [word]


def _check_rule(program: str, args: Sequence[str], rule: _Rule) -> Verdict:
    words = [piece for a in args for piece in _brace_pieces(a)]
    letters, longs, operands = _options(words, rule)
    for letter in letters:
        if letter in rule.deny_short:
            return rule.deny_short[letter], _sentence(rule.deny_short[letter], program)
    for opt in longs:
        for denied, key in rule.deny_long.items():
            if opt == denied or _abbreviates(opt, denied):
                return key, _sentence(key, program)
    for word in words:
        if word in rule.deny_words:
            return rule.deny_words[word], _sentence(rule.deny_words[word], program)
    if rule.max_operands is not None and len([o for o in operands if o != "/dev/null"]) > rule.max_operands:
        return rule.operand_key, _sentence(rule.operand_key, program)
    if program == "date" and any(not o.startswith("+") for o in operands):
        return "system", _sentence("system", program)
    return rule.check(program, args) if rule.check else None


# --- programs whose safety depends on a script argument ---------------------------------------------

def _sed_script_ok(script: str) -> bool:
    for part in re.split(r"[;\n]", script):
        part = part.strip().lstrip("0123456789$,!~ ")
        if not part or part in "{}":
            continue
        if part[0] in "sy" and len(part) > 1 and not part[1].isalnum():
            delim = re.escape(part[1])
            m = re.fullmatch(rf"[sy]{delim}(?:\\.|[^\\])*?{delim}(?:\\.|[^\\])*?{delim}([gpiImM0-9]*)", part)
            if not m:
                return False
            continue
        if part[0] == "/":  # an address regex, then a command letter
            m = re.fullmatch(r"/(?:\\.|[^\\/])*/I?\s*(,\s*(?:/(?:\\.|[^\\/])*/|[0-9$]+))?\s*!?\s*([pdqQnNgGhHxlPD=]?)", part)
            if not m:
                return False
            continue
        if part not in ("p", "d", "q", "Q", "n", "N", "g", "G", "h", "H", "x", "l", "P", "D", "="):
            return False
    return True


def _check_sed(program: str, args: Sequence[str]) -> Verdict:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word.startswith("--"):
            name, _, value = word.partition("=")
            if _abbreviates(name, "--in-place"):
                return "in-place-edit", _sentence("in-place-edit", program)
            if _abbreviates(name, "--file") or _abbreviates(name, "--follow-symlinks") and name == "--f":
                return "script-file", _sentence("script-file", program)
            if _abbreviates(name, "--expression"):
                if not value and i < len(args):
                    value, i = args[i], i + 1
                scripts.append(value)
            continue
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        for j, letter in enumerate(word[1:], start=1):
            if letter == "i":
                return "in-place-edit", _sentence("in-place-edit", program)
            if letter == "f":
                return "script-file", _sentence("script-file", program)
            if letter in "el":
                value = word[j + 1:]
                if not value and i < len(args):
                    value, i = args[i], i + 1
                if letter == "e":
                    scripts.append(value)
                break
    if not scripts and operands:
        scripts.append(operands[0])
    if all(_sed_script_ok(s) for s in scripts):
        return None
    return "sed-program", _sentence("sed-program", program)


def _abbreviates(word: str, full: str) -> bool:
    """GNU getopt_long takes any unambiguous prefix of a long option: ``--i`` may be ``--in-place``."""
    return len(word) >= 3 and word.startswith("--") and full.startswith(word)


_SAFE["sed"] = _Rule(check=_check_sed)
_SAFE["git"] = _Rule(check=check_git)
_SAFE["awk"] = _SAFE["gawk"] = _SAFE["mawk"] = _SAFE["nawk"] = _Rule(check=check_awk)


_EVALUATORS = frozenset({"eval", "source", ".", "exec", "builtin", "command", "sh", "dash", "fish", "busybox", "time"})
# Programs outside the tables whose `--version` / `--help` a person runs to see what is installed.
_VERSION_ONLY = frozenset({"gcc", "g++", "cc", "clang", "clang++", "nvcc", "java", "javac", "go", "rustc", "R",
                           "kubectl", "docker", "cmake", "ninja", "ffmpeg", "nvidia-smi", "mamba", "micromamba",
                           "scala", "sbt", "spark-submit", "dotnet", "psql", "mysql", "sqlite3", "redis-cli"})


# --- programs with a parser of their own ------------------------------------------------------------

_XXD_VALUE = frozenset({"-c", "-g", "-l", "-o", "-s", "-n", "-R"})


def _check_xxd(program: str, args: Sequence[str]) -> Verdict:
    """xxd compares an option's first two characters only (``-rc`` is ``-r``, ``-cols`` is ``-c``), never
    clusters, takes ``--x`` as ``-x``, and stops at its first operand: a second operand is the output file,
    and a third is an error. A value option spelled with two characters takes the next word."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        word = args[i][1:] if args[i].startswith("--") and len(args[i]) > 2 else args[i]
        i += 1
        if word == "-":  # a bare `--`: the operands follow
            break
        if word[:2] in _XXD_VALUE and len(word) == 2:
            i += 1
    operands = [a for a in args[i:]]
    if len(operands) > 1 and operands[1] not in ("-", "/dev/null", "/dev/stdout"):
        return _WRITE, f"`{program}` writes its second operand (`{operands[1]}`) as the output file."
    return None


_FIND_FLAGS = frozenset({"-empty", "-readable", "-writable", "-executable", "-nouser", "-nogroup", "-print",
                         "-print0", "-prune", "-quit", "-depth", "-daystart", "-follow", "-mount", "-xdev",
                         "-noleaf", "-true", "-false", "-not", "-a", "-and", "-o", "-or", "-ls", "!", "(", ")", ",",
                         "-ignore_readdir_race", "-noignore_readdir_race", "-nowarn", "-warn"})
_FIND_TESTS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-lname", "-ilname",
                         "-regex", "-iregex", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin",
                         "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-used", "-perm", "-user", "-group",
                         "-uid", "-gid", "-links", "-inum", "-samefile", "-maxdepth", "-mindepth", "-fstype",
                         "-regextype", "-printf"})
_FIND_ACTIONS = {"-exec": "find-exec", "-execdir": "find-exec", "-ok": "find-exec", "-okdir": "find-exec",
                 "-delete": "find-delete", "-fprint": _WRITE, "-fprint0": _WRITE, "-fprintf": _WRITE, "-fls": _WRITE}


def _check_find(program: str, args: Sequence[str]) -> Verdict:
    """find's expression from a list of tests and printing actions; any other primary asks (an action this
    check does not know may write or run)."""
    words = [piece for a in args for piece in _brace_pieces(a)]
    i = 0
    while i < len(words) and words[i] in ("-H", "-L", "-P", "-D", "-O") or (i < len(words) and words[i][:2] == "-O"):
        i += 2 if words[i] in ("-D", "-O") else 1
    while i < len(words) and not words[i].startswith("-") and words[i] not in ("!", "(", ")", ","):
        i += 1  # the starting points
    while i < len(words):
        word = words[i]
        if word in _FIND_ACTIONS:
            key = _FIND_ACTIONS[word]
            return key, _sentence(key, program)
        if word in _FIND_TESTS or re.fullmatch(r"-newer[aBcmt][aBcmt]", word):
            i += 2
        elif word in _FIND_FLAGS:
            i += 1
        else:
            return "find-action", f"`find` with `{word}` is outside what this check models (it may write or run)."
    return None


_SAFE["xxd"] = _Rule(check=_check_xxd)
_SAFE["find"] = _Rule(check=_check_find)


def _check_test(program: str, args: Sequence[str]) -> Verdict:
    """``test -v 'a[$(cmd)]'`` evaluates the subscript: bash runs the command substitution inside it."""
    if any(a in ("-v", "-R") for a in args) or any("[" in a and ("$" in a or "`" in a) for a in args):
        return "indirection", f"`{program}` evaluates an array subscript in its arguments, which can run commands."
    return None


_SAFE["test"] = _SAFE["["] = _Rule(check=_check_test)


def flag_sensitive(program: str) -> bool:
    """True when the program is read-only only for some flags, so a ``$VAR`` argument could make it unsafe."""
    rule = _SAFE.get(program)
    return (rule is not None and rule is not _PLAIN) or is_everyday(program)


def check_program(program: str, args: Sequence[str]) -> Verdict:
    """Judge one simple command: ``program`` is the command word's base name, ``args`` the unquoted words."""
    if program == "command" and args and args[0] in ("-v", "-V"):
        return None  # `command -v git` only looks a name up
    if program == "env" and not args:
        return None  # lists the environment (with arguments it runs a command: a wrapper)
    known = program not in _EVALUATORS and (
        program in _DANGER or program in _SAFE or program in WRAPPERS or program in _VERSION_ONLY)
    if everyday(program, args, known) == SAFE:
        return None
    if program in WRAPPERS and not (program == "env" and all(a in ("-0", "--null") for a in args)):
        return f"wrapper:{program}", f"`{program}` runs another command, which then escapes this check."
    if program in ("perl", "ruby") and any(a.startswith("-") and not a.startswith("--") and "i" in a.split("e")[0]
                                           for a in args):
        return "in-place-edit", _sentence("in-place-edit", program)
    if program in _DANGER or program.startswith("mkfs."):
        key, sentence = _DANGER.get(program, _DANGER["mkfs"])
        return key, sentence.format(p=program)
    if program == "env":
        return None
    if (program == "printf" and any(a.startswith("-v") for a in args)) or (program == "read" and any(
            a != "-r" for a in args)):
        return "assignment", f"`{program}` with these arguments sets a shell variable (it could be PATH or IFS)."
    rule = _SAFE.get(program)
    if rule is None:
        return "unknown-program", f"`{program}` is not a known read-only program."
    return _check_rule(program, args, rule)
