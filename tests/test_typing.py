"""The typed API type-checks (issue 16 §2).

* ``python -m mypy`` with ``mypy.ini`` (strict) on the package and on
  ``tests/typing/check_encoder_like.py``, user code of the public API (a
  ``routecore.Encoder`` where an ``EncoderLike`` is expected, ``Router``,
  ``Decision``/``ToolBelt`` fields, ``route_batch``, ``aroute``);
* ``python -m mypy.stubtest routecore._native``: ``_native.pyi`` matches the
  compiled module (signatures, defaults, class attributes, exceptions).

Both run cold, with their cache in a temporary folder (nothing is written into
the repository): mypy takes 15 to 25 s, stubtest about 6 s (2 shared cores).
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "mypy.ini"


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    # mypy comes with the test extra (pip install -e '.[test]'); without it this fails, not skips.
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_mypy_strict(tmp_path: Path) -> None:
    r = _run(
        [
            "mypy",
            "--config-file",
            str(CONFIG),
            "--cache-dir",
            str(tmp_path / "cache"),
            "python/routecore",
            "tests/typing",
        ]
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubtest_native(tmp_path: Path) -> None:
    # stubtest takes no --cache-dir: the same settings with the cache in tmp_path.
    cfg = configparser.ConfigParser()
    cfg.read(CONFIG)
    cfg["mypy"]["cache_dir"] = str(tmp_path / "cache")
    ini = tmp_path / "mypy.ini"
    with ini.open("w") as f:
        cfg.write(f)
    r = _run(["mypy.stubtest", "--mypy-config-file", str(ini), "routecore._native"])
    assert r.returncode == 0, r.stdout + r.stderr
