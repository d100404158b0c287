"""The landing writer alone (no HTTP, no Spark): group commit, rotation by size and age, crash recovery."""

from __future__ import annotations

import asyncio
from pathlib import Path

from python_jobs.landing import (
    OPEN_SUFFIX,
    GroupCommitWriter,
    LandingLayout,
    complete_prefix,
    seal_leftovers,
)


def lines_of(paths: list[Path]) -> list[bytes]:
    return [line for path in paths for line in path.read_bytes().splitlines()]


def test_concurrent_appends_rotate_by_size_and_age_and_close_seals(tmp_path):
    layout = LandingLayout(tmp_path).ensure()
    sealed: list[tuple[Path, int]] = []

    async def scenario() -> None:
        writer = GroupCommitWriter(layout.open_dir, layout.sealed_dir, rotate_bytes=900, rotate_seconds=0.4,
                                   on_seal=lambda path, count: sealed.append((path, count)))
        await writer.start()
        for group in range(4):  # each group is one batch (or two) of about 1,100 bytes
            await asyncio.gather(*[writer.append(b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * 80))
                                   for n in range(group * 10, group * 10 + 10)])
        by_size = len(sealed)
        await writer.append(b'{"n":40}\n')
        await asyncio.sleep(1.5)  # the age timer seals the file that holds the last line
        by_age = len(sealed)
        await writer.append(b'{"n":41}\n')
        await writer.close()
        assert by_size >= 3 and by_age > by_size and len(sealed) == by_age + 1

    asyncio.run(scenario())
    files = layout.sealed_files()
    assert [path for path, _ in sealed] == files and list(layout.open_dir.iterdir()) == []
    assert sum(count for _, count in sealed) == 42
    numbers = sorted(int(line.split(b",")[0].split(b":")[1].rstrip(b"}")) for line in lines_of(files))
    assert numbers == list(range(42))
    assert all(b"\0" not in path.read_bytes() for path in files)  # preallocated zeros are cut at sealing


def test_a_crashed_writers_open_file_is_cut_after_its_last_complete_line(tmp_path):
    layout = LandingLayout(tmp_path).ensure()
    torn = layout.open_dir / f"events-1{OPEN_SUFFIX}"
    torn.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3' + bytes(64))  # a torn write, then the preallocated zeros
    gap = layout.open_dir / f"events-2{OPEN_SUFFIX}"
    gap.write_bytes(b'{"b":1}\n' + bytes(16) + b'{"b":2}\n' + bytes(8))  # pages written out of order
    empty = layout.open_dir / f"events-3{OPEN_SUFFIX}"
    empty.write_bytes(bytes(32))
    assert complete_prefix(torn.read_bytes()) == len(b'{"a":1}\n{"a":2}\n')

    sealed = seal_leftovers(layout.open_dir, layout.sealed_dir)
    assert [path.name for path in sealed] == ["events-1.ndjson", "events-2.ndjson"]
    assert sealed[0].read_bytes() == b'{"a":1}\n{"a":2}\n' and sealed[1].read_bytes() == b'{"b":1}\n'
    assert list(layout.open_dir.iterdir()) == []
