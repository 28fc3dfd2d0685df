"""Arrow batches → one task's partial domain, vectorized with ``pyarrow.compute``.

This is the code that runs inside each build task (see :mod:`collectors.build`). It needs no
Spark, so it is tested directly. Per key column it keeps, in order of preference:

* the exact distinct values (``pc.unique`` per batch, compacted now and then), while there are
  at most ``max_distinct`` of them;
* beyond that, with blooms enabled, still the distinct values (needed to fill the bloom at the
  end) but only up to the bloom capacity — past it a bloom would not meet its fpp anyway;
* otherwise only the running min/max (``pc.min_max``) — memory stays bounded.

The final collapse is :meth:`Domain.simplify`, the one place the policy lives; the same call
runs again on the merged result in the coordinator.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DomainError
from dpp.core.policy import CollapsePolicy

__all__ = ["arrow_to_datatype", "ColumnCollector", "PartialCollector"]

log = logging.getLogger(__name__)

# compact the per-batch unique chunks once they hold this many values (bounded memory, and
# few enough pc.unique calls over the concatenation to stay cheap)
_COMPACT_AT = 1 << 16


def arrow_to_datatype(t: pa.DataType, column: str = "?") -> DataType:
    """The domain type of a build key column's Arrow type (see :meth:`DataType.from_arrow`)."""
    try:
        return DataType.from_arrow(t)
    except DomainError as exc:
        raise DomainError(f"build key column {column!r}: {exc}") from None


@dataclass
class ColumnCollector:
    """The running state of one key column within one task."""

    name: str
    type: DataType
    policy: CollapsePolicy
    rows: int = 0
    nulls: int = 0
    mode: str = "values"                # values | minmax
    _chunks: list = field(default_factory=list)
    _pending: int = 0
    _lo: Any = None
    _hi: Any = None
    _nan: bool = False

    @property
    def _limit(self) -> int:
        """How many distinct values may be kept before only min/max is."""
        return self.policy.exact_limit

    def add(self, arr: pa.Array) -> None:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        n = len(arr)
        if n == 0:
            return
        self.rows += n
        self.nulls += arr.null_count
        if self.mode == "minmax":
            self._add_minmax(arr)
            return
        u = pc.unique(arr)
        if u.null_count:
            u = u.drop_null()
        if len(u) == 0:
            return
        self._chunks.append(u)
        self._pending += len(u)
        if self._pending > max(_COMPACT_AT, self._limit):
            self._compact()

    def _compact(self) -> None:
        if len(self._chunks) > 1:
            combined = pc.unique(pa.concat_arrays(self._chunks))
            self._chunks = [combined]
            self._pending = len(combined)
        if self._pending > self._limit:
            # too many for exact values (or for the bloom's capacity): keep min/max only
            whole = self._chunks[0]
            self._chunks, self._pending = [], 0
            self.mode = "minmax"
            self._add_minmax(whole)

    def _add_minmax(self, arr: pa.Array) -> None:
        if self.type.is_floating and pc.any(pc.is_nan(arr)).as_py():
            self._nan = True
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return
        if self.type.is_floating:
            if isinstance(lo, float) and math.isnan(lo):  # only NaN in this array
                return
            lo, hi = lo + 0.0, hi + 0.0
        if self._lo is None or lo < self._lo:
            self._lo = lo
        if self._hi is None or hi > self._hi:
            self._hi = hi

    def distinct(self) -> Optional[int]:
        """The exact number of distinct non-null values, when still known."""
        if self.mode != "values":
            return None
        self._compact()
        return self._pending if self.mode == "values" else None

    def domain(self) -> Domain:
        """This column's partial domain, collapsed by :meth:`Domain.simplify`."""
        t = self.type
        null = self.nulls > 0
        if self.mode == "values":
            self._compact()
        if self.mode == "values":
            if not self._chunks:
                return Domain.only_null(t) if null else Domain.none(t)
            d = Domain.values(t, self._chunks[0].to_pylist(), null_allowed=null)
            return self.policy.simplify(d)
        if self._lo is None:
            if self._nan:
                return Domain.values(t, [math.nan], null_allowed=null)
            return Domain.only_null(t) if null else Domain.none(t)
        hi = math.nan if self._nan else self._hi
        return Domain.range(t, self._lo, hi, null_allowed=null)


class PartialCollector:
    """All key columns of one task: feed Arrow batches, then take the partial TupleDomain."""

    def __init__(self, schema: pa.Schema, key_columns: Iterable[str], *, max_distinct: int,
                 bloom_enabled: bool, bloom_fpp: float, bloom_capacity: Optional[int],
                 count_column: Optional[str] = None) -> None:
        """``count_column``: batches are pre-aggregated (one row per distinct key) and this
        column holds how many input rows each stands for; it only feeds :attr:`rows`."""
        if max_distinct < 0:
            raise DomainError(f"max_distinct must be >= 0, got {max_distinct}")
        policy = CollapsePolicy.of(max_distinct, float(bloom_fpp) if bloom_enabled else None,
                                   bloom_capacity)
        self.columns: list[ColumnCollector] = []
        for name in key_columns:
            idx = schema.get_field_index(name)
            if idx < 0:
                raise DomainError(f"build key column {name!r} is not in the batch schema "
                                  f"{schema.names}")
            self.columns.append(ColumnCollector(
                name, arrow_to_datatype(schema.field(idx).type, name), policy))
        if count_column is not None and schema.get_field_index(count_column) < 0:
            raise DomainError(f"count column {count_column!r} is not in the batch schema "
                              f"{schema.names}")
        self.count_column = count_column
        self.batches = 0
        self._counted = 0

    def add_batch(self, batch: pa.RecordBatch) -> None:
        self.batches += 1
        for c in self.columns:
            c.add(batch.column(c.name))
        if self.count_column is not None and batch.num_rows:
            self._counted += int(pc.sum(batch.column(self.count_column)).as_py() or 0)

    @property
    def rows(self) -> int:
        """Input rows seen (through the count column when batches are pre-aggregated)."""
        if self.count_column is not None:
            return self._counted
        return self.columns[0].rows if self.columns else 0

    def distinct(self) -> Optional[int]:
        """Distinct values of a single-column key, when exact; else None."""
        if len(self.columns) != 1:
            return None
        return self.columns[0].distinct()

    def result(self) -> TupleDomain:
        """The partial: NONE for a task without rows, else one domain per key column."""
        if not self.columns or self.columns[0].rows == 0:
            return TupleDomain.none()
        return TupleDomain.of({c.name: c.domain() for c in self.columns})
