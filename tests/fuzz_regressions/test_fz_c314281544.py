"""A case the differential fuzzer found (``python -m tests.fuzz``, seed 303; twice, both shrunk
to this): path[p:timestamp] sql inner/eq/lt/none dim=timestamp step=setting.

A ``spark.read.parquet`` relation partitioned by a TIMESTAMP, made in one session time zone
and queried after the zone changed: Spark's values are the instants it parsed when the
DataFrame was made; dpp parsed the folder names in the new zone and kept no partition (Spark 1
row, dpp 0). A reader relation's TIMESTAMP partition column is now never pruned by dpp.
"""
from tests.fuzz.check import assert_same_rows

CASE = {'dim': {'attrs': [3],
         'key_type': 'timestamp',
         'keys': ['2024-01-01 12:00:00.5'],
         'keys2': []},
 'fact': {'col_in_file': False,
          'cols': [{'kind': 'timestamp', 'name': 'p'}],
          'evolved': [],
          'files': [1],
          'leftovers': False,
          'partitions': [['2024-01-01 12:00:00.5']],
          'placed': [],
          'relation': 'path',
          'rows_per_file': 1},
 'query': {'api': 'sql',
           'dim_filter': 'lt',
           'extra': 'none',
           'key': 'eq',
           'lower_names': False,
           'shape': 'inner'},
 'seed': 303,
 'settings': {},
 'step': 'setting'}


def test_fz_c314281544(spark, tmp_path):
    assert_same_rows(spark, tmp_path, CASE)
