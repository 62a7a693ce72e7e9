"""What a model of the registry is (:class:`ModelSource`) and the checks on its names: the pieces
:mod:`routecore.hub.models` (the registry) shares with the pull (:mod:`routecore.hub.models_pull`,
:mod:`routecore.hub.hub_http`, :mod:`routecore.hub.hf_cache`), so that none of them imports the registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Mapping

from routecore.errors import ModelError

#: The hub endpoint's variable (before ``HF_ENDPOINT``).
HUB_ENV = "ROUTECORE_HUB_ENDPOINT"


@dataclass(frozen=True)
class ModelSource:
    """Where a named model comes from and the config written next to it.

    ``files`` are paths inside ``subdir`` of the repository, or from the
    repository's root when they start with ``/``; each lands in the model
    folder under its base name. ``revision`` is a branch, tag or (best) a commit
    SHA. ``sha256`` pins files (keys as in ``files``) to their SHA-256: a pull
    refuses a file whose listing or content disagrees with its pin.
    """

    repo: str
    subdir: str
    files: tuple[str, ...]
    config: dict[str, Any] = field(default_factory=dict)
    revision: str = "main"
    sha256: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [PurePosixPath(f).name for f in self.files]
        bad = [f for f in self.files if not safe_rel_path(self.repo_path(f))]
        if not self.files or bad or len(set(names)) != len(names) or "config.json" in names:
            raise ModelError(
                f"{self.repo}: bad file list {list(self.files)} "
                "(relative paths without '..', distinct base names, no config.json)"
            )
        for f, digest in self.sha256.items():
            if f not in self.files or not SHA256.fullmatch(str(digest)):
                raise ModelError(
                    f"{self.repo}: bad pin {f!r}: {digest!r} "
                    "(a file of the model and 64 lowercase hex digits)"
                )

    def repo_path(self, file: str) -> str:
        """``file``'s path from the repository root."""
        return file[1:] if file.startswith("/") else f"{self.subdir}/{file}".lstrip("/")


SHA256 = re.compile(r"[0-9a-f]{64}")


def safe_rel_path(path: str) -> bool:
    """True if ``path`` is a plain relative POSIX path (no ``..``, ``.``, empty or absolute parts)."""
    parts = path.split("/")
    return (
        bool(path) and "\\" not in path and "\0" not in path and all(p not in ("", ".", "..") for p in parts)
    )
