"""The tables of a nuScenes-layout log behind one small interface: indexed on disk, or loaded whole.

``open_tables`` gives the reader (``stridegen.logs.nuscenes``) a ``TableStore``:

- ``IndexedTables`` (the default): the tables are indexed once into an SQLite file (``stridegen.logs.index``:
  where it lives, when it is rebuilt). Per record it holds the table, the row, the token, the token the record
  hangs from (a sample's scene; a sample_data's or an annotation's sample), the sample_data's key-frame flag, a
  scene's name, and the byte offset and length of the record's text in its JSON file. Records are read from the
  JSON files when asked for, a scene's all at once (``focus``; records close together in a file with one read,
  ``IndexedTables._read_bulk``), so a process holds the records of at most ``FOCUS_SCENES`` scenes, plus the small
  tables' records it used: its memory does not grow with the log.
- ``JsonTables``: every table loaded into memory when the log is opened (the former reader). It is the reference
  of the tests and the benchmark's baseline, and the fallback where no index can be written (with a note on
  stderr); ``STRIDEGEN_LOG_INDEX=0`` chooses it.

Both give the same records and find the same problems of single records (module docstring of
``stridegen.logs.nuscenes``): ``bad(table, token)`` is the error of a token used by records of different contents
(``DuplicateTokenError``) or of an ego pose / calibration whose rotation or translation is invalid
(``InvalidPoseError``); the first is reported where a token has both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from stridegen.logs.nuscenes_indexed_tables import IndexedTables
from stridegen.logs.nuscenes_json_tables import JsonTables
from stridegen.logs.nuscenes_table_store import TableStore

INDEX_ENV = "STRIDEGEN_LOG_INDEX"  # "0": load the tables whole (JsonTables) instead of indexing them


def open_tables(root: Path, table_dir: Path, index: bool = True) -> TableStore:
    """The tables of ``table_dir``: indexed (``IndexedTables``) unless ``index`` is False or ``STRIDEGEN_LOG_INDEX``
    is "0", or no index can be written anywhere (then loaded whole, with a note on stderr)."""
    if not index or os.environ.get(INDEX_ENV, "1") == "0":
        return JsonTables(table_dir)
    tables = IndexedTables(root, table_dir)
    if tables.index_path is None:
        print(
            f"stridegen: cannot write a log index in {tables.candidates[0].parent} or {tables.candidates[1].parent}; "
            "loading the tables whole",
            file=sys.stderr,
        )
        return JsonTables(table_dir)
    return tables
