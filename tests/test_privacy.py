"""No telemetry, no surprise files, no network (issue 13 §1).

The encoder runs for 10 s in a subprocess with a fresh HOME and without CI in its
environment (ONNX Runtime skips its telemetry when CI is set, so a test under CI=true
would see nothing either way); no file may appear under that HOME, and strace must see
no connect/sendto/sendmsg system call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

SCRIPT = """
import time
from routecore import Encoder, Router
enc = Encoder.load()
r = Router.from_config(sys_argv_config, encoder=enc)
end = time.time() + 10
i = 0
while time.time() < end:
    r.route(f"the VPN is down {i}")
    i += 1
"""


def test_ten_seconds_of_routing_write_nothing_and_touch_no_network(tmp_path):
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            pytest.fail("strace is missing (.ci/run installs it)")
        pytest.skip("strace is not installed")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CI", "ORT_DISABLE_TELEMETRY", "ROUTECORE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
    }
    env["HOME"] = str(home)
    from conftest import ROOT

    code = SCRIPT.replace("sys_argv_config", repr(str(ROOT / "examples" / "it_ops_routes.yaml")))
    log = tmp_path / "strace.log"
    p = subprocess.run(
        [
            strace,
            "-f",
            "-qq",
            "-e",
            "trace=connect,sendto,sendmsg",
            "-o",
            str(log),
            sys.executable,
            "-c",
            code,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    written = [str(f.relative_to(home)) for f in home.rglob("*")]
    assert written == [], f"files appeared under HOME: {written}"
    calls = [line for line in log.read_text().splitlines() if line.strip()]
    assert calls == [], f"network system calls: {calls[:5]}"
