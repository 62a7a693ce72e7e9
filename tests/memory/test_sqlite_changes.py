"""routecore.memory.sqlite_changes: writes counted per file and per thread, data_version polled at
most every interval (issue 36 §6)."""

from __future__ import annotations

import os
import threading

from routecore.memory.sqlite_changes import Changes, file_writes


def test_stores_on_one_file_share_a_count_and_each_thread_knows_its_last_write(tmp_path):
    p = tmp_path / "m.sqlite"
    p.touch()
    os.symlink(p, tmp_path / "link.sqlite")
    a, b = file_writes(str(p)), file_writes(str(tmp_path / "link.sqlite"))
    assert a is b and file_writes(None) is not file_writes(None)
    a.add()
    assert a.n == 1 and a.mine() == 1
    t = threading.Thread(target=b.add)
    t.start()
    t.join()
    assert a.n == 2 and a.mine() == 1  # another thread's write is not this thread's


def test_data_version_is_polled_at_most_every_interval():
    polls: list[int] = []

    def poll() -> int:  # data_version: 0, then 1, ...
        polls.append(len(polls))
        return polls[-1]

    changes = Changes(file_writes(None), poll)
    first = changes.version(60.0)
    assert changes.version(60.0) == first and len(polls) == 1
    changes.writes.add()
    assert changes.version(60.0) == (first[0], 1) and len(polls) == 1  # this process's write: at once
    assert changes.version() == (1, 1) and len(polls) == 2  # interval 0: polled now
