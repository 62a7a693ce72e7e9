"""routecore.core.forks: a fork from another thread waits for background BLAS work to end."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from routecore.core.forks import unforked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")


def test_a_fork_waits_for_the_block_to_end():
    inside, ended = threading.Event(), []

    def work() -> None:
        with unforked():
            inside.set()
            time.sleep(0.3)
            ended.append(time.monotonic())

    t = threading.Thread(target=work)
    t.start()
    inside.wait()
    pid = os.fork()
    if pid == 0:  # the child: nothing to do
        os._exit(0)
    forked = time.monotonic()
    os.waitpid(pid, 0)
    t.join()
    assert ended and forked >= ended[0]  # the fork came after the block, not in the middle of it
    with unforked():  # and the parent's lock is free again
        pass


def test_gemm_on_a_thread_beside_forks_does_not_hang():
    """The hang unforked() prevents: numpy's threaded OpenBLAS gemm on one thread, forks (a
    subprocess with preexec_fn) on another; without the guard this hung within seconds."""
    code = """
import threading, time, subprocess, numpy as np
from routecore.core.forks import unforked
stop = time.time() + 3
def work():
    q, v = np.ones((256, 384), np.float32), np.ones((3000, 384), np.float32)
    while time.time() < stop:
        with unforked():
            q @ v.T
t = threading.Thread(target=work); t.start()
while time.time() < stop:
    subprocess.run(["true"], preexec_fn=lambda: None)
t.join()
"""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, env=env)
