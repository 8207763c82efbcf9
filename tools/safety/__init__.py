"""Approval and confinement: the gate (``gate``), the person's rules (``rules``), remembered answers
(``remembered``), per-program command rules (``command_rules``, ``everyday``), the terminal's sandbox
(``sandbox``) and making hidden characters visible (``visible``)."""
