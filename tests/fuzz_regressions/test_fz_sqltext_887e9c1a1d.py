"""A case the differential fuzzer found (``python -m tests.fuzz``), shrunk: catalog[p:date] sql inner/cast_dim/none/outer_not_null dim=date
step=remove_partition.

after step remove_partition: Spark 0 rows {}
dpp   error LayoutError: table fz_f481: location '/tmp/pytest-of-
    root/pytest-199/test_a_fixed_seed_on_the_sql_t0/case-481/fact/p=2024-01-01' of partition
    (p=datetime.date(2024, 1, 1)) does not exist
reports: none
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [], 'key_type': 'date', 'keys': [], 'keys2': []},
 'fact': {'aged': False,
          'col_in_file': False,
          'cols': [{'kind': 'date', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [['2024-01-01']],
          'placed': [],
          'relation': 'catalog',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'none',
           'extra': 'outer_not_null',
           'key': 'cast_dim',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 20261130,
 'settings': {},
 'step': 'remove_partition'}


def test_fz_sqltext_887e9c1a1d(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE, backend="sqltext")
