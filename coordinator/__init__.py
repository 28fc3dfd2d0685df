"""The filter service: register / publish / wait / cache, embedded or on Redis.

Importing this package does not import PySpark or connect anywhere.
"""
from __future__ import annotations

from coordinator.base import OUTCOMES, FilterService, WaitResult
from coordinator.cache import fingerprint
from coordinator.embedded import EmbeddedFilterService
from coordinator.factory import make_service, parse_coordinator_spec
from coordinator.merge import PartialMerger
from coordinator.redis_backend import RedisFilterService, RedisPartialPublisher, redact_url

__all__ = [
    "FilterService", "WaitResult", "OUTCOMES", "make_service", "parse_coordinator_spec",
    "fingerprint", "EmbeddedFilterService", "RedisFilterService", "RedisPartialPublisher",
    "PartialMerger", "redact_url",
]
