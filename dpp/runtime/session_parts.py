"""What the front ends and the runtime use of a dpp session, as a type.

:class:`dpp.session.DppSession` implements :class:`SessionParts`; the optimizer hook, the
Spark Connect plan rewrite and the fact loads are handed one. Declared here, below them all,
so the import arrows point one way: the session (the public API) calls the front ends, never
the other way round.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Protocol, Union

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

    from dpp.runtime.catalog import TableCatalog
    from dpp.runtime.config import DppConfig
    from dpp.runtime.connect_handoff import ConnectHandoff
    from dpp.runtime.handoff import Handoff
    from dpp.runtime.report import JobReport
    from dpp.runtime.services import Runtime

__all__ = ["SessionParts"]


class SessionParts(Protocol):
    """A session's Spark session, its runtime services (filter service, listers, statistics),
    table catalog and handoffs, its settings as read now, and how a job's report ends."""

    spark: SparkSession
    runtime: Runtime
    catalog: TableCatalog
    handoff: Handoff
    connect: ConnectHandoff

    @property
    def config(self) -> DppConfig: ...

    def config_from(self, settings: Optional[Mapping[str, str]]) -> DppConfig: ...

    def finish(self, df: DataFrame, report: JobReport, cfg: DppConfig, t0: float,
               execute: bool) -> tuple[Union[DataFrame, list[Row]], JobReport]: ...

    def publish(self, report: JobReport, cfg: DppConfig) -> None: ...
