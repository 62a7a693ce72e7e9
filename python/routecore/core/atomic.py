"""Files written whole or not at all: a temporary file beside the target, then a rename."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def temp_beside(path: Path, prefix: str, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file in ``path``'s folder, open for writing: ``(fd, its path)``. It is created with mode
    0o666 less the umask, as ``open()`` creates files (``tempfile.mkstemp`` makes them 0600, so a bundle
    saved by one account could not be read by another that reads its tables)."""
    for _ in range(100):
        tmp = path.parent / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")
