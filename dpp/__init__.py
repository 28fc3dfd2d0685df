"""Dynamic partition pruning for PySpark star joins.

Kept light on purpose: importing :mod:`dpp.core` (which every package does) must not pull in
PySpark or the session. ``DppSession`` is imported lazily on first attribute access;
``enable`` / ``disable`` / ``session_of`` load the session on their first call.
"""
from __future__ import annotations

from typing import Any

__all__ = ["DppSession", "JobReport", "enable", "disable", "session_of"]
__version__ = "0.1.0"

# Importing the submodule binds ``dpp.enable`` to the module; the functions are bound over it
# right after, and later ``import dpp.enable`` finds the module in sys.modules and leaves
# them be. (dpp/enable.py imports only the light config module at its top.)
from dpp import enable as _enable_module  # noqa: E402

enable = _enable_module.enable
disable = _enable_module.disable
session_of = _enable_module.session_of


def __getattr__(name: str) -> Any:
    if name == "DppSession":
        from dpp.session import DppSession

        return DppSession
    if name == "JobReport":
        from dpp.runtime.report import JobReport

        return JobReport
    raise AttributeError(f"module 'dpp' has no attribute {name!r}")
