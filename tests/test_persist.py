"""Index files: round trip and rejection of damaged files."""

import numpy as np
import pytest

from routecore import VectorIndex
from routecore.errors import CorruptIndexError, StorageIOError


@pytest.fixture
def index():
    rng = np.random.default_rng(3)
    ix = VectorIndex(16, storage="int8")
    ix.add(np.arange(100) * 3, rng.standard_normal((100, 16)), labels=[f"l{i % 4}" for i in range(100)], domains=[f"d{i % 2}" for i in range(100)])
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
