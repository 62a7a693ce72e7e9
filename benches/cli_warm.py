"""Wall time of a warm CLI call: ``routecore route QUERY`` on the default example, its embedded config
cached (issue 34 §5: goal <= 0.6 s).

    ROUTECORE_HOME=/tmp/rchome python benches/cli_warm.py [--rounds 7]

The first call embeds the example and caches its bundle (``$ROUTECORE_HOME/configs``); the next
``--rounds`` are timed, each a new process (interpreter start, imports, model load, bundle load,
one query). Prints the first call and the median and max of the warm ones, in seconds. The calls
may write bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped), as ``pip install`` does for a user.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def call() -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "routecore", "route", "le serveur de production est en panne"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    first = call()
    warm = [call() for _ in range(a.rounds)]
    print(
        f"first {first:.2f} s; warm median {statistics.median(warm):.2f} s, "
        f"max {max(warm):.2f} s ({a.rounds} calls)"
    )


if __name__ == "__main__":
    main()
