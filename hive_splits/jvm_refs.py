"""JVM classes and Scala objects by name, looked up once per gateway.

Through py4j every segment of ``jvm.org.apache.spark.sql.catalyst.TableIdentifier`` is a round
trip of its own (a reflection lookup: ~0.25 ms each on a 2-core machine), so naming a class in
a per-query path costs 1-2 ms every time it runs, and a catalog query named a few dozen of them
(partition source, metastore counters, table identifiers, the handoff). The class object itself
is a handle that stays valid as long as the JVM, so it is kept here per JVM view.
"""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["jvm_class", "scala_object", "jvm_cached"]

_LOCK = threading.Lock()
# (id of the JVM view, name) -> (the view, the handle): the view is kept so its id is not reused
_CACHE: dict[tuple[int, str], tuple[Any, Any]] = {}


def jvm_class(jvm: Any, name: str) -> Any:
    """The py4j handle of the class (or package) ``name`` in ``jvm``, e.g.
    ``jvm_class(spark._jvm, "scala.Option").empty()``."""
    key = (id(jvm), name)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = jvm
    for part in name.split("."):
        obj = getattr(obj, part)
    with _LOCK:
        _CACHE[key] = (jvm, obj)
    return obj


def scala_object(jvm: Any, name: str) -> Any:
    """The singleton of the Scala ``object`` ``name`` (its ``MODULE$``), e.g.
    ``scala_object(jvm, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")``."""
    key = (id(jvm), name + "$.MODULE$")
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = getattr(jvm_class(jvm, name + "$"), "MODULE$")
    with _LOCK:
        _CACHE[key] = (jvm, obj)
    return obj


def jvm_cached(jvm: Any, key: str, make: Any) -> Any:
    """``make()``'s JVM object, made once per JVM view and kept under ``key`` (for objects
    that are safe to share between threads once built, such as a configured Jackson mapper,
    whose serializers are then introspected once, not per call)."""
    ck = (id(jvm), "cached:" + key)
    hit = _CACHE.get(ck)
    if hit is not None and hit[0] is jvm:
        return hit[1]
    obj = make()
    with _LOCK:
        _CACHE[ck] = (jvm, obj)
    return obj
