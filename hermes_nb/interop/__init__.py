"""Hermes interop on the notebook side: an installed hermes-agent's tools in the notebook (``hermes_tools``) and
``%tools export`` (``export``)."""
