"""The program families both the command check and the person's command rules know: shells and wrappers.

One list each, so the classifier (``command_rules``) and the rules' canonical reader (``canonical``) never
disagree about which programs run shell code or another command (the reader once knew fewer shells, so
``rbash -c 'git push'`` escaped a ``git push*`` deny). No imports: both sides load it first.
"""

from __future__ import annotations

__all__ = ["SHELLS", "WRAPPERS"]

#: Programs that run their arguments, a script or their input as shell code.
SHELLS = frozenset({"sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox",
                    "pwsh"})
#: Programs that run another command given in their arguments.
WRAPPERS = frozenset({"exec", "sudo", "doas", "su", "runuser", "env", "nohup", "timeout", "xargs", "nice", "ionice",
                      "time", "command", "builtin", "stdbuf", "setsid", "chroot", "unshare", "nsenter", "taskset",
                      "strace", "ltrace", "watch", "unbuffer", "flock", "parallel", "script", "trap", "coproc",
                      "fakeroot"})
