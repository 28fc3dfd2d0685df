"""What a fuzz case is: plain data, JSON both ways, so a shrunk case can be written into a
regression test and read back exactly."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Optional

RELATIONS = ("catalog", "path", "declared")
PART_KINDS = ("int", "bigint", "smallint", "string", "date", "timestamp", "decimal", "boolean")
# types a catalog declares for a kind; a path relation's type is whatever Spark infers
CATALOG_TYPES = {"int": "INT", "bigint": "BIGINT", "smallint": "SMALLINT", "string": "STRING",
                 "date": "DATE", "timestamp": "TIMESTAMP", "decimal": "DECIMAL(10,2)",
                 "boolean": "BOOLEAN"}
DIM_TYPES = {"int": "int", "bigint": "bigint", "smallint": "smallint", "string": "string",
             "date": "date", "timestamp": "timestamp", "decimal": "decimal(10,2)",
             "double": "double", "boolean": "boolean"}
JOIN_SHAPES = ("inner", "in", "exists", "semi", "left", "right", "full", "anti", "not_in",
               "not_exists", "comma",
               # the fact on the right: the dimension's rows that have a fact row (pruned by
               # the dimension's keys), and those that have none (never pruned)
               "semi_rev", "anti_rev")
# shapes whose output is the dimension's columns only
REVERSED = ("semi_rev", "anti_rev")
# what the fact side's key is: the partition column, an expression of it, or a data column
KEYS = ("eq", "plus0", "cast_str", "cast_dim", "func", "collate", "two_level", "data_col",
        # comparisons: the partition column against the dimension's key (either operand
        # first), a range over a partition and a data column, an equi-key with a comparison
        # beside it, and a data column's comparison alone
        "lt", "le", "gt", "ge", "range", "eq_lt", "lt_data")
DIM_FILTERS = ("lt", "in", "none", "empty", "rand", "limit", "order_limit", "window_tie")
EXTRAS = ("none", "agg", "window", "order_limit", "limit_count", "union", "union_all", "cte",
          "fact_rand", "view", "write", "distinct", "sample", "order_sample",
          # SQL only: the fact read through a derived table (a key traced out of it), the
          # build side unfiltered, joined to a filtered neighbour that narrows it, the fact
          # read through a UNION ALL that a sort and a limit of its own cut, and a filter on
          # the fact's partition column outside the join (it may move into the fact only
          # where it holds for the fact's rows: IS NULL never into a NULL-supplied side)
          "derived_fact", "neighbour", "union_limit", "outer_not_null", "outer_is_null",
          # SQL only: the fact joined to the fact itself (on its unique ids) before the join
          # with the build side: a shuffle join below it where Spark would not broadcast the
          # fact (see the broadcast setting), so a data key's filter is built for its rows
          "shuffled_fact",
          # the query's rows compared with a second reference to the fact (unfiltered, so
          # its side of the comparison is bounded by the other side's file statistics: the
          # first reference's kept partitions where its load keeps some), either operand
          # first, as TPC-DS q72's ``inv_quantity_on_hand < cs_quantity``
          "compare_fact", "compare_fact_rev")
# extras that draw rows at random above the join: Spark's own dynamic pruning changes what
# they draw (it reads fewer files below them), so dpp's run has it off too
SAMPLED = ("sample", "order_sample")
STEPS = ("add_files", "remove_partition", "rewrite_file", "overwrite_dim", "redefine_view",
         "setting", "reuse_df", "add_partition", "retype_view")


@dataclass
class PartCol:
    name: str                       # as written in folder names (may be mixed case)
    kind: str                       # one of PART_KINDS (the catalog's type; a path's intent)


@dataclass
class Fact:
    relation: str                   # one of RELATIONS
    cols: list[PartCol]
    partitions: list[list[Optional[str]]]   # leaf partitions: folder texts per level (None: NULL)
    files: list[int]                # files per leaf partition (0: an empty folder)
    rows_per_file: int = 3
    evolved: list[int] = field(default_factory=list)    # leaf indices whose files add a column
    leftovers: bool = False         # _SUCCESS, .hidden and _temporary files Spark ignores
    placed: list[int] = field(default_factory=list)     # catalog: leaves at custom locations
    col_in_file: bool = False       # the first partition column is also inside the files
    aged: bool = False              # every file and folder last changed an hour ago: what
    #                                 dpp keeps by modification times (a folder's names, the
    #                                 first folder's schema) is kept and reused between runs


@dataclass
class Dim:
    key_type: str                   # one of DIM_TYPES
    keys: list[Optional[str]]       # texts (None: NULL), parsed as key_type
    keys2: list[Optional[str]]      # a second key (two-level joins), as the second column's kind
    attrs: list[int]


@dataclass
class Query:
    api: str                        # "sql" | "df"
    shape: str                      # one of JOIN_SHAPES
    key: str                        # one of KEYS
    dim_filter: str                 # one of DIM_FILTERS
    extra: str                      # one of EXTRAS
    lower_names: bool = False       # the query spells column names in lower case


@dataclass
class Case:
    seed: int
    fact: Fact
    dim: Dim
    query: Query
    settings: dict[str, str]
    step: Optional[str] = None      # one of STEPS: something between two runs

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Case":
        d: dict[str, Any] = json.loads(text)
        fact = dict(d["fact"])
        fact["cols"] = [PartCol(**c) for c in fact["cols"]]
        return cls(seed=d["seed"], fact=Fact(**fact), dim=Dim(**d["dim"]),
                   query=Query(**d["query"]), settings=dict(d["settings"]), step=d.get("step"))

    def label(self) -> str:
        q, f = self.query, self.fact
        cols = ",".join(f"{c.name}:{c.kind}" for c in f.cols)
        return (f"{f.relation}[{cols}] {q.api} {q.shape}/{q.key}/{q.dim_filter}/{q.extra}"
                f" dim={self.dim.key_type}" + (f" step={self.step}" if self.step else ""))
