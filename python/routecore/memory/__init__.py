"""Experience memory: lessons in SQLite or PostgreSQL, and the lesson matrix ``tools()`` reads.

``from routecore.memory import ExperienceMemory`` (README.md) reads it from
:mod:`routecore.memory.memory`.
"""

from typing import TYPE_CHECKING, Any

# Declares the PostgreSQL URL schemes to ExperienceMemory (routecore.memory.memory imports no store
# subclass); psycopg itself is imported only when such a URL is opened.
from routecore.memory import memory_pg as memory_pg

if TYPE_CHECKING:
    from routecore.memory.memory import ExperienceMemory


def __getattr__(name: str) -> Any:
    if name != "ExperienceMemory":
        raise AttributeError(f"module 'routecore.memory' has no attribute {name!r}")
    from routecore.memory import memory

    return memory.ExperienceMemory


__all__ = ["ExperienceMemory"]
