"""The session a plan came from, when one driver-wide hook serves every session of a driver.

A Spark Connect server makes a classic session per client session; they share the root
session's optimizer extensions, so dpp's rule runs for them, but no Python object was ever made
for them. The rule then sends their settings along with the plan (``session`` in the plan
message: the session's SQL conf, which holds the server's ``--conf`` entries and what the
client set, and the thread's Spark job tags), and the hook answers by those: a client's
``spark.dpp.enabled``, time zone, ANSI mode or report path apply to its queries only.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from dpp.runtime.config import PREFIX, DppConfig
from dpp.core.errors import ConfigError
from dpp.core.spark_rules import SparkRules
from dpp.frontends.hook.answers import plan_text
from dpp.runtime.report import JobReport

__all__ = ["ServedSession", "served_session", "served_connect", "connect_operation",
           "refused_settings_report"]

# Spark's ExecuteJobTag: SparkConnect_OperationTag_User_<user>_Session_<uuid>_Operation_<id>
_CONNECT_TAG = re.compile(r"SparkConnect_OperationTag_User_(?P<user>.*)_Session_"
                          r"(?P<session>[0-9a-fA-F-]{36})_Operation_(?P<operation>[^,]*)")


@dataclass(frozen=True)
class ServedSession:
    """One served session's settings, as the hook uses them for one plan."""

    config: DppConfig
    rules: SparkRules
    connect: Optional[dict[str, str]]   # session_id, user, operation: for reports


def connect_operation(job_tags: Optional[str]) -> Optional[dict[str, str]]:
    """The Spark Connect operation a thread runs for, from its job tags (comma-separated),
    or None outside one."""
    for tag in (job_tags or "").split(","):
        m = _CONNECT_TAG.fullmatch(tag.strip())
        if m:
            found = {"session_id": m.group("session"), "user": m.group("user"),
                     "operation": m.group("operation")}
            return {k: v for k, v in found.items() if v}   # a client may send no user id
    return None


def served_connect(about: Mapping[str, Any]) -> Optional[dict[str, str]]:
    """The Connect operation a plan message's ``session`` ran for, or None."""
    return connect_operation(about.get("jobTags"))


def served_session(about: Mapping[str, Any]) -> ServedSession:
    """The settings of the session a plan message's ``session`` describes (raises
    :class:`~dpp.core.errors.ConfigError` naming a bad ``spark.dpp.*`` value)."""
    conf = tuple(sorted((str(k), str(v)) for k, v in (about.get("conf") or {}).items()))
    config, rules = _settings(conf)
    return ServedSession(config=config, rules=rules, connect=served_connect(about))


@functools.lru_cache(maxsize=64)
def _settings(conf: tuple[tuple[str, str], ...]) -> tuple[DppConfig, SparkRules]:
    """Parsed once per distinct session conf: it sits on the planning path of every query a
    Connect server serves, and a session's conf rarely changes between its queries (a bad
    value raises each time: exceptions are not cached)."""
    values = dict(conf)
    return (DppConfig.from_mapping({k: v for k, v in values.items() if k.startswith(PREFIX)}),
            SparkRules.from_conf(lambda key, default: values.get(key, default)))


def refused_settings_report(msg: Mapping[str, Any], exc: ConfigError, server: DppConfig
                            ) -> JobReport:
    """The report of a served session's query whose own ``spark.dpp.*`` value dpp cannot
    read: Spark's plan ran (the hook cannot fail a query); the report, under the server's
    settings, names the key, the value and the Connect session."""
    report = JobReport.start(query_text=plan_text(dict(msg), []), kind="plan",
                             settings=server.as_settings(), enabled=True)
    report.connect_session = served_connect(msg.get("session") or {})
    report.error = f"{exc}: this session's query ran with Spark's plan, unpruned"
    return report
