"""Safety, in four rooms, each assuming the one before it failed.

- ``commands/``: is a shell line proven read-only? The classifier (``classifier``) with its two readers
  (``shell_words``, bashlex's ``walker``), per-program rules (``command_rules``, ``git_rules``, ``awk_rules``,
  ``everyday``, shells and wrappers in ``programs``), canonical commands for rules (``canonical``), and the files
  a command runs that an approval is tied to (``bound_files``).
- ``approvals/``: the one gate every call passes (``gate``), the person's rules (``rules``), remembered answers
  (``remembered``), and making a prompt's hidden characters visible (``visible``).
- ``sandbox/``: where a command runs: bubblewrap or Landlock (``box`` chooses; ``bwrap``, ``landlock``), what the
  model sees (``hidden``), the overlay a command writes (``overlay``, or a full-depth ``scan`` without one), and
  the network proxy (``netproxy``).
- ``writes/``: what the model writes: one change (``changes``), the one landing policy (``landing``, applied by
  ``lander``), checkpoints and the ledger of model-written files (``checkpoints``, ``ledger``), and the import
  guard (``imports``).

At the top, what every room uses: files the checks may read (``regular``), link-safe writes of the kernel's own
files (``safe_write``), and the scan of memory entries (``memory_scan``).
"""
