"""Issue 17 figures: batch against single calls, async concurrency and event-loop
lag, the cost of a live update at 150 x 100, and MCP import of a 500-tool server.

    cd benches && python integration.py [--json OUT]

Uses the bundled default encoder (multilingual-e5-small int8) with its query
cache off, CLINC150 (../shared) for the queries and the 150 x 100 routes, and
tests/data/mcp_server.py for the MCP server. Timings are noisy on shared
machines: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def batch_vs_single(router, queries, tool_router, reps=3):
    """Queries per second: 64 single calls against one batch of 64 (best of ``reps``)."""
    out = {}
    for name, single, batch in (
        ("route", router.route, router.route_batch),
        ("tools", tool_router.tools, tool_router.tools_batch),
    ):
        s_best = b_best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            singles = [single(q) for q in queries]
            s_best = min(s_best, time.perf_counter() - t)
            t = time.perf_counter()
            batched = batch(queries)
            b_best = min(b_best, time.perf_counter() - t)
        same = (
            all((a.action, a.route) == (b.action, b.route) for a, b in zip(singles, batched))
            if name == "route"
            else all(a.names == b.names for a, b in zip(singles, batched))
        )
        out[name] = {
            "single_qps": len(queries) / s_best,
            "batch_qps": len(queries) / b_best,
            "ratio": s_best / b_best,
            "same_decisions": same,
        }
    return out


def async_concurrency(router, queries, n=1000):
    async def main():
        lags = []
        stop = asyncio.Event()

        async def ticker():
            while not stop.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.005)
                lags.append((time.perf_counter() - t - 0.005) * 1e3)

        tick = asyncio.create_task(ticker())
        t = time.perf_counter()
        done = await asyncio.gather(*(router.aroute(queries[i % len(queries)]) for i in range(n)))
        wall = time.perf_counter() - t
        stop.set()
        await tick
        return done, wall, lags

    done, wall, lags = asyncio.run(main())
    return {
        "calls": n,
        "completed": len(done),
        "wall_s": wall,
        "qps": n / wall,
        "lag_ms_p50": pct(lags, 0.5),
        "lag_ms_p99": pct(lags, 0.99),
        "lag_ms_max": max(lags),
        "ticks": len(lags),
    }


def live_update(enc, train):
    from routecore import Router
    from routecore.config.specs import RouteSpec
    from routecore.evaluation.runner import routes_from_split

    routes = routes_from_split(train)
    t = time.perf_counter()
    r = Router(routes, encoder=enc)
    build_s = time.perf_counter() - t
    rows = len(r.route_table.table.texts)
    new = RouteSpec("new_route", tuple(f"{u} (variant)" for u in routes[0].utterances[:100]))
    add = r.add_routes([new])
    changed = RouteSpec(
        routes[1].name, routes[1].utterances[:-1] + ("one changed exemplar",), routes[1].description
    )
    upd = r.update_route(changed)
    rem = r.remove_routes(["new_route"])
    keep = r.update_route(
        RouteSpec(routes[1].name, routes[1].utterances, routes[1].description), recalibrate=False
    )
    add_keep = r.add_routes([new], recalibrate=False)
    return {
        "routes": len(routes),
        "rows": rows,
        "fresh_build_s": build_s,
        "add_100": add.__dict__,
        "change_1": upd.__dict__,
        "remove_1": rem.__dict__,
        "change_1_keep_calibration": keep.__dict__,
        "add_100_keep_calibration": add_keep.__dict__,
    }


def mcp_import(enc, n=500):
    from routecore import Router
    from routecore.integrations.mcp_tools import list_mcp_tools, mcp_tool_specs

    cmd = [sys.executable, str(ROOT / "tests" / "data" / "mcp_server.py"), "many", str(n)]
    lists, specs, routers = [], [], []
    for _ in range(3):
        t = time.perf_counter()
        listed = list_mcp_tools([cmd])
        t1 = time.perf_counter()
        tools = mcp_tool_specs(listed)
        t2 = time.perf_counter()
        Router(tools=tools, encoder=enc)
        t3 = time.perf_counter()
        lists.append(t1 - t)
        specs.append(t2 - t1)
        routers.append(t3 - t2)
    return {
        "tools": len(tools),
        "list_s_best": min(lists),
        "convert_s_best": min(specs),
        "router_s_best": min(routers),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benches"))
    from routecore import Encoder, Router
    from routecore.cli import DEFAULT_ROUTES, DEFAULT_TOOLS
    from routecore.evaluation import datasets as D

    enc = Encoder.load(cache_size=0)
    test = D.clinc150("test")
    queries = [s.text for s in test.samples[:64]]
    router = Router.from_config(DEFAULT_ROUTES, encoder=enc)
    tool_router = Router.from_config(DEFAULT_TOOLS, encoder=enc)
    router.route("warm up")
    res = {
        "machine": f"{platform.node()} {os.cpu_count()} cpus",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "encoder_threads": enc.threads,
    }
    res["batch_vs_single"] = batch_vs_single(router, queries, tool_router)
    print(json.dumps(res["batch_vs_single"], indent=1), flush=True)
    res["async"] = async_concurrency(router, [s.text for s in test.samples[:1000]])
    print(json.dumps(res["async"], indent=1), flush=True)
    res["live_update"] = live_update(enc, D.clinc150("train"))
    print(json.dumps(res["live_update"], indent=1), flush=True)
    res["mcp_import"] = mcp_import(enc)
    print(json.dumps(res["mcp_import"], indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
