"""``%trace``: the last agent run from a cell as a waterfall (its spans on one time axis)."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented

__all__ = ["TraceMagics"]


@magics_class
class TraceMagics(Magics):
    """The last run's trace."""

    @magic_arguments()
    @argument("--text", action="store_true", help="Print the waterfall in characters (a terminal, a log).")
    @line_magic
    @uncommented
    def trace(self, line: str) -> Any:
        """Draw the last agent run from a cell (``%%agent``, ``agent.run``) as a waterfall: model turns and tool
        calls on one time axis, parallel calls overlapping, approval waits shaded, sub-agents indented under
        their ``delegate_task``. Any run's own is ``result.trace``. When a tracer provider is configured the same
        spans are exported by OpenTelemetry (README: Traces).

        Example::

            %%agent
            Read notes.txt and todo.txt, then summarise both.

            %trace
        """
        from hermes_nb.traces import last_trace

        args = parse_line(self.trace, line, "%trace")
        trace = last_trace()
        if trace is None:
            raise UsageError("no agent run yet in this kernel: run %%agent (or agent.run(...)) first, then %trace")
        if args.text:
            print(trace)
            return None
        return trace
