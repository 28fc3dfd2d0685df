"""``make_service``: the backend named by ``spark.dpp.coordinator``."""
from __future__ import annotations

from typing import Optional
from urllib.parse import urlparse

from coordinator.base import FilterService
from dpp.core.errors import ConfigError

__all__ = ["make_service", "parse_coordinator_spec"]

_KEY = "spark.dpp.coordinator"


def parse_coordinator_spec(spec: str) -> tuple[str, Optional[str]]:
    """``("embedded", None)`` or ``("redis", url)``; anything else is a ConfigError."""
    if not isinstance(spec, str):
        raise ConfigError(f"{_KEY} must be 'embedded' or a redis:// or rediss:// URL, "
                          f"got {spec!r}")
    text = spec.strip()
    if text.lower() == "embedded":
        return "embedded", None
    try:
        p = urlparse(text)
        port = p.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"{_KEY}={_shown(spec)!r} is not a valid Redis URL: {exc}") from None
    if p.scheme.lower() not in ("redis", "rediss") or not p.hostname:
        raise ConfigError(f"{_KEY}={_shown(spec)!r}: expected 'embedded' or a redis:// or "
                          f"rediss:// URL with a host (e.g. redis://:password@host:6379/0)")
    path = p.path.strip("/")
    if path and not path.isdigit():
        raise ConfigError(f"{_KEY}={_shown(spec)!r}: the database must be a number, "
                          f"got {path!r}")
    del port
    return "redis", text


def make_service(spec: str, *, app_id: str, max_distinct: int, bloom_fpp: Optional[float],
                 max_bytes: int, bloom_capacity: Optional[int] = None,
                 default_ttl: float = 3600.0, socket_timeout: float = 5.0,
                 connect_timeout: float = 2.0) -> FilterService:
    """The filter service for ``spark.dpp.coordinator``'s value.

    ``bloom_fpp=None`` means blooms are disabled: merged value sets over ``max_distinct``
    collapse to min/max. Creating a Redis service does not connect; an unreachable server shows
    up as outcome ``unavailable`` of waits (and CoordinatorError from register/publish).
    """
    kind, url = parse_coordinator_spec(spec)
    if not app_id:
        raise ConfigError("app_id must not be empty (it namespaces the filter keys)")
    if kind == "embedded":
        from coordinator.embedded import EmbeddedFilterService

        return EmbeddedFilterService(app_id=app_id, max_distinct=max_distinct,
                                     bloom_fpp=bloom_fpp, max_bytes=max_bytes,
                                     bloom_capacity=bloom_capacity, default_ttl=default_ttl)
    from coordinator.redis_backend import RedisFilterService

    assert url is not None
    return RedisFilterService(url, app_id=app_id, max_distinct=max_distinct,
                              bloom_fpp=bloom_fpp, max_bytes=max_bytes,
                              bloom_capacity=bloom_capacity, default_ttl=default_ttl,
                              socket_timeout=socket_timeout, connect_timeout=connect_timeout)


def _shown(spec: str) -> str:
    from coordinator.redis_backend import redact_url

    return redact_url(spec)
