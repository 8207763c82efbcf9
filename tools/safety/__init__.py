"""Approval and confinement: the gate (``gate``), the person's rules (``rules``), remembered answers
(``remembered``), per-program command rules (``command_rules``, ``everyday``; shells and wrappers in
``programs``), files the checks may read (``regular``), making hidden characters
visible (``visible``); the terminal's sandbox (``sandbox`` choosing ``bwrap`` or ``landlock``, the command's
``overlay``, or a full-depth ``scan`` without one), the one landing policy for every write of the model
(``landing``, applied by ``lander``), what the model never reads (``hidden``), link-safe writes of the
kernel's own files (``safe_write``) and imports that never come from the workspace (``imports``)."""
