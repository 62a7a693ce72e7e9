"""Index files: round trip and rejection of damaged files."""

import numpy as np
import pytest

from routecore import VectorIndex
from routecore.errors import CorruptIndexError, StorageIOError


@pytest.fixture
def index():
    rng = np.random.default_rng(3)
    ix = VectorIndex(16, storage="int8")
    ix.add(
        np.arange(100) * 3,
        rng.standard_normal((100, 16)),
        labels=[f"l{i % 4}" for i in range(100)],
        domains=[f"d{i % 2}" for i in range(100)],
    )
    ix.remove([3, 6])
    return ix


def test_round_trip(tmp_path, index):
    p = tmp_path / "ix.rci"
    index.save(p)
    back = VectorIndex.load(p)
    assert len(back) == len(index) and back.storage == "int8" and back.dim == 16
    q = np.random.default_rng(4).standard_normal((5, 16)).astype(np.float32)
    a, b = index.search(q, 7), back.search(q, 7)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert back.vectors()[3] == index.vectors()[3]


def test_faiss_backend_saves_and_loads(tmp_path, index):
    ids, vecs, labels, domains = index.vectors()
    fx = VectorIndex(16, backend="faiss")
    fx.add(ids, vecs, labels, domains)
    fx.save(tmp_path / "f.rci")
    back = VectorIndex.load(tmp_path / "f.rci", backend="faiss")
    assert back.backend == "faiss"
    np.testing.assert_array_equal(back.search(vecs[:3], 2).ids, fx.search(vecs[:3], 2).ids)


@pytest.mark.parametrize("damage", ["truncate_header", "truncate_payload", "flip_byte", "bad_magic", "empty"])
def test_damaged_files_are_rejected(tmp_path, index, damage):
    p = tmp_path / "ix.rci"
    index.save(p)
    b = bytearray(p.read_bytes())
    if damage == "truncate_header":
        b = b[:20]
    elif damage == "truncate_payload":
        b = b[: len(b) - 100]
    elif damage == "flip_byte":
        b[len(b) // 2] ^= 0xFF
    elif damage == "bad_magic":
        b[0:4] = b"JUNK"
    else:
        b = bytearray()
    p.write_bytes(bytes(b))
    with pytest.raises(CorruptIndexError):
        VectorIndex.load(p)


def test_missing_file_is_io_error(tmp_path):
    with pytest.raises(StorageIOError):
        VectorIndex.load(tmp_path / "nope.rci")


def _saved_files_load(paths, n):
    for p in paths:
        back = VectorIndex.load(p)
        assert len(back) == n and back.dim == 16


def test_concurrent_saves_from_threads_all_succeed(tmp_path, index):
    """400 saves from 16 threads, half to one shared file, half to a file per thread."""
    from concurrent.futures import ThreadPoolExecutor

    def save(i):
        index.save(tmp_path / ("shared.rci" if i % 2 else f"own{i % 16}.rci"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(save, range(400)))  # re-raises the first failure
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["shared.rci"] + [f"own{i}.rci" for i in range(0, 16, 2)]), names  # no temp left
    _saved_files_load(tmp_path.iterdir(), len(index))


def test_save_does_not_write_through_planted_symlinks(tmp_path, index):
    """Links planted at the target and at every name a predictable temp file could take."""
    import os

    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    d = tmp_path / "d"
    d.mkdir()
    target = d / "ix.rci"
    pid = os.getpid()
    for name in [f"ix.tmp{pid}", f"ix.rci.tmp{pid}", "ix.tmp", "ix.rci.tmp", f".ix.rci.{pid}.tmp", "ix.rci~"]:
        (d / name).symlink_to(victim)
    target.symlink_to(victim)
    index.save(target)
    assert victim.read_bytes() == b"keep"
    assert not target.is_symlink()  # the link at the target is replaced, not written through
    _saved_files_load([target], len(index))
    index.save(target)  # and again, over the regular file
    assert victim.read_bytes() == b"keep"
    assert all((d / n).is_symlink() for n in os.listdir(d) if n != "ix.rci")
