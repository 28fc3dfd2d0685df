"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: declared[p:boolean] sql inner/eq/lt/none dim=string.

first run: Spark 0 rows {}
dpp   error ArrayIndexOutOfBoundsException:
reports: fz_f230: applied kept 1/2
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3], 'key_type': 'string', 'keys': ['false'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'boolean', 'name': 'p'}],
          'evolved': [],
          'files': [1, 0],
          'leftovers': False,
          'partitions': [['true'], ['false']],
          'placed': [],
          'relation': 'declared',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 1901,
 'settings': {'spark.dpp.declaredTables.keptListing': '0'},
 'step': None}


def test_fz_03cd8c27dc(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
