"""The peer suites this repository holds: their cases and shared tables, by name."""
from __future__ import annotations

from tests.peer.model import PeerCase, PeerTable

SUITES = ("spark", "trino")


def load(names: tuple[str, ...] = SUITES) -> tuple[list[PeerCase], list[PeerTable]]:
    """The cases of the named suites, in order, and the tables they share."""
    cases: list[PeerCase] = []
    tables: list[PeerTable] = []
    for name in names:
        if name == "spark":
            from tests.peer.spark_cases import CASES as spark_cases
            from tests.peer.spark_tables import spark_tables

            cases += spark_cases
            tables += spark_tables()
        elif name == "trino":
            from tests.peer.trino_cases import CASES as trino_cases, TABLES as trino_tables

            cases += trino_cases
            tables += trino_tables
        else:
            raise ValueError(f"unknown peer suite {name!r} (known: {', '.join(SUITES)})")
    return cases, tables
