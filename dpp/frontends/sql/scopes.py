"""One SELECT of a query given as SQL text: its FROM items, the side of each join each one is
on, and the conjuncts that hold for its rows.

Which side of a join may be pruned is :func:`dpp.analysis.rules.may_prune`'s answer, read once per
join here into a :class:`Source`'s flags. Only the translation into the typed plan
(:mod:`dpp.frontends.sql.typed`) reads them — where a conjunct goes, as Spark's analyzer
puts it, and which equalities are inner join keys; what is pruned, where conditions hold and
the report's reasons are decided on the typed plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from dpp.analysis import rules
from dpp.analysis.pruning_plan import Resolver, TableInfo

__all__ = ["Tables", "Source", "Scope", "scope", "join_type_of", "inner_join", "join_on",
           "conjuncts", "table_name", "positions", "refers_to", "has_is_null", "has_subquery",
           "selective", "matched_only", "outer_columns", "null_rejecting", "USING_ON"]

# meta of a USING / NATURAL join: the equalities Spark makes of it (dpp.frontends.sql.using)
USING_ON = "dpp_using_on"


class Tables:
    """What one analysis knows of the tables it meets: the resolver's answers (cached: a
    resolver asks the catalog) and the query's CTE bodies by name, which a table reference
    names before any catalog table."""

    def __init__(self, resolve: Resolver) -> None:
        self._resolve = resolve
        self._cache: dict[str, Optional[TableInfo]] = {}
        self.ctes: dict[str, exp.Expression] = {}

    def info(self, name: str) -> Optional[TableInfo]:
        key = name.lower()
        if key not in self._cache:
            self._cache[key] = self._resolve(key)
        return self._cache[key]

    def partitioned(self, t: exp.Table) -> bool:
        info = self.info(table_name(t))
        return info is not None and bool(info.partition_columns)

    def holds_partitioned(self, body: exp.Expression) -> bool:
        """Does a query read a partitioned table (the only thing worth pruning) anywhere?"""
        return any(self.partitioned(t) for t in body.find_all(exp.Table)
                   if t.name.lower() not in self.ctes or t.args.get("db"))


class Source:
    """One FROM/JOIN item of a SELECT scope."""

    def __init__(self, alias: str, node: exp.Expression, table: Optional[str],
                 info: Optional[TableInfo]) -> None:
        self.alias = alias
        self.node = node                # exp.Table or exp.Subquery
        self.table = table              # base table name (None for derived tables)
        self.info = info
        self.cte: Optional[exp.Expression] = None   # CTE body when the table names a CTE
        self.null_supplied = False      # outer join may fill it with NULLs
        self.preserved_outer = False    # preserved side of some outer join
        self.semi_right = False         # right side of SEMI/ANTI: not visible above
        self.outer_on: list[exp.Expression] = []     # its own outer join's ON conjuncts
        self.full = False

    @property
    def prunable(self) -> bool:
        return self.info is not None and self.cte is None and isinstance(self.node, exp.Table)


@dataclass
class Scope:
    """One SELECT being analysed: its FROM items and the conjuncts that hold for its rows."""

    sel: exp.Select
    sources: dict[str, Source]
    where: list[exp.Expression]          # WHERE conjuncts
    inner_on: list[exp.Expression]       # ON conjuncts of its inner joins

    def owner(self, c: exp.Column, probe: Optional[Source] = None) -> Optional[str]:
        """Which FROM item a column belongs to (None: an outer scope's, or unknown); with one
        FROM item, ``probe`` owns every unqualified column."""
        t = c.table.lower() if c.table else ""
        if t:
            return t if t in self.sources else None
        if probe is not None and len(self.sources) == 1:
            return probe.alias
        name = c.name.lower()
        hits = []
        for s in self.sources.values():
            if s.info is not None:
                if name in (k.lower() for k in s.info.columns):
                    hits.append(s.alias)
            elif isinstance(s.node, exp.Subquery):
                if name in positions(s.node):
                    hits.append(s.alias)
            elif s.cte is not None:
                if name in {n.lower() for n in getattr(s.cte, "named_selects", [])}:
                    hits.append(s.alias)
        return hits[0] if len(hits) == 1 else None


def join_type_of(j: exp.Join) -> Optional[rules.JoinType]:
    """A join's type by :mod:`dpp.analysis.rules`' names, None for a kind Spark has no name for.

    A cross join (``CROSS JOIN``, a comma) is an inner join here: its keys are the WHERE
    equalities over it, the ones Spark's optimizer makes it an inner join on."""
    side = (j.args.get("side") or "").lower()
    kind = (j.args.get("kind") or "").lower()
    if kind in ("semi", "anti"):
        return rules.join_type(kind)
    if side:
        return rules.join_type(side)
    if kind in ("", "cross"):
        return rules.JoinType.INNER
    return rules.join_type(kind)


def join_on(j: exp.Join) -> list[exp.Expression]:
    """A join's ON conjuncts; a USING / NATURAL join's equalities (:mod:`dpp.frontends.sql.using`)."""
    if j.args.get("on") is not None:
        return conjuncts(j.args.get("on"))
    return list(j.meta.get(USING_ON) or [])


def inner_join(j: exp.Join) -> bool:
    """Do a join's ON conjuncts hold for the scope's rows as a WHERE's do (both sides come
    out, each pruned by the other's keys)?"""
    jt = join_type_of(j)
    return jt is not None and rules.output_sides(jt) == ("left", "right") and \
        rules.prunable_sides(jt) == ("left", "right")


def _mark(before: list[Source], src: Source, j: exp.Join) -> None:
    """Sets the flags of the sources a join puts side by side, ``before`` (the left, every
    FROM item so far) and ``src`` (the right): a side the rules may not prune by the join's
    keys is preserved (every row of it comes out), and makes the other side NULL-supplied.
    A kind Spark has no name for (Spark refuses the query) marks nothing; its ON is used
    nowhere."""
    jt = join_type_of(j)
    if jt is None:
        return
    if rules.output_sides(jt) == ("left",):   # the right side is only a test
        src.semi_right = True
        return
    left_kept = not rules.may_prune(jt, "left")
    right_kept = not rules.may_prune(jt, "right")
    if left_kept and right_kept:        # full outer: both sides preserved, both NULL-padded
        for s in before + [src]:
            s.null_supplied = True
            s.full = True
    elif left_kept:                     # the right side is pruned by its ON alone
        src.null_supplied = True
        src.outer_on = join_on(j)
        for s in before:
            s.preserved_outer = True
    elif right_kept:                    # the left side is, when it is one FROM item
        for s in before:
            s.null_supplied = True
            s.outer_on = join_on(j) if len(before) == 1 else []
        src.preserved_outer = True


def _sources(sel: exp.Select, tables: Tables) -> dict[str, Source]:
    out: dict[str, Source] = {}
    frm = sel.args.get("from_")
    if frm is None:
        return out
    order: list[Source] = []

    def add(node: exp.Expression) -> Optional[Source]:
        if isinstance(node, exp.Table):
            name = table_name(node)
            alias = (node.alias or node.name).lower()
            src = Source(alias, node, name.lower(), None)
            if name.lower() in tables.ctes and not node.args.get("db"):
                src.cte = tables.ctes[name.lower()]
            else:
                src.info = tables.info(name)
        elif isinstance(node, exp.Subquery):
            alias = (node.alias or "").lower()
            src = Source(alias, node, None, None)
        else:  # lateral views, table functions, VALUES: unknown shape
            return None
        out[src.alias] = src
        order.append(src)
        return src

    add(frm.this)
    for j in sel.args.get("joins") or []:
        src = add(j.this)
        if src is not None:
            _mark(order[:-1], src, j)
    return out


def scope(sel: exp.Select, tables: Tables) -> Optional[Scope]:
    """The scope of a SELECT, None when it reads from nothing."""
    sources = _sources(sel, tables)
    if not sources:
        return None
    where = sel.args.get("where")
    inner_on: list[exp.Expression] = []
    for j in sel.args.get("joins") or []:
        if inner_join(j):
            inner_on.extend(join_on(j))
    return Scope(sel, sources, conjuncts(where.this) if where is not None else [], inner_on)


def conjuncts(e: Optional[exp.Expression]) -> list[exp.Expression]:
    if e is None:
        return []
    out = []
    for c in e.flatten() if isinstance(e, exp.And) else [e]:
        c = c.unnest() if isinstance(c, exp.Paren) else c
        if isinstance(c, exp.And):
            out.extend(conjuncts(c))
        else:
            out.append(c)
    return out


def table_name(t: exp.Table) -> str:
    parts = [p.name for p in t.parts]
    return ".".join(parts) if parts else t.name


def positions(node: exp.Subquery) -> dict[str, int]:
    """Output column name → position, for a derived table (its alias's column list, else the
    names its query selects; a UNION is named by its first branch)."""
    alias = node.args.get("alias")
    names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
    if not names:
        names = list(node.this.named_selects)
    out: dict[str, int] = {}
    for i, n in enumerate(names):
        out.setdefault(n.lower(), i)
    return out


def refers_to(e: exp.Expression, alias: str) -> bool:
    return any(col.table and col.table.lower() == alias for col in e.find_all(exp.Column))


def has_is_null(c: exp.Expression) -> bool:
    """Can a conjunct be true on a NULL-padded row (an ``IS NULL`` or a ``COALESCE`` in it)?"""
    for n in c.find_all(exp.Is):
        if not isinstance(n.parent, exp.Not):
            return True
    return bool(list(c.find_all(exp.Coalesce)))


def matched_only(*sources: "Source") -> bool:
    """Do these FROM items' rows come out only matched: no outer join may fill one with
    NULLs, and none is a semi or anti join's test? (An equality between two such items, in
    the WHERE or an inner ON, is an inner join's key: either side may be pruned by it.)"""
    return not any(s.null_supplied or s.semi_right for s in sources)


def selective(c: exp.Expression) -> bool:
    """Does a conjunct make a ``Filter`` selective in the typed plan? Any but ``IS NOT
    NULL`` alone (Spark adds those for every join key; they filter nothing worth a build)."""
    return not (isinstance(c, exp.Not) and isinstance(c.this, exp.Is))


def has_subquery(c: exp.Expression) -> bool:
    return any(True for _ in c.find_all(exp.Select))


def outer_columns(node: exp.Expression) -> list[exp.Column]:
    """The columns of a conjunct that belong to its own scope: not those inside a subquery
    (a subquery names its own tables, whatever their aliases)."""
    out: list[exp.Column] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            out.append(n)
            continue
        if isinstance(n, (exp.Subquery, exp.Query)) and n is not node:
            continue
        stack.extend(n.iter_expressions())
    return out


_NULL_AWARE = (exp.Is, exp.Coalesce, exp.Case, exp.If, exp.NullSafeEQ, exp.NullSafeNEQ,
               exp.Anonymous, exp.Not, exp.Or)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In, exp.Between,
                exp.Like)


def null_rejecting(c: exp.Expression) -> bool:
    """Is a conjunct never true when the columns it reads are NULL (the rows an outer join
    fills with NULLs)? A comparison without a NULL-aware function in it, ``x IS NOT NULL``,
    or an OR of these. Such a conjunct above an outer join may move into its NULL-supplied
    side: the rows it removes there would come out NULL-filled and be removed above."""
    c = c.unnest() if isinstance(c, exp.Paren) else c
    if isinstance(c, exp.Or):
        return all(null_rejecting(x) for x in c.flatten())
    if isinstance(c, exp.Not) and isinstance(c.this, exp.Is) and \
            isinstance(c.this.expression, exp.Null) and isinstance(c.this.this, exp.Column):
        return True
    if not isinstance(c, _COMPARISONS):
        return False
    return not any(True for _ in c.find_all(*_NULL_AWARE))
