"""Bundles under faults (issue 13 §3): a save killed at any moment, and saves that race,
leave a bundle that loads and routes as one whole generation, never a mix of two."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent


def _encoder() -> StubEncoder:
    return StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2), "q": mix(a0=0.9)})


def _router(swapped: bool) -> Router:
    # "q" is closest to exemplar "a": the route that owns "a" tells the generation apart.
    names = ("B", "A") if swapped else ("A", "B")
    return Router(
        [RouteSpec(names[0], ("a",)), RouteSpec(names[1], ("b",))],
        [ToolSpec("T", "t")],
        encoder=_encoder(),
        policy=manual(),
    )


def _check(path: Path) -> None:
    """The bundle loads, and its tables are those of the generation whose specs it loaded."""
    r = Router.load(path, encoder=_encoder())
    owner_of_a = next(s.name for s in r.route_specs if "a" in s.utterances)
    assert r.route("q").route == owner_of_a


CHILD = textwrap.dedent("""
    import sys
    sys.path[:0] = [{tests!r}, {here!r}]
    from test_bundle_atomicity import _router
    routers = [_router(False), _router(True)]
    print("ready", flush=True)
    i = 0
    while True:
        routers[i % 2].save({path!r})
        i += 1
""")


def test_a_save_killed_at_any_moment_leaves_one_whole_generation(tmp_path):
    path = tmp_path / "b"
    _router(False).save(path)
    rng = random.Random(7)
    for _ in range(12):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(tests=str(TESTS), here=str(HERE), path=str(path))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        _check(path)
    # Files of killed saves are left over, but the next complete save removes them.
    _router(True).save(path)
    (path / ".routecore-0123456789abcdef.tmp").write_bytes(
        b"half an index"
    )  # as a killed index save leaves it
    _router(True).save(path)
    assert (
        len(list(path.glob("*.rci"))) == 3
        and not list(path.glob(".bundle.*"))
        and not list(path.glob(".routecore-*.tmp"))
    )
    _check(path)


def test_racing_saves_to_one_bundle_all_succeed(tmp_path):
    path = tmp_path / "b"
    routers = [_router(False), _router(True)]
    routers[0].save(path)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(15):
                routers[(k + i) % 2].save(path)
                _check(path)
        except BaseException as e:  # noqa: BLE001 - collected for the assert below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _check(path)
    assert len(list(path.glob("*.rci"))) == 3
