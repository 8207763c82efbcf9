"""``execute_code``'s machinery: the per-run ``hermes_tools`` module (``module``) and one running script (``script``)."""
