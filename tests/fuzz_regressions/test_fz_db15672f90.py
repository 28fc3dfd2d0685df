"""A case the differential fuzzer found (``python -m tests.fuzz --backend connect --seed 909``),
shrunk: catalog[p:boolean] sql inner/eq/lt/none dim=string. The class of
``test_fz_88bdfde1c7``: a catalog table of NULL partitions only, whose key Spark alone never
casts (its static pruning empties the table); with dpp the catalog relation is hidden from that
pruning and the dimension's 'zz' fails the cast to BOOLEAN. Fixed with it.

first run: Spark 0 rows {}
dpp   error SparkRuntimeException: [CAST_INVALID_INPUT] The value 'zz' of the type "STRING"
    cannot be cast to "BOOLEAN" because it is malformed. Correct the value as per the syntax, or
    change its target type. Use `try_cast` to tolerate malformed input and return NULL instead.
    SQLSTATE: 22018
reports: fz_f1752: none kept None/None (never listed: Spark did not scan this relation (nothing
    read))
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [1], 'key_type': 'string', 'keys': ['zz'], 'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'boolean', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [[None]],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 909,
 'settings': {},
 'step': None}


def test_fz_db15672f90(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
