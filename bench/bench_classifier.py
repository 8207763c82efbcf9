"""Classifier time per command: the whole judgement (hidden characters, the bash-manual reader, bashlex's
walk, per-program rules) against ``bashlex.parse`` alone on the same commands, in the same process.

Run: ``.venv/bin/python -m bench.bench_classifier``. Prints microseconds per command (best of 5) for the
100 everyday commands and for the table's dangerous rows, and the ratio to parsing alone.
Target: the everyday commands within 2.5x of bashlex.parse (the parser is the floor: a classifier must parse);
a miss exits non-zero. The time per command is reported, not targeted (a shared machine's load moves it).
"""

from __future__ import annotations

from bench.common import fmt, limit, per_call, require, verdict

TARGET_RATIO = 2.5


def main() -> None:
    import bashlex

    from hermes_nb.tools.approval import detect_dangerous_command
    from tests.tools.approval_cases import CASES, EVERYDAY

    dangerous = [c for c, d, _ in CASES if d and len(c) < 1000]

    def classify(commands: list[str]) -> None:
        for c in commands:
            detect_dangerous_command(c)

    def parse(commands: list[str]) -> None:
        for c in commands:
            try:
                bashlex.parse(c)
            except Exception:  # the parser's failures are part of its cost
                pass

    classify(EVERYDAY)  # imports and caches warm
    rows = []
    for label, commands in (("everyday (100)", EVERYDAY), (f"dangerous rows ({len(dangerous)})", dangerous)):
        ours = per_call(lambda commands=commands: classify(commands)) / len(commands)
        base = per_call(lambda commands=commands: parse(commands)) / len(commands)
        rows.append((label, ours, base))
        print(f"{label:26s} classifier {fmt(ours):>10s} per command   bashlex.parse alone {fmt(base):>10s}"
              f"   ({ours / base:.2f}x)")
    _, ours, base = rows[0]
    ok = ours / base <= limit(TARGET_RATIO)
    print(f"target: everyday within {limit(TARGET_RATIO):.1f}x of parsing: {verdict(ok)}")
    require(ok, f"classifier {fmt(ours)} per command, {ours / base:.2f}x bashlex.parse")


if __name__ == "__main__":
    main()
