"""The project's one error hierarchy.

A leaf module: it imports nothing of the project, so every package may raise these without
pulling in the session. Messages name the key, path or value at fault and what was expected.
"""
from __future__ import annotations


class DppError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigError(DppError, ValueError):
    """A ``spark.dpp.*`` setting has a value outside what it accepts."""


class DomainError(DppError, ValueError):
    """A value cannot be read as, or compared in, a column's type."""


class ValueOutOfRange(DomainError):
    """A value Spark reads that Python's types cannot hold (a date of year 0 or 10000, an
    instant past ``datetime``'s range once placed in the session zone): never compared, so
    never pruned by — the partition is kept."""


class CodecError(DppError, ValueError):
    """Bytes that are not a valid encoded domain: truncated, oversized, malformed or foreign."""


class LayoutError(DppError):
    """A table's folders or files do not form a readable Hive-partitioned table."""


class AnalysisError(DppError):
    """The query cannot be analysed for pruning (it still runs, unpruned)."""


class CoordinatorError(DppError):
    """The filter service cannot be reached or used (callers fall back to no pruning)."""
