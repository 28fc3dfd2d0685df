"""How Spark reads a value from text, under the session's settings: the one conversion every
comparison between a partition folder's text (or a SQL literal) and a domain value goes through.

A folder ``t=2024-03-09 17%3A00%3A00`` of a TIMESTAMP column is a wall-clock reading in the
session time zone (``spark.sql.session.timeZone``): Spark's writer formats the instant there and
its reader casts the text back there. Build-side keys arrive as instants. Reading the folder
text as UTC, as this project once did, compared two different instants and pruned partitions
that held matching rows. So the text is never read without the rules of the session that will
run the query.

Where a rule is not one this module can follow with certainty — a time zone id Python does not
know, the LEGACY time parser (hybrid Julian calendar before 1582) — the type is *uncertain*:
nothing is pruned by it, and the reason is reported.
"""
from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Mapping, Optional

from dpp.core.domain import DataType
from dpp.core.errors import DomainError, ValueOutOfRange

__all__ = ["SparkRules", "DEFAULT_RULES", "resolve_zone", "broadcast_threshold",
           "BROADCAST_KEY", "DEFAULT_BROADCAST_BYTES"]

BROADCAST_KEY = "spark.sql.autoBroadcastJoinThreshold"
DYNAMIC_PRUNING_KEY = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
DEFAULT_BROADCAST_BYTES = 10 * 1024 * 1024   # Spark's default for BROADCAST_KEY
_BYTES = re.compile(r"^\s*(-?\d+)\s*(b|[kmgt]i?b?)?\s*$", re.I)


def broadcast_threshold(raw: Optional[str]) -> int:
    """The relation size (bytes) below which Spark broadcasts a join side, from the session's
    ``spark.sql.autoBroadcastJoinThreshold`` text as Spark reads a byte size (a plain number
    is bytes; ``k``/``m``/``g``/``t`` suffixes are binary); Spark's default, 10 MB, where the
    setting is unset, unreadable or switched off (``-1``). The one answer to "is this
    relation small by Spark's own measure", asked where a small catalog dimension is left to
    Spark's broadcast (``dpp.runtime.catalog``) and where a build side is first collected whole
    (``collectors.native``)."""
    m = _BYTES.match(raw or "")
    if not m:
        return DEFAULT_BROADCAST_BYTES
    unit = (m.group(2) or "b").lower()[0]
    value = int(m.group(1)) * {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
                               "t": 1 << 40}[unit]
    return value if value > 0 else DEFAULT_BROADCAST_BYTES

# java.time.ZoneId.SHORT_IDS, which Spark's DateTimeUtils.getZoneId accepts
_SHORT_IDS = {
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo",
    "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago",
    "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia", "NET": "Asia/Yerevan", "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
}
# a date or timestamp text whose year Python's datetime cannot hold (Spark's can: 0000, -0044,
# +10000); Spark writes 0001-01-01T00:00Z as "0000-12-31 16:07:02" in Los Angeles
_FAR_YEAR_RE = re.compile(r"^\s*(?:[+-][0-9]{4,}|[0-9]{5,}|0000)-[0-9]{1,2}-[0-9]{1,2}")
# settings that change the values Spark reads from files or folders (the calendar a date is
# rebased from, which files are read at all, how partition folders are typed): a build side's
# rows depend on them, so a cached filter is reused only under the same values
READING_KEYS = (
    "spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead",
    "spark.sql.legacy.parquet.datetimeRebaseModeInRead",
    "spark.sql.legacy.parquet.int96RebaseModeInRead",
    "spark.sql.avro.datetimeRebaseModeInRead", "spark.sql.legacy.avro.datetimeRebaseModeInRead",
    "spark.sql.parquet.int96AsTimestamp", "spark.sql.parquet.binaryAsString",
    "spark.sql.parquet.int96TimestampConversion", "spark.sql.parquet.inferTimestampNTZ.enabled",
    "spark.sql.files.ignoreMissingFiles", "spark.sql.files.ignoreCorruptFiles",
    "spark.sql.files.ignoredPathSegmentRegex", "spark.sql.files.ignoreInvalidPartitionPaths",
    "spark.sql.sources.partitionColumnTypeInference.enabled",
    "spark.sql.sources.validatePartitionColumns",
    "spark.sql.parquet.fieldId.read.enabled",
)
_OFFSET_RE = re.compile(r"^(?:UTC|GMT|UT)?([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?\Z")


def resolve_zone(zone_id: str) -> Optional[dt.tzinfo]:
    """The tzinfo of a Spark session time zone id; ``None`` when Python cannot be sure of it.

    Accepts what Spark does: region ids (``America/Los_Angeles``), ``UTC``/``Z``, offsets
    (``+05:30``, ``GMT+8``, ``UTC-03:00``) and Java's three-letter short ids (``PST``).
    """
    zid = zone_id.strip()
    if zid in ("Z", "UTC", "GMT", "UT", "Etc/UTC", "Etc/GMT"):
        return dt.timezone.utc
    zid = _SHORT_IDS.get(zid, zid)
    m = _OFFSET_RE.match(zid)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        h, mi, se = int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        if h > 18 or mi > 59 or se > 59:
            return None
        return dt.timezone(sign * dt.timedelta(hours=h, minutes=mi, seconds=se))
    if "/" not in zid and not zid.isalpha():
        return None
    try:
        return zoneinfo.ZoneInfo(zid)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


@dataclass(frozen=True)
class SparkRules:
    """The session settings that decide how Spark reads a value from text and compares it.

    Read from the session at each query (``spark.conf.set`` applies), so a folder's text and
    a literal are read exactly as the Spark query that follows will read them.
    """

    time_zone: str = "UTC"
    case_sensitive: bool = False
    ansi: bool = False
    time_parser_policy: str = "CORRECTED"
    timestamp_type: str = "timestamp"        # what partition inference gives timestamp texts
    type_inference: bool = True              # partition folder values typed (else strings)
    reading: tuple[tuple[str, str], ...] = ()   # READING_KEYS the session sets, as set
    broadcast: Optional[str] = None          # BROADCAST_KEY as the session spells it
    # Spark's own dynamic partition pruning on: its keys can come to a scan's listing
    # (spark.dpp.sparkKeys.enabled); not part of the signature: no row depends on it
    dynamic_pruning: bool = True

    @classmethod
    def from_conf(cls, get: Callable[[str, str], Optional[str]]) -> "SparkRules":
        """From a ``get(key, default)`` over the session's SQL conf."""
        def flag(key: str, default: str) -> bool:
            return str(get(key, default) or default).strip().lower() == "true"

        ts_type = str(get("spark.sql.timestampType", "TIMESTAMP_LTZ") or "").strip().upper()
        return cls(
            time_zone=str(get("spark.sql.session.timeZone", "UTC") or "UTC"),
            case_sensitive=flag("spark.sql.caseSensitive", "false"),
            ansi=flag("spark.sql.ansi.enabled", "true"),
            time_parser_policy=str(get("spark.sql.legacy.timeParserPolicy", "CORRECTED")
                                   or "CORRECTED").strip().upper(),
            timestamp_type="timestamp_ntz" if ts_type == "TIMESTAMP_NTZ" else "timestamp",
            type_inference=flag("spark.sql.sources.partitionColumnTypeInference.enabled",
                                "true"),
            reading=tuple((k, str(v).strip()) for k in READING_KEYS
                          if (v := get(k, None)) is not None),
            broadcast=None if (b := get(BROADCAST_KEY, None)) is None else str(b),
            dynamic_pruning=flag(DYNAMIC_PRUNING_KEY, "true"))

    @classmethod
    def from_spark(cls, spark: Any, settings: Optional[Mapping[str, str]] = None
                   ) -> "SparkRules":
        """From a session: its settings read at once (:func:`~dpp.core.spark_compat.session_conf`),
        each unset key at the default :meth:`from_conf` names, as ``conf.get(key, default)``
        reads it. A session whose settings cannot be listed (PySpark 3.5 on Spark Connect has
        no ``getAll``) is asked one ``conf.get`` per setting. ``settings``: the session's
        settings the caller already read this query."""
        from dpp.core.spark_compat import session_conf

        conf = spark.conf
        listed: Optional[Mapping[str, str]] = settings
        if listed is None and getattr(spark, "_jsparkSession", None) is not None:
            listed = session_conf(spark)
        elif listed is None:
            every = getattr(conf, "getAll", None)   # PySpark 4.0+ Connect: a property, one RPC
            if isinstance(every, dict):
                listed = {str(k): str(v) for k, v in every.items()}

        def get(key: str, default: Optional[str]) -> Optional[str]:
            if listed is not None:
                return listed.get(key, default)
            try:
                return conf.get(key, default)
            except Exception:  # pragma: no cover - a conf the session does not know
                return default

        return cls.from_conf(get)

    # ------------------------------------------------------------------ zones
    @cached_property
    def zone(self) -> Optional[dt.tzinfo]:
        """The session time zone, or ``None`` when it cannot be followed with certainty."""
        return resolve_zone(self.time_zone)

    def uncertain(self, t: DataType) -> Optional[str]:
        """Why values of ``t`` cannot be read from text or compared with certainty; else None."""
        if t.name in ("date", "timestamp", "timestamp_ntz") \
                and self.time_parser_policy == "LEGACY":
            return (f"spark.sql.legacy.timeParserPolicy=LEGACY reads {t} text with the hybrid "
                    f"Julian calendar, not modelled here; not pruned by {t} values")
        if t.name == "timestamp" and self.zone is None:
            return (f"session time zone {self.time_zone!r} is not one this runtime can follow "
                    f"with certainty; not pruned by timestamp values")
        return None

    # ------------------------------------------------------------------ text
    def read_text(self, t: DataType, text: str) -> Any:
        """A value of ``t`` from a folder's unescaped text or a string literal, as Spark casts
        it in this session. Raises :class:`DomainError` when it cannot (or must not) be read."""
        why = self.uncertain(t)
        if why is not None:
            raise DomainError(why)
        try:
            return t.parse_text(text, zone=self.zone if t.name == "timestamp" else None)
        except DomainError as exc:
            if t.name in ("date", "timestamp", "timestamp_ntz") and self._beyond_python(t, text):
                raise ValueOutOfRange(f"{text!r} is a {t} Spark reads but Python cannot hold: "
                                      f"not compared") from None
            raise exc

    def _beyond_python(self, t: DataType, text: str) -> bool:
        if _FAR_YEAR_RE.match(text):
            return True
        if t.name != "timestamp":
            return False
        try:  # a reading Python holds whose instant falls outside datetime's range
            wall = dt.datetime.fromisoformat(text.strip())
        except ValueError:
            return False
        try:
            (wall if wall.tzinfo is not None else wall.replace(tzinfo=self.zone)) \
                .astimezone(dt.timezone.utc)
        except (OverflowError, ValueError):
            return True
        return False

    def signature(self) -> str:
        """Every setting here as text: a build side's rows can depend on them (``hour(t)``
        in the session zone), so a cached filter is only reused under equal settings."""
        return (f"tz={self.time_zone};cs={self.case_sensitive};ansi={self.ansi};"
                f"parser={self.time_parser_policy};ts={self.timestamp_type};"
                f"infer={self.type_inference}"
                + "".join(f";{k}={v}" for k, v in self.reading))

    def column_key(self, name: str) -> str:
        """How a column name is matched: as written when case-sensitive, else lower-cased."""
        return name if self.case_sensitive else name.lower()

    # ------------------------------------------------------------------ instants
    def localize(self, wall: dt.datetime) -> dt.datetime:
        """The instant (naive UTC) of a wall-clock reading in the session zone, as java.time
        resolves it: an ambiguous hour takes its first offset, a skipped one the old offset."""
        zone = self.zone
        if zone is None:
            raise DomainError(f"session time zone {self.time_zone!r} is not known")
        return wall.replace(tzinfo=zone).astimezone(dt.timezone.utc).replace(tzinfo=None)

    def to_wall(self, instant: dt.datetime) -> dt.datetime:
        """The session-zone wall-clock reading of an instant (naive UTC)."""
        zone = self.zone
        if zone is None:
            raise DomainError(f"session time zone {self.time_zone!r} is not known")
        return instant.replace(tzinfo=dt.timezone.utc).astimezone(zone).replace(tzinfo=None)

    def walls_of(self, instant: dt.datetime) -> list[dt.datetime]:
        """Every wall-clock reading that :meth:`localize` maps to ``instant``.

        Usually one; a reading inside a DST gap localizes to the same instant as the reading
        one gap-length later, so both are returned. Offsets change by multiples of 15 minutes
        in every zone of the tz database, by at most a few hours.
        """
        base = self.to_wall(instant)
        out = [base]
        for q in range(-16, 17):
            if q == 0:
                continue
            try:
                w = base + dt.timedelta(minutes=15 * q)
                if self.localize(w) == instant:
                    out.append(w)
            except (OverflowError, ValueError):
                continue
        return sorted(out)


DEFAULT_RULES = SparkRules()
