"""Dynamic partition pruning for PySpark star joins.

Kept light on purpose: importing :mod:`dpp.core` (which every package does) must not pull in
PySpark or the session. ``DppSession`` is imported lazily on first attribute access.
"""
from __future__ import annotations

from typing import Any

__all__ = ["DppSession", "JobReport"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "DppSession":
        from dpp.session import DppSession

        return DppSession
    if name == "JobReport":
        from dpp.report import JobReport

        return JobReport
    raise AttributeError(f"module 'dpp' has no attribute {name!r}")
