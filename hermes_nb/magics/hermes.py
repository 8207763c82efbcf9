"""``%hermes``: switch Hermes's own tools (an installed hermes-agent's) on, off, or read them again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented

if TYPE_CHECKING:
    from hermes_nb.interop.hermes_tools import BridgeStatus

__all__ = ["HermesMagics"]


@magics_class
class HermesMagics(Magics):
    """Hermes's registered tools as toolsets ``hermes-<toolset>``."""

    enabled = Bool(True, help="Read an installed hermes-agent's tools when the extension loads.").tag(config=True)

    @magic_arguments()
    @argument("action", nargs="?", default="status", choices=("status", "on", "off", "reload", "wait"),
              help="status (default), on, off (remove Hermes's tools), reload (run Hermes's discovery "
                   "again), wait (block until the background discovery finished).")
    @argument("--timeout", type=float, default=120.0, help="Seconds `wait` waits at most (default 120).")
    @line_magic
    @uncommented
    def hermes(self, line: str) -> BridgeStatus:
        """Hermes's own tools in the notebook (when hermes-agent is installed in the kernel's environment).

        %load_ext reads them in the background; the picker (%toolsets) shows them as `hermes-<toolset>`
        when that finishes, with Hermes's own availability, unticked: `%hermes on` (or ticking them) offers
        them to the model. Calls go through Hermes's
        model_tools.handle_function_call; Hermes's approval prompts are asked in the notebook.

        Example::

            %hermes              # status: loading / ready (N tools) / off / failed (why)
            %hermes wait         # block until Hermes's tools are in the registry
            %hermes on           # Hermes's toolsets become part of the default selection
            %toolsets hermes-todo hermes-file    # or just these
            %hermes off          # remove them; `%config HermesMagics.enabled = False` keeps them off
        """
        from hermes_nb.interop.hermes_tools import bridge, hermes_installed

        args = parse_line(self.hermes, line, "%hermes")
        if args.action == "status" and not hermes_installed():
            return bridge.start()  # starts nothing: the status says hermes-agent is not installed
        if args.action != "status" and not hermes_installed():
            raise UsageError("%hermes: hermes-agent is not installed in this kernel's environment "
                             "(pip install hermes-agent)")
        if args.action in ("on", "off"):
            from hermes_nb.selection import selection

            # only the person's own "on" makes Hermes's tools part of the default selection (the automatic
            # read at load lists them in the picker, unticked: they include Hermes's terminal and file tools)
            selection.hermes_tools = args.action == "on"
            return bridge.start() if args.action == "on" else bridge.stop()
        if args.action == "reload":
            return bridge.reload()
        if args.action == "wait":
            return bridge.wait(args.timeout)
        return bridge.status()
