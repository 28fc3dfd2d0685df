"""Hive partition path naming, byte-for-byte compatible with Spark's writer and reader.

Spark (``ExternalCatalogUtils.escapePathName``) escapes, as ``%XX`` with uppercase hex, only
ASCII characters in a fixed set: control characters 0x01-0x1F, ``"#%'*/:=?\\`` DEL (0x7F) and
``{[]^``. Spaces, NUL and every non-ASCII character (``ünï``) are written as they are. Verified
against Spark 4.3's JVM (``tests/test_hive_splits_naming.py`` compares with it).

Unescaping (``unescapePathName``) turns each ``%`` followed by two hex digits (either case) into
the one character with that code (not a UTF-8 byte: ``%C3%A9`` gives ``Ã©``, as Spark does);
any other ``%`` is kept literally.

NULL (and, for Spark's writer, the empty string) is the folder value
``__HIVE_DEFAULT_PARTITION__``.
"""
from __future__ import annotations

import re
from typing import Optional

__all__ = [
    "DEFAULT_PARTITION_NAME", "escape_path_name", "unescape_path_name", "is_hidden",
    "partition_folder_name", "parse_folder_name", "partition_path",
]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

_ESCAPED = frozenset([*range(0x01, 0x20), *map(ord, "\"#%'*/:=?\\\x7f{[]^")])
_ESCAPE_TABLE = {c: f"%{c:02X}" for c in _ESCAPED}
_UNESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_path_name(text: str) -> str:
    """Escapes a column name or partition value the way Spark's writer names folders."""
    return text.translate(_ESCAPE_TABLE)


def unescape_path_name(text: str) -> str:
    """Inverse of :func:`escape_path_name`, with Spark's rules for stray ``%``."""
    if "%" not in text:
        return text
    return _UNESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)


def is_hidden(name: str) -> bool:
    """Whether a directory entry is ignored by Spark's file listing (and by ours).

    Same rule as Spark's ``InMemoryFileIndex.shouldFilterOutPathName``: names starting with
    ``.``, names starting with ``_`` unless they hold ``=`` (``_col=1`` is a partition folder,
    ``_SUCCESS`` and ``_metadata`` are markers), in-flight ``._COPYING_`` copies; plus
    checksum files ``*.crc``.
    """
    if not name:
        return True
    if name[0] == ".":
        return True
    if name[0] == "_" and "=" not in name:
        return True
    return name.endswith("._COPYING_") or name.endswith(".crc")


def partition_folder_name(column: str, value: Optional[str]) -> str:
    """``column=value`` escaped; ``None`` (and ``""``, as Spark writes it) → the default name."""
    if value is None or value == "":
        return f"{escape_path_name(column)}={DEFAULT_PARTITION_NAME}"
    return f"{escape_path_name(column)}={escape_path_name(value)}"


def partition_path(spec: list[tuple[str, Optional[str]]]) -> str:
    """The relative path of a partition, e.g. ``a=1/b=x%3Ay``, from text values."""
    return "/".join(partition_folder_name(c, v) for c, v in spec)


def parse_folder_name(name: str) -> Optional[tuple[str, Optional[str]]]:
    """``(column, value text)`` of a ``key=value`` folder, unescaped; ``None`` if not one.

    The value is ``None`` for ``__HIVE_DEFAULT_PARTITION__``. Like Spark, the first ``=``
    splits the name (an ``=`` inside a column name or value is always escaped). An empty column
    name or value is not a partition folder.
    """
    i = name.find("=")
    if i <= 0 or i == len(name) - 1:
        return None
    raw = name[i + 1:]
    column = unescape_path_name(name[:i])
    if raw == DEFAULT_PARTITION_NAME:
        return column, None
    return column, unescape_path_name(raw)
