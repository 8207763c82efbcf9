"""``%%agent`` (the cell is the prompt) and ``%agent reset``: one agent per kernel, made on first use."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented
from hermes_nb.tools.errors import HermesNbError

__all__ = ["AgentMagics", "current_agent"]

#: The kernel's agent (module state: survives ``%reload_ext``, cleared by unload).
_agent: Any = None
#: The model settings given on earlier ``%%agent`` lines (each new one updates them and rebuilds the agent).
_settings: dict[str, Any] = {}
#: ``%%agent`` options that configure the model (the option's dest → the ``Agent`` argument).
_MODEL_OPTIONS = ("model", "base_url", "api_key", "tool_choice", "max_tokens", "temperature", "seed")


def current_agent() -> Any:
    """The agent ``%%agent`` uses, or None before its first run."""
    return _agent


def _toolsets(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError("--toolsets needs a comma-separated list of toolset names, e.g. --toolsets file,notebook")
    from hermes_nb.tools.toolsets import get_all_toolsets, validate_toolset

    bad = [n for n in names if n not in ("all", "*") and not validate_toolset(n)]
    if bad:
        raise UsageError(f"unknown toolset {bad[0]!r}; known: {', '.join(sorted(get_all_toolsets()))}")
    # ["all"], not None: an agent's None follows the picker's selection, which starts at the default
    return ["all"] if any(n in ("all", "*") for n in names) else names


@magics_class
class AgentMagics(Magics):
    """Talk to the kernel's agent from a cell."""

    @magic_arguments(name="%agent")  # usage line: %%agent (IPython adds one "%")
    @argument("action", nargs="?", default=None,
              help="Line form only: 'reset' starts a new conversation (%%agent reset).")
    @argument("--model", default=None,
              help="Model name, 'local' (the embedded SmolLM2), or replay:PATH (default: $HERMES_NB_MODEL).")
    @argument("--base-url", default=None, metavar="URL",
              help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL).")
    @argument("--api-key", default=None, metavar="KEY",
              help="The endpoint's key; write --api-key $name to take it from a variable, so the saved "
                   "notebook holds the name, not the key (default: $OPENAI_API_KEY). Never shown in output.")
    @argument("--tool-choice", default=None, metavar="CHOICE",
              help="auto, required, none, or a tool's name (a forced call holds until the model has called).")
    @argument("--max-tokens", default=None, type=int, metavar="N", help="Longest answer, in tokens.")
    @argument("--temperature", default=None, type=float, metavar="T", help="Sampling temperature.")
    @argument("--seed", default=None, type=int, metavar="N", help="Sampling seed, where the server takes one.")
    @argument("--toolsets", default=None, metavar="A,B",
              help="Toolsets the model sees, e.g. notebook,file or all (default: the picker's selection, which "
                   "starts as your own toolsets).")
    @argument("--new", action="store_true", help="Start a new conversation before this prompt.")
    @argument("--out", default=None, metavar="NAME", help="Also store the AgentResult in this variable.")
    @argument("--no-format", action="store_true",
              help="Send {braces} as written (default: {var} and {In[3]} are filled from the notebook).")
    @line_cell_magic
    @uncommented
    def agent(self, line: str, cell: str | None = None) -> Any:
        """%%agent [--model M] [--base-url URL] [--tool-choice C] [--toolsets a,b] [--new] [--out NAME] [--no-format]:
        the cell body is the prompt.

        ``{city}`` or ``{In[3]}`` in the prompt is filled from the notebook's variables (``{{`` is a brace;
        ``--no-format`` sends braces as written). The result (an AgentResult) is the cell's value, so it lands
        in ``_``. ``%agent reset`` starts a new conversation. One agent per kernel; model options (``--model``,
        ``--base-url``, ``--tool-choice``...) and ``--toolsets`` reconfigure it, and later cells keep them.

        Examples:

            %%agent --toolsets geometry
            What is the area of a 3 by 2 rectangle?

            %%agent --model local --tool-choice required --toolsets geometry
            What is the area of a 3 by 2 rectangle?
        """
        args = parse_line(self.agent, line, "%%agent")
        if cell is None:
            if args.action == "reset":
                if _agent is not None:
                    _agent.reset()
                print("agent: new conversation")
                return None
            raise UsageError("%agent takes 'reset'; to ask the agent, use the cell form: %%agent then the prompt")
        if args.action is not None:
            raise UsageError(f"%%agent: unexpected argument {args.action!r}; the prompt goes in the cell body")
        prompt = cell.strip()
        if not prompt:
            raise UsageError("%%agent: the cell is empty; write the prompt below the %%agent line")
        if not args.no_format:
            prompt = _filled(prompt, self.shell.user_ns if self.shell is not None else {})
        toolsets = _toolsets(args.toolsets)
        if args.out and not args.out.isidentifier():  # checked before the run, which may take minutes
            raise UsageError(f"--out needs a Python variable name, got {args.out!r}")
        try:
            result = _run(prompt, args, toolsets)
        except HermesNbError as exc:  # no key, replay drift, unknown model setting: one line, no traceback
            raise UsageError(f"%%agent: {exc}") from None
        if args.out:
            assert self.shell is not None
            self.shell.user_ns[args.out] = result
        return result

    def forget_agent(self) -> None:
        """Drop the kernel's agent (the extension's unload; not a magic)."""
        global _agent
        _agent = None
        _settings.clear()


def _filled(prompt: str, namespace: Any) -> str:
    """``{var}`` fields filled from the notebook; the ones left as written said in one line."""
    from hermes_nb.magics.prompt_fill import fill

    text, left = fill(prompt, namespace)
    if left:
        names = ", ".join("{" + f + "}" for f in left)
        print(f"%%agent: {names} not defined in the notebook, sent as written (--no-format sends every brace as written)")
    return text


def _run(prompt: str, args: Any, toolsets: list[str] | None) -> Any:
    """Create or reconfigure the kernel's agent, then run the prompt."""
    global _agent
    from hermes_nb.agent.loop import Agent

    given = {name: getattr(args, name) for name in _MODEL_OPTIONS if getattr(args, name) is not None}
    if _agent is None or given:
        settings = {**_settings, **given}
        old = _agent
        if old is not None and args.toolsets is None:
            toolsets = old.enabled_toolsets
        try:
            _agent = Agent(**settings, enabled_toolsets=toolsets)
        except ValueError as exc:  # a tool choice it cannot send: one line, the settings as they were
            raise UsageError(f"%%agent: {exc}") from None
        _settings.update(given)
        if old is not None and not args.new:
            _agent.messages = old.messages  # a new model continues the same conversation
    elif args.toolsets is not None:
        _agent.enabled_toolsets = toolsets
    if args.new:
        _agent.reset()
    return _agent.run(prompt)
