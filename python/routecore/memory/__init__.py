"""Experience memory: lessons in SQLite or PostgreSQL, and the lesson matrix ``tools()`` reads.

``from routecore.memory import ExperienceMemory`` (README.md) reads it from
:mod:`routecore.memory.memory`, loaded on first use (PEP 562).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from routecore.memory.memory import ExperienceMemory


def __getattr__(name: str) -> Any:
    if name != "ExperienceMemory":
        raise AttributeError(f"module 'routecore.memory' has no attribute {name!r}")
    from routecore.memory import memory

    return memory.ExperienceMemory


__all__ = ["ExperienceMemory"]
