"""A case the differential fuzzer found (``python -m tests.fuzz``, seed 101), reduced by hand:
a DataFrame over a declared table written out, a file added, the same DataFrame written out
again (a new query execution of the same analyzed plan).

Spark's ``spark.read.parquet(folder)`` lists the folder once, when the DataFrame (or the view
it reads) is made; the same DataFrame run again reads that listing. A declared table read by a
lazy index of dpp's listed when the scan ran, so the second run read the added file too (found:
Spark 6 rows, dpp 9). A declared table is now Spark's reader of the folder, made afresh for
each query: the same DataFrame reads the same listing, as Spark's does.
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [1, 1], 'key_type': 'int', 'keys': ['1', '2'], 'keys2': []},
        'fact': {'col_in_file': False,
                 'cols': [{'kind': 'int', 'name': 'p'}],
                 'evolved': [],
                 'files': [1, 1, 1],
                 'leftovers': False,
                 'partitions': [['1'], ['2'], ['3']],
                 'placed': [],
                 'relation': 'declared',
                 'rows_per_file': 2},
        'query': {'api': 'sql',
                  'dim_filter': 'lt',
                  'extra': 'write',
                  'key': 'eq',
                  'lower_names': False,
                  'shape': 'inner'},
        'seed': 101,
        'settings': {},
        'step': 'reuse_df'}


def test_fz_declared_reused_frame(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
