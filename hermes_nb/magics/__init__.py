"""The magics, one module per family (as IPython's ``core/magics/``): ``tool`` and ``tools`` (``%%tool``,
``%tools``, ``%toolsets``), ``agent``, ``mcp``, ``serve``, ``hermes``, ``rollback`` (``%rollback``, ``%trust``);
``registry`` adds and removes them."""

from __future__ import annotations

from hermes_nb._moved import forward

#: the old ``hermes_nb.magics`` module's names (``ToolMagics``, ...) still import from here
__getattr__ = forward(__name__, "hermes_nb.magics.tools")
