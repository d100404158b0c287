"""The snapshot's Arrow columns stored once per distinct value.

Most string columns the read API holds repeat a few values over millions of rows (a run's job, a
dataset's namespace and name, a state), or repeat keys another table already holds (a run's uuid in
its inputs and outputs, a version's run). Dictionary arrays keep each distinct value once and a
4-byte index per row; a reference column can use the other table's key column itself as its
dictionary, so the strings are not stored twice. Arrow's sort does not take dictionary columns, so
tables are compacted after they are sorted.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

# Every timestamp the snapshot serves: microseconds in UTC, as Spark hands them to Arrow.
TIMESTAMP = pa.timestamp("us", tz="UTC")


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _replace(table: pa.Table, name: str, column: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, column)


def decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A compacted column (a dictionary or reference column) as plain values again; others as they are."""
    if pa.types.is_dictionary(column.type):
        return pa.chunked_array([chunk.dictionary_decode() for chunk in column.chunks], column.type.value_type)
    return column


def positions_in(column: pa.Array | pa.ChunkedArray, keys: pa.Array) -> pa.ChunkedArray:
    """Per row, the index of its value in ``keys`` (null where ``keys`` lacks it). A compacted column is looked
    up through its dictionary, once per distinct value rather than once per row: hashing every row's string
    was most of a refresh's check of kept rows against the changed datasets."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    found = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            found.append(pc.index_in(chunk.dictionary, value_set=keys).take(chunk.indices))
        else:
            found.append(pc.index_in(chunk, value_set=keys))
    return pa.chunked_array(found, pa.int32())


def encode_repeated(table: pa.Table, names: tuple[str, ...]) -> pa.Table:
    """``names`` (string columns with few distinct values) as dictionary columns."""
    for name in names:
        column = _array(table.column(name))
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            table = _replace(table, name, column.dictionary_encode())
    return table


def single_chunk(table: pa.Table, name: str) -> tuple[pa.Table, pa.Array]:
    """The table with ``name`` as one chunk, and that chunk: the dictionary that references share."""
    column = _array(table.column(name))
    return _replace(table, name, column), column


def as_references(table: pa.Table, name: str, keys: pa.Array) -> pa.Table:
    """``name`` as indices into ``keys`` (another table's key column, shared, not copied). A column
    holding a value that ``keys`` lacks is dictionary-encoded on its own instead: nothing is lost."""
    column = _array(table.column(name))
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)) or column.type != keys.type:
        return table
    indices = pc.index_in(column, value_set=keys)
    if indices.null_count != column.null_count:
        return _replace(table, name, column.dictionary_encode())
    return _replace(table, name, pa.DictionaryArray.from_arrays(indices.cast(pa.int32()), keys))

