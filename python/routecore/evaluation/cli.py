"""`routecore eval` and `routecore fit` (registered by routecore.cli)."""

from __future__ import annotations

import argparse


def add_eval_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    return None
