"""dpp's differential fuzzer: generated star joins, each run with dpp and with Spark alone.

A *case* (:class:`tests.fuzz.model.Case`) is data, a query and settings, drawn from a seed:
a fact table partitioned by one to three columns of the types Spark infers or a catalog
declares, with odd folder values, NULL and empty partitions, several files a partition,
leftovers Spark ignores, files of another schema, and files an hour old (what dpp keeps
by modification times then engages); read as one of the three relation kinds
(a table of Spark's catalog with partitions placed where the catalog allows,
``spark.read.parquet``, a table declared by ``spark.dpp.tables.*``); a dimension with
duplicates, NULL keys, keys of other types and keys through expressions and collations; a
query written as SQL or as DataFrames (joins of every type, IN/EXISTS, CTEs, unions,
aggregates, windows, LIMIT, samples of the join (sorted or not), nondeterministic functions,
a write read back, the rows compared with a second reference to the fact); session settings
(ANSI, time zones, case sensitivity, AQE, a small value limit, statistics pruning); and steps
between two runs (files added, removed or rewritten, the dimension overwritten, a view
redefined, a setting changed, the same DataFrame reused).

Each run is compared as a multiset of rows with the oracle: the same query on the same session
and data with ``spark.dpp.enabled=false`` and every dynamic pruning of Spark's off. A
mismatch is shrunk (:mod:`tests.fuzz.shrink`) and written out as a pytest regression test.

    python -m tests.fuzz --minutes 5 --seed 1 [--connect]      # or: make fuzz MINUTES=5 SEED=1

The last line is ``fuzz: <N> cases, <W> mismatches, <P> pruned``; the exit status is 1 on any
mismatch.
"""
