"""Readers' throughput while lessons are written (issue 36 §6: goal, readers keep >= 80 %).

    python benches/lesson_writer.py [--readers 15] [--seconds 10] [--prefill 3000] [--served]
        [--threads N] [--no-spinning] [--background-share S]

A router over the shipped example tool catalog with an SQLite lesson store in a temporary
folder; ``--readers`` threads call ``tools()`` on cached queries for ``--seconds``, first alone,
then beside one thread that records lessons back to back (each embeds a new query; with ``--served``
each is about a query just served, whose embedding the encoder's cache holds, as a correction of the
turn an agent just ran is). ``--prefill``
lessons (random unit embeddings, unrelated queries) are stored first: a store in use holds many.
``--threads`` / ``--no-spinning``: the encoder's ``Encoder.load(threads=..., spinning=False)``
(ONNX Runtime's threads busy-wait after a run by default, on cores the readers want).
``--background-share``: ``Encoder.load(background_share=...)``, the writer's sustained share of one core
(1 lifts the bound; the default is the library's).
Prints the readers' calls in each phase, their ratio, and the lessons written.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from routecore import Encoder, Router
from routecore.examples import TOOLS
from routecore.memory import ExperienceMemory
from routecore.memory.lesson_cache import store_key

QUERIES = ["device logs", "turn on the kitchen light", "what's on my calendar", "restart the server"]


def phase(router: Router, readers: int, seconds: float, write: bool, served: bool = False) -> tuple[int, int]:
    stop = threading.Event()
    calls = [0] * readers
    written = [0]

    def read(i: int) -> None:
        while not stop.is_set():
            router.tools(QUERIES[calls[i] % len(QUERIES)])
            calls[i] += 1

    def writer() -> None:
        names = router.tool_catalog.tools.names
        while not stop.is_set():
            q = QUERIES[written[0] % len(QUERIES)]
            router.record_lesson(
                q if served else f"{q} #{written[0]}", names[written[0] % len(names)], use=written[0] % 2 == 0
            )
            written[0] += 1

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    threads += [threading.Thread(target=writer)] if write else []
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(calls), written[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readers", type=int, default=15)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--prefill", type=int, default=3000)
    ap.add_argument("--served", action="store_true", help="lessons about queries just served (cached)")
    ap.add_argument("--threads", type=int, default=None, help="the encoder's intra-op threads")
    ap.add_argument("--no-spinning", action="store_true", help="Encoder.load(spinning=False)")
    ap.add_argument("--background-share", type=float, default=None, help="Encoder.load(background_share=)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        memory = ExperienceMemory(Path(tmp) / "lessons.sqlite")
        share = {} if a.background_share is None else {"background_share": a.background_share}
        encoder = Encoder.load(threads=a.threads, spinning=not a.no_spinning, **share)
        router = Router.from_config(TOOLS, memory=memory, encoder=encoder)
        rng = np.random.default_rng(0)
        names = router.tool_catalog.tools.names
        for i in range(a.prefill):
            v = rng.standard_normal(router.encoder.dim).astype(np.float32)
            memory.record(
                f"old query {i}",
                names[i % len(names)],
                use=True,
                embedding=v / np.linalg.norm(v),
                model_id=store_key(router.encoder),
            )
        for q in QUERIES:  # the embeddings cached: the readers measure the non-encoder path
            router.tools(q)
        alone, _ = phase(router, a.readers, a.seconds, write=False)
        beside, written = phase(router, a.readers, a.seconds, write=True, served=a.served)
    print(
        f"{platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {a.readers} readers, "
        f"{a.seconds:g} s, encoder threads {encoder.threads}, spinning {not a.no_spinning}, "
        f"background share {encoder.background.share:g}, {a.prefill} lessons before: {alone} calls alone, "
        f"{beside} beside a writer ({written} lessons{', on served queries' if a.served else ''}, "
        f"{written / a.seconds:.0f}/s): "
        f"{100 * beside / max(alone, 1):.0f} % kept (goal >= 80 %)"
    )


if __name__ == "__main__":
    main()
