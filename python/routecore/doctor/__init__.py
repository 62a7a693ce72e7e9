"""``routecore doctor``: what is wrong with a route config, and a cleaned copy.

``from routecore.doctor import diagnose, apply_edits, write_config`` (docs/doctor.md) reads them from
:mod:`routecore.doctor.doctor`, loaded on first use (PEP 562): the CLI registers the command through
:mod:`routecore.doctor.doctor_cli` without loading the diagnosis.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from routecore.doctor.doctor import apply_edits, diagnose, edited_text, write_config

_LAZY = {"apply_edits", "diagnose", "edited_text", "write_config"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'routecore.doctor' has no attribute {name!r}")
    from routecore.doctor import doctor

    return getattr(doctor, name)


__all__ = ["apply_edits", "diagnose", "edited_text", "write_config"]
