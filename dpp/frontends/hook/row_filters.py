"""Row-group filters through the optimizer hook: a data column's domain reaching Parquet.

A dynamic filter on a data column of a pruned relation skips the files whose statistics rule
it out (the split loader). Inside a kept file the same test pays per row group, and Spark's
Parquet reader makes it for every predicate pushed into the scan; a row outside the domain
cannot match the join either, so filtering it early is sound for the same reason skipping
its file was, and it spares the joins above it (TPC-DS q72: catalog_sales rows that would
meet the whole inventory table).

The rule cannot wait for the build side without holding the query's planning, so only a
relation with such a filter waits: its load (started with the query's other build sides and
loads) is awaited here, bounded, and the domain comes back to the rule as
:class:`dpp.runtime.row_groups.RowTerms`, which the rule turns into a Catalyst ``Filter`` right above
the relation (pushed into Parquet by Spark's own scan planning). A load that is late or fails
leaves the relation without the filter, which is only a loss of speed.

A column whose rows meet a shuffle join below the join its filter stands for
(``Prune.rows_pay``) gets every value of the filter, tested per row as Spark's ``InSet``: the
rows it removes are spared that join, which is what it is built for (statistics may have
judged it unable to skip a file: ``Prune.rows_only``, no footer read for it).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from dpp.runtime.row_groups import row_set, row_terms

if TYPE_CHECKING:
    from hive_splits import LoadResult

__all__ = ["row_filters_for", "ROW_FILTER_WAIT"]

log = logging.getLogger(__name__)

# the longest the rule's call waits for a relation's load (the JVM side gives up on the call
# at 120 s and keeps Spark's plan, so this stays well below it)
ROW_FILTER_WAIT = 90.0


def row_filters_for(request: Any, nodes: dict[int, dict[str, Any]],
                    targets: dict[int, tuple[Any, str, list[Any]]], wrap: dict[str, str],
                    cfg: Any) -> dict[str, list[dict[str, Any]]]:
    """Relation node (as text) -> the row filters the rule puts above it: one per data
    column whose build side's domain is narrow enough to state (see ``row_terms``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    deadline = time.monotonic() + min(float(cfg.wait_timeout), ROW_FILTER_WAIT)
    for rel, token in wrap.items():
        _table, name, prunes = targets[int(rel)]
        if not any(p.data for p in prunes):
            continue
        future = request.loads.get(token)
        if future is None:
            continue
        try:
            result: LoadResult = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except Exception as exc:   # late or failed: the listing reports it; no row filter
            log.info("dpp: no row filter on %s: its load did not finish (%s)", name, exc)
            continue
        specs, texts = _specs(nodes[int(rel)], result,
                              {p.column.lower() for p in prunes
                               if p.data and p.rows_pay and p.compare == "="})
        if specs:
            out[rel] = specs
            if result.row_group_filter is None:
                result.row_group_filter = " AND ".join(texts)
    return out


def _specs(node: dict[str, Any], result: "LoadResult", rows: set[str]
           ) -> tuple[list[dict[str, Any]], list[str]]:
    """The row filters of one relation; ``rows``: the (lower-case) columns whose rows meet a
    costly join below the one their filter stands for: besides the terms Parquet's row groups
    need, every value as a set Spark tests per row (``row_set``, not pushed into the scan)."""
    by_name = {n.lower(): (attr, n) for attr, n, _t in node["output"]}
    specs: list[dict[str, Any]] = []
    texts: list[str] = []
    for column, domain in sorted(result.data_domains.items()):
        found = by_name.get(column.lower())
        if found is None:
            continue
        every = row_set(domain) if column.lower() in rows else None
        for terms in (row_terms(domain), every):
            if terms is not None:
                specs.append({"attr": found[0], **terms.to_wire()})
                texts.append(terms.text(found[1]))
    return specs, texts
