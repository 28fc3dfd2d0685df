"""Drawing cases from a seed: every choice through one ``random.Random``, so a seed and a
case number give the same case on any machine."""
from __future__ import annotations

import random
from typing import Optional

from tests.fuzz.model import (CATALOG_TYPES, DIM_FILTERS, EXTRAS, JOIN_SHAPES, KEYS, RELATIONS,
                              SAMPLED,
                              STEPS, Case, Dim, Fact, PartCol, Query)

# folder texts per kind: ordinary values and the odd ones (leading zeros, escapes, spaces,
# unicode, mixed case, DST gaps and overlaps, a value Spark types otherwise than it looks)
VALUES = {
    "int": ["1", "2", "3", "7", "007", "10", "-4", "0", "2147483647", "12"],
    "bigint": ["3000000000", "-5", "12", "9223372036854775807", "1", "44"],
    "smallint": ["1", "2", "300", "-7", "12", "45"],
    "string": ["a", "B", "b", "ab c", "x=y", "a/b", "ü", "naïve", "007", "Mixed", "mixed",
               "%41", " lead", "日本", "q#1", "c:d"],
    "date": ["2024-01-01", "2024-02-29", "1999-12-31", "2024-03-10", "2024-11-03",
             "2000-01-01"],
    "timestamp": ["2024-01-01 00:00:00", "2024-03-10 02:30:00", "2024-11-03 01:30:00",
                  "1970-01-01 05:30:00", "2024-01-01 12:00:00.5", "2024-06-01 23:59:59"],
    "decimal": ["1.5", "2.25", "-0.1", "10.00", "1.50", "3"],
    "boolean": ["true", "false"],
}
# a dimension key's type beside each partition kind: the same and comparable others
DIM_KEY_TYPES = {
    "int": ["int", "bigint", "string", "decimal", "double"],
    "bigint": ["bigint", "int", "string", "decimal"],
    "smallint": ["smallint", "int", "string"],
    "string": ["string", "string", "int"],
    "date": ["date", "string", "timestamp"],
    "timestamp": ["timestamp", "string", "date"],
    "decimal": ["decimal", "double", "int", "string"],
    "boolean": ["boolean", "string"],
}
MISSES = {"int": ["99", "5"], "bigint": ["77"], "smallint": ["99"], "string": ["zz", "A"],
          "date": ["2023-05-05"], "timestamp": ["2023-05-05 10:00:00"], "decimal": ["9.99"],
          "boolean": ["true"], "double": ["8.5"]}
SETTINGS = {
    "spark.sql.ansi.enabled": ["true", "false"],
    "spark.sql.session.timeZone": ["UTC", "America/Los_Angeles", "Asia/Kolkata"],
    "spark.sql.caseSensitive": ["false", "false", "true"],
    "spark.sql.adaptive.enabled": ["true", "false"],
    "spark.dpp.maxDistinctValues": ["2", "1000"],
    "spark.dpp.statsPruning.enabled": ["auto", "true", "false"],
    "spark.dpp.filterCache.enabled": ["true", "false"],
    "spark.sql.sources.partitionColumnTypeInference.enabled": ["true", "true", "false"],
    # declared tables read through dpp's kept-partition index (0: any size) or Spark's reader
    "spark.dpp.declaredTables.keptListing": ["0", "0", "off"],
    # a small build side's keys from Spark's own dynamic pruning (no build job of dpp's)
    "spark.dpp.sparkKeys.enabled": ["true", "false"],
    # 100 bytes: the generated fact is one Spark would not broadcast (a join with it is a shuffle
    # join, and row filters are built for the rows it spares)
    "spark.sql.autoBroadcastJoinThreshold": ["10m", "100"],
}


def draw_case(rng: random.Random, seed: int, *, connect: bool = False) -> Case:
    levels = rng.choice([1, 1, 1, 2, 2, 3])
    relation = rng.choice(RELATIONS)
    names = ["p", "Q", "r"] if rng.random() < 0.3 else ["p", "q", "r"]
    kinds = [rng.choice(list(VALUES)) for _ in range(levels)]
    cols = [PartCol(names[i], kinds[i]) for i in range(levels)]
    per_level = [_values(rng, k) for k in kinds]
    leaves: list[list[Optional[str]]] = []
    for _ in range(rng.randint(2, 9)):
        leaf = [rng.choice(vals) for vals in per_level]
        if leaf not in leaves:
            leaves.append(leaf)
    files = [rng.choice([1, 1, 2, 3, 0]) if i else rng.choice([1, 2])
             for i in range(len(leaves))]
    evolved = [i for i in range(len(leaves)) if rng.random() < 0.15]
    placed = ([i for i in range(len(leaves)) if rng.random() < 0.3 and None not in leaves[i]]
              if relation == "catalog" else [])
    fact = Fact(relation=relation, cols=cols, partitions=leaves, files=files,
                rows_per_file=rng.choice([1, 2, 3]), evolved=evolved,
                leftovers=rng.random() < 0.3, placed=placed,
                col_in_file=relation != "catalog" and rng.random() < 0.1,
                aged=rng.random() < 0.3)
    same = DIM_KEY_TYPES[kinds[0]][0]
    key_kind = same if rng.random() < 0.7 else rng.choice(DIM_KEY_TYPES[kinds[0]])
    dim_keys = _dim_keys(rng, leaves, 0, kinds[0], key_kind)
    keys2 = ([rng.choice([lf[1] for lf in leaves] + MISSES.get(kinds[1], []) + [None])
              for _ in dim_keys] if levels > 1 else [])
    dim = Dim(key_type=key_kind, keys=dim_keys, keys2=keys2,
              attrs=[_attr(rng) for _ in dim_keys])
    key = _pick(rng, KEYS, DIRECT)
    if key == "two_level" and levels == 1:
        key = "eq"
    query = Query(api=rng.choice(["sql", "sql", "df"]),
                  shape=_pick(rng, JOIN_SHAPES, PRUNABLE, 0.9),
                  key=key, dim_filter=_pick(rng, DIM_FILTERS, SELECTIVE),
                  extra=_pick(rng, EXTRAS, PLAIN), lower_names=rng.random() < 0.15)
    if query.extra == "shuffled_fact" and rng.random() < 0.5:
        query.key = "data_col"   # a data key below a shuffle join: a filter for its rows
    if query.key in ("range", "lt_data") and rng.random() < 0.4:
        # a comparison with the whole dimension: its bound from the dimension's footers
        query.dim_filter = "none"
    settings = {k: rng.choice(v) for k, v in SETTINGS.items() if rng.random() < 0.6}
    if query.extra == "shuffled_fact" and rng.random() < 0.8:
        settings["spark.sql.autoBroadcastJoinThreshold"] = "100"   # the self-join shuffles
    if query.extra in SAMPLED:
        # a sample draws rows by their position in a task: below a shuffle join (Spark
        # broadcasting nothing) rows of equal keys come in the order the shuffle fetched
        # them, so even Spark alone draws other rows per run
        settings.pop("spark.sql.autoBroadcastJoinThreshold", None)
    step = rng.choice(STEPS) if rng.random() < 0.3 else None
    return Case(seed=seed, fact=fact, dim=dim, query=query, settings=settings, step=step)


# Most cases are ones dpp should prune (so that a wrong pruning has something to get wrong);
# the rest are the shapes it must leave alone, drawn less often but always drawn.
PRUNABLE = ("inner", "in", "exists", "semi", "comma", "right", "semi_rev")
SELECTIVE = ("lt", "in")
DIRECT = ("eq", "plus0", "cast_dim", "two_level", "func", "le", "range", "eq_lt")
PLAIN = ("none", "agg", "union_all", "cte", "view", "write", "window", "distinct",
         "derived_fact", "neighbour", "union_limit", "outer_not_null", "outer_is_null",
         "shuffled_fact", "compare_fact", "compare_fact_rev")


def _pick(rng: random.Random, options: tuple, likely: tuple, p: float = 0.87) -> str:
    """One of ``options``: one of ``likely`` with probability ``p``."""
    pool = likely if rng.random() < p else options
    return rng.choice(pool)


def _attr(rng: random.Random) -> int:
    """A dimension row's attribute: mostly one the selective filters keep (``a < 5``,
    ``a IN (1, 3, 8)``), so that most builds keep some partitions and prune others."""
    return rng.choice([1, 3]) if rng.random() < 0.6 else rng.randint(0, 9)


def _values(rng: random.Random, kind: str) -> list[Optional[str]]:
    vals: list[Optional[str]] = rng.sample(VALUES[kind], k=min(len(VALUES[kind]),
                                                               rng.randint(2, 5)))
    if rng.random() < 0.25:
        vals.append(None)
    return vals


def _dim_keys(rng: random.Random, leaves: list[list[Optional[str]]], level: int, part_kind: str,
              key_kind: str) -> list[Optional[str]]:
    """Keys drawn from the fact's own values (some), misses, NULLs and duplicates."""
    present = [lf[level] for lf in leaves if lf[level] is not None]
    distinct = sorted(set(present))
    if len(distinct) > 1 and rng.random() < 0.8:
        # most dimensions leave some partition value out, so the case has something to prune
        kept = set(rng.sample(distinct, k=rng.randint(1, len(distinct) - 1)))
        present = [v for v in present if v in kept]
    keys: list[Optional[str]] = []
    for _ in range(rng.randint(0 if rng.random() < 0.1 else 1, 7)):
        r = rng.random()
        if r < 0.8 and present:
            keys.append(rng.choice(present))
        elif r < 0.9:
            keys.append(rng.choice(MISSES.get(key_kind, MISSES.get(part_kind, ["x"]))))
        else:
            keys.append(None)
    if keys and rng.random() < 0.4:
        keys.append(rng.choice(keys))          # a duplicate key
    return keys


def catalog_type(kind: str) -> str:
    return CATALOG_TYPES[kind]
