"""``import hermes_nb.toolsets`` keeps working: the selection now lives in ``hermes_nb.selection``.

This name is the public one (``hermes_nb.toolsets.select([...])``); the module file was renamed because
it holds the selection, not toolsets. Importing it gives the very same module object.
"""

import sys

from hermes_nb import selection

sys.modules[__name__] = selection
