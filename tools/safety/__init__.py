"""Approval and confinement: the gate (``gate``), the person's rules (``rules``), remembered answers
(``remembered``), per-program command rules (``command_rules``, ``everyday``), the terminal's sandbox
(``sandbox``), the one write-deny list (``protected``), link-safe writes of the kernel's own files
(``safe_write``) and making hidden characters visible (``visible``)."""
