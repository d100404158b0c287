"""Lookups by key over Arrow columns, without a Python object per row.

A dict from each run id to its row costs about 300 bytes per run (the key's str, the tuple, the
dict slot): 1.5 GB at five million runs, rebuilt on every refresh. These mappings keep the keys in
one sorted Arrow array and find a key by binary search (NumPy's over the array's bytes when every
key has one length, as uuids do): a few bytes per row and no Python loop over the rows to build.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(array.type):  # a compacted column (columns.py)
        array = array.dictionary_decode()
    return array.cast(pa.large_string()) if pa.types.is_string(array.type) else array


class _ScalarView(Sequence[str]):
    """An Arrow string array as a sequence of Python strings, read one at a time (for ``bisect``)."""

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __getitem__(self, index):  # type: ignore[override]
        return self.array[index].as_py()

    def __len__(self) -> int:
        return len(self.array)


class SortedKeys:
    """Distinct non-null string keys, sorted, each with a payload position."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray, positions: np.ndarray) -> None:
        array = _string_array(keys)
        valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        array, positions = array.filter(pa.array(valid)), positions[valid]
        order = pc.sort_indices(array).to_numpy()
        self.keys = array.take(pa.array(order))
        self.positions = positions[order]
        self._fixed = self._fixed_width(self.keys)

    @staticmethod
    def _fixed_width(keys: pa.Array) -> np.ndarray | None:
        """The keys as one NumPy bytes array when they all have one length (then searchsorted works)."""
        if len(keys) == 0:
            return None
        lengths = pc.binary_length(keys)
        width = pc.min(lengths).as_py()
        if width == 0 or width != pc.max(lengths).as_py():
            return None
        if pc.any(pc.match_substring(keys, "\x00")).as_py():  # NumPy's bytes drop trailing NULs
            return None
        offsets = np.frombuffer(keys.buffers()[1], dtype=np.int64, count=len(keys) + 1, offset=keys.offset * 8)
        data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        return data.view(f"S{width}")

    def find(self, key: str) -> int | None:
        """The index of ``key`` among the sorted keys, None when absent."""
        if self._fixed is not None:
            needle = key.encode()
            if len(needle) != self._fixed.dtype.itemsize:
                return None
            at = int(np.searchsorted(self._fixed, needle))
            return at if at < len(self._fixed) and self._fixed[at] == needle else None
        at = bisect_left(_ScalarView(self.keys), key)
        return at if at < len(self.keys) and self.keys[at].as_py() == key else None

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[str]:
        for chunk_start in range(0, len(self.keys), 65536):
            yield from self.keys.slice(chunk_start, 65536).to_pylist()


class RowIndex(Mapping[str, tuple[Any, int]]):
    """key → (group, row position) over a table's key column, ``group`` read from another column of
    the row (a run's job, a version's dataset): what ``Snapshot.run_index`` and ``version_index`` map."""

    def __init__(self, table: pa.Table, key: str, group: str) -> None:
        self._sorted = SortedKeys(table.column(key), np.arange(table.num_rows, dtype=np.int64))
        self._groups = table.column(group)

    def __getitem__(self, key: str) -> tuple[Any, int]:
        found = self._sorted.find(key) if isinstance(key, str) else None
        if found is None:
            raise KeyError(key)
        position = int(self._sorted.positions[found])
        return self._groups[position].as_py(), position

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._sorted.find(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._sorted)

    def __len__(self) -> int:
        return len(self._sorted)


class RangeIndex(Mapping[str, tuple[int, int]]):
    """key → (start, stop) of its rows in a table whose rows with one key are adjacent."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray) -> None:
        array = _string_array(keys)
        count = len(array)
        if count:
            changed = pc.fill_null(pc.not_equal(array.slice(1), array.slice(0, count - 1)), True)
            boundaries = np.flatnonzero(np.asarray(changed.to_numpy(zero_copy_only=False), dtype=bool)) + 1
            starts = np.concatenate(([0], boundaries)).astype(np.int64)
        else:
            starts = np.zeros(0, dtype=np.int64)
        self._starts = starts
        self._stops = np.append(starts[1:], count).astype(np.int64) if count else starts
        self._group_keys = array.take(pa.array(starts))
        self._sorted = SortedKeys(self._group_keys, np.arange(len(starts), dtype=np.int64))

    def __getitem__(self, key: str) -> tuple[int, int]:
        found = self._sorted.find(key) if isinstance(key, str) else None
        if found is None:
            raise KeyError(key)
        group = int(self._sorted.positions[found])
        return int(self._starts[group]), int(self._stops[group])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._sorted.find(key) is not None

    def __iter__(self) -> Iterator[str]:
        """In table order."""
        for key in self._group_keys.to_pylist():
            if key is not None:
                yield key

    def items(self):  # type: ignore[override]
        """In table order, without a search per key."""
        return [(key, (int(start), int(stop)))
                for key, start, stop in zip(self._group_keys.to_pylist(), self._starts, self._stops, strict=True)
                if key is not None]

    def values(self):  # type: ignore[override]
        return [value for _, value in self.items()]

    def __len__(self) -> int:
        return len(self._sorted)
