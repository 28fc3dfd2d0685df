"""SparkRules: folder text and literals read as Spark reads them in the session, and the
date/timestamp/timestamp_ntz conversions of dynamic domains (issue 18).

The first half needs no Spark; the last test checks the conversion against Spark's own cast.
"""
from __future__ import annotations

import datetime as dt

import pytest

from dpp.core.domain import DATE, INT, TIMESTAMP, TIMESTAMP_NTZ, Domain
from dpp.core.errors import DomainError
from dpp.core.reconcile import reconcile
from dpp.core.spark_rules import SparkRules, resolve_zone

LA = SparkRules(time_zone="America/Los_Angeles")
KOLKATA = SparkRules(time_zone="Asia/Kolkata")
UTC = SparkRules()
T = dt.datetime


@pytest.mark.parametrize("rules,text,instant", [
    (UTC, "2024-03-09 17:00:00", T(2024, 3, 9, 17)),
    (LA, "2024-03-09 17:00:00", T(2024, 3, 10, 1)),               # PST, -8
    (KOLKATA, "2024-03-09 17:00:00", T(2024, 3, 9, 11, 30)),      # +5:30
    (LA, "2024-03-10 02:30:00", T(2024, 3, 10, 10, 30)),          # in the spring gap
    (LA, "2024-11-03 01:30:00", T(2024, 11, 3, 8, 30)),           # ambiguous: first (PDT)
    (LA, "2024-03-09T17:00:00Z", T(2024, 3, 9, 17)),              # an explicit zone wins
    (KOLKATA, "2024-03-09 17:00:00+01:00", T(2024, 3, 9, 16)),
])
def test_timestamp_text_is_read_in_the_session_zone(rules, text, instant):
    assert rules.read_text(TIMESTAMP, text) == instant


def test_ntz_and_date_text_ignore_the_zone():
    assert LA.read_text(TIMESTAMP_NTZ, "2024-03-10 02:30:00") == T(2024, 3, 10, 2, 30)
    assert KOLKATA.read_text(DATE, "2024-03-10") == dt.date(2024, 3, 10)
    with pytest.raises(DomainError):
        LA.read_text(TIMESTAMP_NTZ, "2024-03-10 02:30:00+01:00")


@pytest.mark.parametrize("zone_id,offset", [
    ("+05:30", dt.timedelta(hours=5, minutes=30)), ("GMT+8", dt.timedelta(hours=8)),
    ("UTC-03:00", dt.timedelta(hours=-3)), ("Z", dt.timedelta(0)), ("EST", dt.timedelta(hours=-5)),
])
def test_fixed_offset_zone_ids(zone_id, offset):
    z = resolve_zone(zone_id)
    assert z is not None and z.utcoffset(T(2024, 1, 1)) == offset


def test_short_ids_are_regions():
    z = resolve_zone("PST")
    assert z is not None
    assert z.utcoffset(T(2024, 7, 1)) == dt.timedelta(hours=-7)  # PDT in summer, as Java's


@pytest.mark.parametrize("rules,t", [
    (SparkRules(time_zone="Mars/Olympus_Mons"), TIMESTAMP),
    (SparkRules(time_parser_policy="LEGACY"), DATE),
    (SparkRules(time_parser_policy="LEGACY"), TIMESTAMP),
])
def test_uncertain_types_are_not_read(rules, t):
    why = rules.uncertain(t)
    assert why is not None
    with pytest.raises(DomainError, match="not"):
        rules.read_text(t, "2024-01-01")
    d = Domain.values(t, [t.parse_text("2024-01-01")])
    conv, reason = reconcile(d, t, rules)
    assert conv is None and reason == why
    assert rules.uncertain(INT) is None


def test_from_conf_reads_the_session_settings():
    conf = {"spark.sql.session.timeZone": "Asia/Kolkata", "spark.sql.caseSensitive": "TRUE",
            "spark.sql.ansi.enabled": "false", "spark.sql.timestampType": "TIMESTAMP_NTZ",
            "spark.sql.legacy.timeParserPolicy": "legacy"}
    r = SparkRules.from_conf(lambda k, d: conf.get(k, d))
    assert (r.time_zone, r.case_sensitive, r.ansi, r.timestamp_type, r.time_parser_policy) == \
        ("Asia/Kolkata", True, False, "timestamp_ntz", "LEGACY")
    assert r.column_key("Part") == "Part" and UTC.column_key("Part") == "part"


def test_walls_of_an_instant_include_the_gap_reading():
    # 02:30 (skipped) and 03:30 PDT are the same instant to java.time
    assert LA.walls_of(T(2024, 3, 10, 10, 30)) == [T(2024, 3, 10, 2, 30), T(2024, 3, 10, 3, 30)]
    assert LA.walls_of(T(2024, 7, 1, 7)) == [T(2024, 7, 1)]


# ---------------------------------------------------------------- reconcile across types

def _vals(d: Domain) -> list:
    vs = d.discrete_values()
    assert vs is not None
    return vs


def test_instant_keys_meet_ntz_partitions_at_every_wall_reading():
    d = Domain.values(TIMESTAMP, [T(2024, 3, 10, 10, 30), T(2024, 3, 9, 17)])
    conv, why = reconcile(d, TIMESTAMP_NTZ, LA)
    assert why is None
    assert _vals(conv) == [T(2024, 3, 9, 9), T(2024, 3, 10, 2, 30), T(2024, 3, 10, 3, 30)]


def test_ntz_keys_meet_instant_partitions_localized():
    d = Domain.values(TIMESTAMP_NTZ, [T(2024, 3, 9, 17)])
    conv, _ = reconcile(d, TIMESTAMP, KOLKATA)
    assert _vals(conv) == [T(2024, 3, 9, 11, 30)]


def test_instant_keys_meet_the_date_of_their_wall_reading():
    # 2024-03-10 07:00Z is 23:00 on the 9th in Los Angeles
    d = Domain.values(TIMESTAMP, [T(2024, 3, 10, 7)])
    conv, _ = reconcile(d, DATE, LA)
    assert _vals(conv) == [dt.date(2024, 3, 9)]


def test_date_keys_meet_the_instant_of_their_midnight():
    d = Domain.values(DATE, [dt.date(2024, 3, 10)])
    assert _vals(reconcile(d, TIMESTAMP, LA)[0]) == [T(2024, 3, 10, 8)]
    assert _vals(reconcile(d, TIMESTAMP_NTZ, LA)[0]) == [T(2024, 3, 10)]


def test_temporal_ranges_are_widened_never_narrowed():
    d = Domain.range(TIMESTAMP, T(2024, 3, 10, 7), T(2024, 3, 11, 6, 59))
    conv, _ = reconcile(d, DATE, LA)
    for day in (dt.date(2024, 3, 9), dt.date(2024, 3, 10)):  # both wall dates in range
        assert conv.contains(day)
    assert not conv.contains(dt.date(2024, 3, 20))
    ntz = reconcile(d, TIMESTAMP_NTZ, KOLKATA)[0]
    assert ntz.contains(T(2024, 3, 10, 12, 30)) and ntz.contains(T(2024, 3, 11, 12, 29))


# ---------------------------------------------------------------- against Spark's own cast

_CASES = [("America/Los_Angeles", "2024-03-10 02:30:00"),
          ("America/Los_Angeles", "2024-11-03 01:30:00"),
          ("Asia/Kolkata", "2024-03-09 17:00:00"), ("America/Sao_Paulo", "2018-11-04 00:00:00"),
          ("+05:30", "2024-01-01 00:00:00"), ("PST", "2024-07-01 00:00:00"),
          ("GMT+8", "2024-07-01 00:00:00"), ("Australia/Lord_Howe", "2024-10-06 02:15:00"),
          ("Australia/Lord_Howe", "2024-04-07 01:45:00"), ("UTC", "1900-01-01 00:00:00")]


def test_timestamp_text_matches_sparks_cast(spark):
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone, text in _CASES:
            spark.conf.set("spark.sql.session.timeZone", zone)
            row = spark.sql(f"SELECT unix_micros(CAST('{text}' AS TIMESTAMP)) AS u, "
                            f"unix_micros(CAST(DATE '{text[:10]}' AS TIMESTAMP)) AS m").first()
            rules = SparkRules.from_spark(spark)
            epoch = dt.datetime(1970, 1, 1)
            mine = rules.read_text(TIMESTAMP, text) - epoch
            midnight = rules.localize(dt.datetime.fromisoformat(text[:10])) - epoch
            assert mine // dt.timedelta(microseconds=1) == row.u, (zone, text)
            assert midnight // dt.timedelta(microseconds=1) == row.m, (zone, text)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


@pytest.mark.parametrize("rules,t,text", [
    (LA, TIMESTAMP, "0000-12-31 16:07:02"),     # how Spark writes 0001-01-01T00:00Z in LA
    (KOLKATA, TIMESTAMP, "0001-01-01 00:00:00"),  # its instant is before datetime.min
    (UTC, DATE, "+10000-01-01"),
])
def test_values_spark_reads_but_python_cannot_hold_are_out_of_range_not_errors(rules, t, text):
    from dpp.core.errors import ValueOutOfRange

    with pytest.raises(ValueOutOfRange):
        rules.read_text(t, text)
    with pytest.raises(DomainError) as bad:  # a text nobody reads stays a plain error
        rules.read_text(t, "not a date")
    assert not isinstance(bad.value, ValueOutOfRange)


def test_the_broadcast_threshold_is_read_as_spark_reads_a_size() -> None:
    from dpp.core.spark_rules import DEFAULT_BROADCAST_BYTES, broadcast_threshold

    assert DEFAULT_BROADCAST_BYTES == 10 * 1024 * 1024
    assert broadcast_threshold("10485760") == DEFAULT_BROADCAST_BYTES
    assert broadcast_threshold("100") == 100            # plain bytes, however small
    assert broadcast_threshold("4k") == 4096
    assert broadcast_threshold("20MB") == 20 << 20
    assert broadcast_threshold(" 1g ") == 1 << 30
    assert broadcast_threshold("2MiB") == 2 << 20
    # unset, switched off, or unreadable: Spark's default
    for raw in (None, "", "-1", "0", "ten", "1.5m"):
        assert broadcast_threshold(raw) == DEFAULT_BROADCAST_BYTES, raw


def test_from_spark_reads_what_the_session_sets_now(spark):
    # the session's map crosses at once (spark_compat.session_conf): a key set a moment ago,
    # a reading key, and an unset key at from_conf's default, as conf.get(key, default) reads
    from dpp.core.spark_compat import session_conf

    keys = ("spark.sql.session.timeZone", "spark.sql.caseSensitive",
            "spark.sql.files.ignoreMissingFiles")
    saved = {k: spark.conf.get(k, None) for k in keys}
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        spark.conf.set("spark.sql.caseSensitive", "true")
        spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
        listed = session_conf(spark)
        for k in keys:
            assert listed[k] == spark.conf.get(k)
        assert "spark.dpp.not.a.set.key" not in listed
        r = SparkRules.from_spark(spark)
        assert (r.time_zone, r.case_sensitive) == ("America/Los_Angeles", True)
        assert ("spark.sql.files.ignoreMissingFiles", "true") in r.reading
        spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
        assert SparkRules.from_spark(spark).time_zone == "Asia/Kolkata"
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
