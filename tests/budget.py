"""How much searching the suite does: less under ``make test``, all of it under ``make test-all``.

``make test`` must stay under half an hour on two cores, so the randomized searches (the
algebra's property laws, the variant matrices of ``SAMPLE_VARIANTS`` modules) run a fixed,
smaller budget there; ``DPP_ALL_VARIANTS=1`` (``make test-all``) runs the full one. The laws
are the same in both: only the number of generated examples changes.
"""
from __future__ import annotations

import os

#: ``make test-all``: every variant and the full example budgets
ALL_VARIANTS = os.environ.get("DPP_ALL_VARIANTS", "") not in ("", "0", "false")

#: examples per property law of the domain algebra and the codec (pure Python, ~10 ms each)
LAW_EXAMPLES = 1000 if ALL_VARIANTS else 300
