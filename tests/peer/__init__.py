"""The peer suite: cases ported from Spark's and Trino's dynamic partition pruning tests.

Each case is a query over small partitioned tables, run in three modes (every dynamic pruning
off, Spark's defaults, dpp's optimizer hook on Spark's defaults) on path and catalog tables,
with adaptive execution on and off. The suite counts, per mode, the cases that read fewer
partitions than Spark with pruning off, and every case's rows must equal that reference.
Run it with ``python -m tests.peer``; ``tests/test_peer_suite.py`` runs it under pytest.
"""
