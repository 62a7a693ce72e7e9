"""8 searching threads while one thread adds and removes entries."""

import threading

import numpy as np

from routecore import VectorIndex


def test_readers_never_see_half_written_entries():
    d = 64
    rng = np.random.default_rng(5)
    base = rng.standard_normal((2000, d)).astype(np.float32)
    ix = VectorIndex(d, backend="flat")
    ix.add(np.arange(2000), base, labels=["base"] * 2000)
    # Each writer entry is a scaled copy of query 0, so if present it must be the
    # top hit with label "hot" and score 1: a torn entry would break one of these.
    q = base[0] / np.linalg.norm(base[0])
    stop = threading.Event()
    errors: list[str] = []

    def writer():
        i = 0
        while not stop.is_set() and i < 400:
            ids = np.array([10_000 + i])
            ix.add(ids, (q * (1 + i % 5))[None, :], labels=["hot"])
            ix.remove(ids)
            i += 1

    def reader():
        for _ in range(300):
            r = ix.search(q, 3)
            if r.ids[0] >= 10_000:
                if r.labels[0] != "hot" or abs(r.scores[0] - 1) > 1e-5:
                    errors.append(f"torn entry {r}")
            elif r.ids[0] != 0:
                errors.append(f"wrong top hit {r.ids[0]}")
            if not (np.diff(r.scores) <= 1e-7).all():
                errors.append("unsorted scores")

    threads = [threading.Thread(target=reader) for _ in range(8)]
    w = threading.Thread(target=writer)
    w.start()
    [t.start() for t in threads]
    [t.join() for t in threads]
    stop.set()
    w.join()
    assert not errors, errors[:3]
    assert len(ix) == 2000
