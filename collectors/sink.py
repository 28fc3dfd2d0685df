"""Where build partials go: the small protocol the coordinator's backends implement.

Collectors never import the coordinator; the build job only talks to a :class:`PartialSink`.
A sink either hands out an :class:`ExecutorPublisher` (picklable; the task function captures
it and publishes from the executor, e.g. straight to Redis), or returns ``None`` from
:meth:`PartialSink.executor_publisher`, in which case partials travel back to the driver as
the job's result rows and the driver calls :meth:`PartialSink.publish_on_driver` for each.
"""
from __future__ import annotations

from typing import Optional, Protocol, runtime_checkable

__all__ = ["PartialSink", "ExecutorPublisher"]


@runtime_checkable
class ExecutorPublisher(Protocol):
    """Runs inside executor tasks; must pickle small (it travels inside the task closure)."""

    #: payloads above this many bytes are not published; the task sends a coarser partial
    max_bytes: int

    def publish(self, filter_id: str, part_index: int, payload: bytes) -> None:
        """Stores one task's encoded partial. Idempotent per ``part_index``."""
        ...


@runtime_checkable
class PartialSink(Protocol):
    """The driver-side face of a filter service, as the build job needs it."""

    def executor_publisher(self) -> Optional[ExecutorPublisher]:
        """A picklable publisher for tasks, or None: partials come back to the driver."""
        ...

    def publish_on_driver(self, filter_id: str, part_index: int, payload: bytes) -> None:
        """Publishes a partial that came back as a job result row."""
        ...

    # Optional (looked up with getattr): called once the build knows its exact task count,
    # before the job runs, so the service completes on exactly that many parts.
    #   def expect_parts(self, filter_id: str, parts_expected: int,
    #                    key_types: Mapping[str, DataType]) -> None: ...
    # Optional attribute: ``max_bytes`` bounds partials sent back to the driver.
