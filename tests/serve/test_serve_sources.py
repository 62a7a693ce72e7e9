"""``routecore.serve.sources`` (issue 36 §5): hot reload loads a file replaced by a rename at once,
and a file written in place only once it has stopped changing."""

from __future__ import annotations

import time

import httpx
import yaml

from routecore.examples import IT_OPS_ROUTES
from routecore.serve.sources import ChangeWatch, RouterSource
from serve_process import ServeProcess


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_file_written_in_place_is_loaded_once_it_has_settled(tmp_path):
    cfg = tmp_path / "routes.yaml"
    cfg.write_text(IT_OPS_ROUTES.read_text(encoding="utf-8"), encoding="utf-8")
    src = RouterSource(config=cfg)
    clock = Clock()
    watch = ChangeWatch(3.0, clock)
    loaded = src.stamp()
    assert not watch.due(loaded, src.stamp())
    with cfg.open("a", encoding="utf-8") as f:  # in place: the same file (inode), changed
        f.write("# one\n")
    assert not watch.due(loaded, src.stamp())
    clock.now += 2.0
    with cfg.open("a", encoding="utf-8") as f:  # changed again before it settled: the wait starts over
        f.write("# two more\n")
    assert not watch.due(loaded, src.stamp())
    clock.now += 2.5
    assert not watch.due(loaded, src.stamp())
    clock.now += 0.5
    assert watch.due(loaded, src.stamp())  # 3 s unchanged


def test_a_file_replaced_by_a_rename_is_loaded_at_once(tmp_path):
    cfg = tmp_path / "routes.yaml"
    cfg.write_text(IT_OPS_ROUTES.read_text(encoding="utf-8"), encoding="utf-8")
    src = RouterSource(config=cfg)
    watch = ChangeWatch(1000.0, Clock())
    loaded = src.stamp()
    new = tmp_path / ".routes.yaml.tmp"
    new.write_text(cfg.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    new.replace(cfg)
    assert watch.due(loaded, src.stamp())
    cfg.unlink()  # a file that went away is not "replaced": it waits as an in-place change does
    assert not watch.due(loaded, src.stamp())


def routes_served(url: str) -> set[str]:
    r = httpx.post(f"{url}/v1/route", json={"query": "the production server is down"}, timeout=30)
    return set(r.json()["probabilities"])


def test_serve_never_loads_a_config_caught_half_written(tmp_path):
    """A real ``routecore serve`` polling every 0.1 s: a config written in place in two steps is
    loaded once, whole (the probe of issue 36 served the first half for 3 s)."""
    full = yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))
    full["routes"].append(
        {
            "name": "BILLING",
            "description": "Invoices, refunds and payment plans",
            "utterances": ["send me my last invoice", "I want a refund for my order"],
        }
    )
    full = {**{k: v for k, v in full.items() if k != "routes"}, "routes": full["routes"]}  # the routes last
    text = yaml.safe_dump(full, allow_unicode=True, sort_keys=False)
    cut = text.index("- name: BILLING")  # the first half: a valid config without the last route
    assert [r["name"] for r in yaml.safe_load(text[:cut])["routes"]] == ["INCIDENT", "RAG", "GENERAL"]
    cfg = tmp_path / "routes.yaml"
    cfg.write_text(IT_OPS_ROUTES.read_text(encoding="utf-8"), encoding="utf-8")
    args = ["--config", str(cfg), "--no-cache", "--reload-poll", "0.1", "--reload-settle", "3"]
    with ServeProcess(*args) as srv:
        before = routes_served(srv.url)
        with cfg.open("w", encoding="utf-8") as f:
            f.write(text[:cut])
            f.flush()
            time.sleep(0.5)  # five polls see the first half
            f.write(text[cut:])
        assert srv.wait_ready(generation=2)["generation"] == 2
        time.sleep(1.0)  # ten more polls
        assert httpx.get(f"{srv.url}/readyz").json()["generation"] == 2
        assert routes_served(srv.url) == before | {"BILLING"}
    assert "generation 3" not in srv.log and "(file changed, generation 2)" in srv.log, srv.log
