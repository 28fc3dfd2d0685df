"""Why dpp did not prune, as data: a code and the thing it is about.

Every front end (the optimizer hook's plan, SQL text, a Connect DataFrame, ``dpp.join``) and
the typed core (:func:`dpp.analysis.plan_pairs.find_prunes`) say *what* they refused (a
:class:`Code`) and *about what* (the subject: a key, a table, a column, with the few values
the words need). Only the report turns a refusal into words (:meth:`Refusal.words`), and the
manual's **Why didn't it prune?** tables are generated from :data:`ENTRIES`, so every reason
a report can give is one the manual explains, in the words the report uses, and no code reads
meaning back out of prose (a caller asks ``refusal.code``).

A refusal never means a failed query: the relation is read as Spark reads it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Code", "Refusal", "Entry", "ENTRIES", "TABLE", "KEY", "refusals_markdown"]

TABLE = "table"    # a relation read whole (a report's ``tables[i].reason``)
KEY = "key"        # one join key or IN subquery not used (a report's ``analysis_notes``)


class Code(str, enum.Enum):
    """A refusal's code; a ``str`` so that it serializes as its word (``reason_code``)."""

    # ---- a relation dpp reads whole: what it is
    NOTHING_TO_PRUNE = "nothing-to-prune"
    NO_USABLE_PREDICATE = "no-usable-predicate"
    NO_PARTITION_PREDICATE = "no-partition-predicate"
    PRESERVED_SIDE = "preserved-side"
    FACT_SIDE_PRESERVED = "fact-side-preserved"
    SEMI_RIGHT_SIDE = "semi-right-side"
    FULL_OUTER = "full-outer"
    UNSUPPORTED_REFERENCE = "unsupported-reference"
    DISABLED = "disabled"
    # ---- a relation dpp cannot list as Spark reads it
    STATICALLY_EMPTY = "statically-empty"
    NOT_PARTITIONED = "not-partitioned"
    CATALOG_UNUSABLE = "catalog-unusable"
    CONNECT_CATALOG_LEFT = "connect-catalog-left"
    NOT_LISTABLE = "not-listable"
    SEVERAL_ROOTS = "several-roots"
    PARTITION_FOLDER = "partition-folder"
    NOT_HIVE_LAYOUT = "not-hive-layout"
    CASE_CLASH = "case-clash"
    COLUMNS_DIFFER = "columns-differ"
    TYPE_DIFFERS = "type-differs"
    TIMESTAMP_ZONE = "timestamp-zone"
    # ---- a relation whose pruning failed at run time (Spark's own read instead)
    LOADER_FAILED = "loader-failed"
    WIRE_BROKEN = "wire-broken"
    NEVER_LISTED = "never-listed"
    REWRITE_FAILED = "rewrite-failed"
    FRAME_SENT_AS_BUILT = "frame-sent-as-built"
    FRAME_NOT_PRUNED = "frame-not-pruned"
    FRAME_REJECTED = "frame-rejected"
    # ---- one key or IN subquery not used
    JOIN_KEEPS_UNMATCHED = "join-keeps-unmatched"
    BUILD_FILTERS_NOTHING = "build-filters-nothing"
    IN_FILTERS_NOTHING = "in-filters-nothing"
    FACT_BELOW_NONDETERMINISTIC = "fact-below-nondeterministic"
    BUILD_NONDETERMINISTIC = "build-nondeterministic"
    KEY_NOT_ATOMIC = "key-not-atomic"
    TYPE_MISMATCH = "type-mismatch"
    EXPRESSION_KEY_SQL = "expression-key-sql"
    NARROWED_BUILD_SQL = "narrowed-build-sql"
    NULL_SAFE_EQUALITY = "null-safe-equality"
    NON_EQUI = "non-equi"
    CORRELATED_IN = "correlated-in"
    EXISTS_GLOBAL_AGGREGATE = "exists-global-aggregate"
    EXISTS_NON_EQUALITY = "exists-non-equality"
    ANTI_JOIN = "anti-join"


@dataclass(frozen=True)
class Entry:
    """What the report says for a code (``template``, formatted with the refusal's subject
    and values), what it means and what the user can do, for the manual."""

    scope: str
    template: str
    meaning: str
    remedy: str = "—"


ENTRIES: dict[Code, Entry] = {
    Code.NOTHING_TO_PRUNE: Entry(
        TABLE, "nothing to prune: read whole by Spark's reader",
        "a declared table no join or `IN` of the query filters",
        "nothing: the query needs the whole table"),
    Code.NO_USABLE_PREDICATE: Entry(
        TABLE, "no usable predicate",
        "no join key or `IN` reaches a partition column of this table",
        "join on the partition column (or an expression of it)"),
    Code.NO_PARTITION_PREDICATE: Entry(
        TABLE, "no predicate on a partition column to prune by{why}",
        "the query's keys reach only data columns of this table, and statistics pruning "
        "was off or judged unable to pay",
        "join on a partition column, or set `spark.dpp.statsPruning.enabled`"),
    Code.PRESERVED_SIDE: Entry(
        TABLE, "preserved side of an outer join, and no other usable predicate",
        "every row of this side is kept whatever the other side holds",
        "filter the other side in an inner join, or add a predicate on this side"),
    Code.FACT_SIDE_PRESERVED: Entry(
        TABLE, "{how} join: the fact side is preserved or anti-joined",
        "`dpp.join`'s join type keeps (or anti-joins) every fact row",
        "an inner or left-semi join prunes"),
    Code.SEMI_RIGHT_SIDE: Entry(
        TABLE, "right side of an anti join (whether it matches at all decides)",
        "a `NOT IN` answers by the right side's NULLs and by its being empty: no row of it "
        "may be skipped (a left-semi join's right side is pruned)"),
    Code.FULL_OUTER: Entry(
        TABLE, "full outer join: both sides are preserved", "neither side may lose rows"),
    Code.UNSUPPORTED_REFERENCE: Entry(
        TABLE, "unsupported expression: {what} on the table reference",
        "the SQL-text analysis cannot tell the reference's rows from the table's (column "
        "aliases, a sample, time travel, a pivot)",
        "read the table plainly in a subquery and apply the rest outside it"),
    Code.DISABLED: Entry(
        TABLE, "spark.dpp.enabled=false", "pruning is switched off for this session",
        "`spark.dpp.enabled=true`"),
    Code.STATICALLY_EMPTY: Entry(
        TABLE, "Spark's own partition filters keep no partition of the table: Spark reads "
        "nothing and plans the query knowing it",
        "a catalog table the query's own filters (or the IS NOT NULL a join implies) leave "
        "empty; Spark plans it as empty and reads nothing",
        "nothing: there is nothing to read"),
    Code.NOT_PARTITIONED: Entry(
        TABLE, "not a partitioned table",
        "the table has no partition columns dpp could prune", "—"),
    Code.CATALOG_UNUSABLE: Entry(
        TABLE, "cannot be used for pruning: {error}",
        "describing the catalog table failed (the error is Spark's)",
        "the same error shows when Spark describes the table: fix the table"),
    Code.CONNECT_CATALOG_LEFT: Entry(
        TABLE, "Spark Connect: catalog table left to Spark: {why}",
        "on the client road, a catalog table whose partitions the server does not describe "
        "to the client",
        "run the query through `dpp connect-server`, which prunes catalog tables"),
    Code.NOT_LISTABLE: Entry(
        TABLE, "not a table dpp can list",
        "the relation is neither a catalog table nor a folder dpp lists"),
    Code.SEVERAL_ROOTS: Entry(
        TABLE, "several root paths (dpp's own handoff, or a read of chosen folders)",
        "the relation reads chosen folders, not a table's root",
        "read the table's root folder and filter on the partition column"),
    Code.PARTITION_FOLDER: Entry(
        TABLE, "a read of one partition folder, not of the table root",
        "the relation reads one `column=value` folder",
        "read the table's root folder and filter on the partition column"),
    Code.NOT_HIVE_LAYOUT: Entry(
        TABLE, "not a Hive-partitioned Parquet folder dpp can list",
        "the folder has no `column=value` layout dpp reads"),
    Code.CASE_CLASH: Entry(
        TABLE, "partition columns {columns} differ only in case (a case-sensitive session): "
        "dpp keys partitions by name case-insensitively",
        "with `spark.sql.caseSensitive=true`, dpp cannot tell the columns apart",
        "rename one of them"),
    Code.COLUMNS_DIFFER: Entry(
        TABLE, "Spark reads partition columns {spark}, the folder has {folder}",
        "Spark's relation and the folders disagree (a user schema, `basePath`)",
        "read the table without overriding its partition columns"),
    Code.TYPE_DIFFERS: Entry(
        TABLE, "partition column {subject} is {spark} in Spark's plan, {dpp} to dpp",
        "the types Spark gives the partition values are not those dpp would give",
        "declare the types (`register_table(partition_types=…)`) or cast the key"),
    Code.TIMESTAMP_ZONE: Entry(
        TABLE, "partition column {subject} is a TIMESTAMP whose values Spark's reader typed in "
        "another session time zone (the DataFrame was made before the zone changed)",
        "the DataFrame was made before `spark.sql.session.timeZone` changed",
        "make the DataFrame again after the change"),
    Code.LOADER_FAILED: Entry(
        TABLE, "split loader failed: {error}",
        "listing the kept partitions failed; the scan read Spark's own listing",
        "the error names the folder or call at fault"),
    Code.WIRE_BROKEN: Entry(
        TABLE, "dpp's answer to Spark's scan broke its wire contract ({error}): Spark's own "
        "listing is read",
        "dpp's answer to the scan lost or mistyped a field; the scan read Spark's listing",
        "report it: it is a bug"),
    Code.NEVER_LISTED: Entry(
        TABLE, "never listed: Spark did not scan this relation (nothing read)",
        "Spark never scanned the relation (an empty build side let it skip the scan, or a "
        "reuse made it unneeded)",
        "nothing: nothing was read"),
    Code.REWRITE_FAILED: Entry(
        TABLE, "rewritten query failed in Spark",
        "the SQL-text analysis's rewritten query failed; Spark's own ran",
        "report it: it is a bug"),
    Code.FRAME_SENT_AS_BUILT: Entry(
        TABLE, "DataFrame plan sent as built: {why}",
        "a Connect DataFrame's read that dpp leaves as the client built it",
        "the words after the colon say why"),
    Code.FRAME_NOT_PRUNED: Entry(
        TABLE, "DataFrame plan not pruned: {error}",
        "pruning a Connect DataFrame's read failed; the plan ran as built",
        "report it with the error"),
    Code.FRAME_REJECTED: Entry(
        TABLE, "Spark rejected the rewritten DataFrame plan, sent as built: {error}",
        "the server refused the pruned plan; the plan ran as built",
        "report it: it is a bug"),
    Code.JOIN_KEEPS_UNMATCHED: Entry(
        KEY, "{subject}: {join} join keeps that side's rows unmatched, not pruned",
        "the key's side is the preserved side of an outer join, or a side of a full outer "
        "or anti join: dropping a row there changes the answer",
        "filter in an inner or semi join"),
    Code.BUILD_FILTERS_NOTHING: Entry(
        KEY, "{subject}: the build side ({build}) filters nothing, not pruned",
        "the other side keeps every row of a table too large to read whole for its keys "
        "(over 1 MiB of files, or of unknown size): taken to hold every key the fact holds",
        "filter the dimension"),
    Code.IN_FILTERS_NOTHING: Entry(
        KEY, "{subject}: the IN subquery ({build}) filters nothing, not pruned",
        "the subquery keeps every row of a table too large to read whole for its keys "
        "(over 1 MiB of files, or of unknown size)", "filter the subquery"),
    Code.FACT_BELOW_NONDETERMINISTIC: Entry(
        KEY, "{subject}: the fact is read below {why}, whose rows depend on the files read, "
        "not pruned",
        "a sample, limit or random function over the fact: its rows depend on which files "
        "are read, so dpp reads what Spark reads",
        "apply the limit or sample after the join"),
    Code.BUILD_NONDETERMINISTIC: Entry(
        KEY, "{subject}: the build side is not deterministic ({why}): run again it may give "
        "other keys, not pruned",
        "the build side is run again for its keys; a random function, sample, limit or "
        "tie-order window could give other keys the second time",
        "make the dimension's filter deterministic"),
    Code.KEY_NOT_ATOMIC: Entry(
        KEY, "{subject}: a key of type {type}; dpp's domains hold atomic values only, not "
        "pruned",
        "the key is an array, map or struct", "join on an atomic column"),
    Code.TYPE_MISMATCH: Entry(
        KEY, "type mismatch: {subject} is {build_type}, {probe} is {probe_type}; filter not "
        "used",
        "the build key cannot be compared in the partition column's type without changing "
        "values",
        "cast the key to the column's type in the query"),
    Code.EXPRESSION_KEY_SQL: Entry(
        KEY, "expression {subject}: not pruned (the SQL-text path prunes by a column's own "
        "values only)",
        "the SQL-text analysis prunes by a partition column's own values, not an expression "
        "of them",
        "use the optimizer hook (a classic session or `dpp connect-server`)"),
    Code.NARROWED_BUILD_SQL: Entry(
        KEY, "{subject}: its build side (a join's other side, or a narrowing of it) is not "
        "written as SQL: not used",
        "the SQL-text analysis writes a build side of FROM items and their joins of one "
        "SELECT, and a narrowing of it by the same; this one is another shape",
        "use the optimizer hook (a classic session or `dpp connect-server`)"),
    Code.NULL_SAFE_EQUALITY: Entry(
        KEY, "null-safe equality (<=>) matches NULLs: not used",
        "a `<=>` join matches NULL keys, which no partition value domain holds",
        "use `=` where NULL keys need not match"),
    Code.NON_EQUI: Entry(
        KEY, "non-equi join predicate not used: {subject}",
        "only equalities key a filter", "—"),
    Code.CORRELATED_IN: Entry(
        KEY, "correlated IN subquery: not used",
        "an IN subquery that reads the outer row cannot be run alone for its keys"),
    Code.EXISTS_GLOBAL_AGGREGATE: Entry(
        KEY, "EXISTS over an aggregate without GROUP BY is always true: not used",
        "such an EXISTS keeps every row"),
    Code.EXISTS_NON_EQUALITY: Entry(
        KEY, "EXISTS with a non-equality correlation: not used",
        "only an equality correlation keys a filter"),
    Code.ANTI_JOIN: Entry(
        KEY, "anti join (NOT IN / NOT EXISTS): never pruned",
        "an anti join keeps the rows that do not match: no partition can be skipped"),
}


@dataclass(frozen=True)
class Refusal:
    """One refusal: ``code``, the ``subject`` it is about (a key's SQL, a column, a table),
    and the other values its words name (``values``, name → text)."""

    code: Code
    subject: str = ""
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, code: Code, subject: Any = "", **values: Any) -> "Refusal":
        return cls(code, str(subject), tuple((k, str(v)) for k, v in values.items()))

    def get(self, name: str, default: str = "") -> str:
        return dict(self.values).get(name, default)

    def words(self) -> str:
        """The refusal as the report says it."""
        return ENTRIES[self.code].template.format(subject=self.subject, **dict(self.values))

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code.value, "subject": self.subject, "words": self.words()}

    def __str__(self) -> str:
        return self.words()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _pattern(template: str) -> str:
    """A template as the manual shows it: each value an ellipsis, ``{subject}`` as X."""
    import re

    out = template.replace("{subject}", "X")
    return re.sub(r"\{\w+\}", "…", out)


def refusals_markdown(scope: str) -> str:
    """The manual's table of one scope's refusals (``TABLE`` or ``KEY``)."""
    rows = ["| code | The report says | What it means | What you can do |",
            "| --- | --- | --- | --- |"]
    for code, e in ENTRIES.items():
        if e.scope == scope:
            rows.append(f"| `{code.value}` | `{_cell(_pattern(e.template))}` | "
                        f"{_cell(e.meaning)} | {_cell(e.remedy)} |")
    return "\n".join(rows) + "\n"


def check(entries: Mapping[Code, Entry] = ENTRIES) -> None:
    """Every code has an entry (the manual's table and the report's words)."""
    missing = [c.value for c in Code if c not in entries]
    if missing:
        raise AssertionError(f"refusal codes without an entry: {missing}")


check()
