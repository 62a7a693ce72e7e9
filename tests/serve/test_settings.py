"""routecore.serve.settings: the typed settings ``routecore serve`` builds its app from, and their JSON
form for the worker processes of ``--workers N``."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from routecore.cli import build_parser
from routecore.errors import ConfigError
from routecore.examples import IT_OPS_ROUTES
from routecore.serve.settings import ServeSettings
from serve_process import ServeProcess


def settings(*argv: str) -> ServeSettings:
    return ServeSettings.from_args(build_parser().parse_args(["serve", *argv]))


def test_the_options_defaults_are_the_settings_defaults():
    # no --config and no --bundle: the IT-ops example, as `routecore route` serves it
    assert settings() == ServeSettings(config=str(IT_OPS_ROUTES))
    assert settings("--bundle", "b").config is None


def test_options_land_in_their_fields():
    s = settings(
        "--no-cache", "--no-batching", "--max-batch", "8", "--threads", "3", "--workers", "2",
        "--reload-poll", "0", "--fast-model", "all-minilm-l6-v2", "--log-level", "debug",
    )  # fmt: skip
    assert (s.cache, s.batching, s.max_batch, s.threads, s.workers) == (False, False, 8, 3, 2)
    assert (s.reload_poll_s, s.fast_model, s.log_level) == (0.0, "all-minilm-l6-v2", "debug")


def test_the_workers_read_the_settings_back():
    s = settings("--lessons", "/tmp/l.db", "--batch-window-ms", "1.5", "--static")
    assert ServeSettings.from_json(s.to_json()) == s
    with pytest.raises(ConfigError, match="not JSON"):
        ServeSettings.from_json("{")
    with pytest.raises(ConfigError, match="expected an object"):
        ServeSettings.from_json('{"max_batchh": 3}')
    with pytest.raises(ConfigError, match="expected an object"):
        ServeSettings.from_json("[]")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.workers = 3  # type: ignore[misc]


def test_worker_processes_serve_with_the_settings_given():
    """Two workers (each builds its app from the settings in the environment): every answer keeps
    the command line's limit on a query's characters."""
    with ServeProcess("--workers", "2", "--max-query-chars", "40") as srv:
        for _ in range(6):
            ok = httpx.post(f"{srv.url}/v1/route", json={"query": "the VPN is down"}, timeout=60)
            long = httpx.post(f"{srv.url}/v1/route", json={"query": "x" * 41}, timeout=60)
            assert (
                ok.status_code == 200
                and long.status_code == 422
                and "limit is 40" in long.json()["error"]["message"]
            )
