"""Load test of ``routecore serve`` (issue 18): latency percentiles and throughput by concurrency,
micro-batching on and off, against the in-process ``Router.route()``. Not run in CI.

    python benches/serve_load.py [--clients 1,8,32,128] [--scale 1.0] \\
        [--clinc150 | --config FILE] [--window-ms 1] [--max-batch 32] [--json OUT] \\
        [--modes on,off,static] [--fast-model NAME] [--queries FILE.jsonl]

For each mode (batching on, then off) a server is started in a subprocess
(``python -m routecore.serve.cli --config CONFIG``: the IT-ops example, ``--config`` or
``--clinc150``; a free port on
127.0.0.1) and driven by closed-loop clients: each sends ``POST /v1/route``,
waits for the answer, sends the next. Every query is new (a counter in the
text), so the encoder's query cache never answers and each request costs a
model run. Request counts are bounded (``--scale`` multiplies them); a warm-up
of ``2 x clients`` requests is not counted.

The clients speak HTTP/1.1 over keep-alive asyncio streams with pre-encoded
requests rather than through httpx: on a 2-core machine that shares its cores
with the server, httpx's own CPU time (~0.3 ms a request) would be taken from
the server and understate its throughput. ``--httpx`` uses httpx instead.

Mode ``static`` (issue 38 §4) is batching on with ``routecore serve --static`` (the static tier in
front of the transformer; ``--fast-model`` another encoder or table), and reports the share of
decisions the fast tier gave (``routecore_cascade_decisions_total``). ``--queries FILE`` sends the
``text`` fields of a JSONL file (or its lines), deduplicated and shuffled with seed 0, in the same
order to every server, instead of the IT-ops templates (whose numbered variants of 8 sentences are
decided much alike by a table).

Also reported: one client interleaving, in blocks of 25 calls, ``Router.route()``
in this process and both servers (the "sidecar adds <= 1 ms p50" goal: a server's
p50 minus the in-process p50, under the same noise), and each server's RSS when
ready and at the end of its run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = [
    "the production server {i} is down since this morning",
    "how do I configure the VPN client on laptop {i}",
    "hello, thanks for the help with request {i}",
    "database connections keep timing out on node {i}",
    "where is the runbook for the kafka cluster {i}",
    "le serveur {i} ne répond plus",
    "what can you do for ticket {i}",
    "comment configurer le client VPN sur le poste {i}",
]
#: Counted requests per concurrency level (x --scale).
REQUESTS = {1: 200, 8: 400, 32: 800, 128: 1000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


class Counter:
    def __init__(self, start: int = 0):
        self.n = start

    def next(self) -> int:
        self.n += 1
        return self.n


#: The query stream of ``--queries`` (empty: the templates).
QUERIES: list[str] = []


def body(i: int) -> bytes:
    q = QUERIES[i % len(QUERIES)] if QUERIES else TEMPLATES[i % len(TEMPLATES)].format(i=i)
    return json.dumps({"query": q}).encode()


def read_queries(path: str) -> list[str]:
    """The texts of ``path`` (JSONL ``text`` fields, else lines), deduplicated, shuffled with seed 0."""
    import random

    lines = [ln for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]
    texts = [json.loads(ln)["text"] if path.endswith(".jsonl") else ln for ln in lines]
    out = list(dict.fromkeys(texts))
    random.Random(0).shuffle(out)
    return out


async def raw_client(port: int, count: list[int], ids: Counter, lat: list[float], errors: list[str]) -> None:
    """Closed loop over one keep-alive connection until ``count[0]`` requests are taken."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while count[0] > 0:
            count[0] -= 1
            b = body(ids.next())
            req = (
                b"POST /v1/route HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b
            )
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            lat.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(str(status))
    finally:
        writer.close()


async def httpx_client(
    port: int, count: list[int], ids: Counter, lat: list[float], errors: list[str]
) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
        while count[0] > 0:
            count[0] -= 1
            t0 = time.perf_counter()
            r = await c.post(
                "/v1/route", content=body(ids.next()), headers={"content-type": "application/json"}
            )
            lat.append(time.perf_counter() - t0)
            if r.status_code != 200:
                errors.append(str(r.status_code))


async def level(port: int, clients: int, n: int, ids: Counter, use_httpx: bool) -> dict[str, Any]:
    client = httpx_client if use_httpx else raw_client
    warm: list[float] = []
    await asyncio.gather(*(client(port, [2], ids, warm, []) for _ in range(clients)))
    lat: list[float] = []
    errors: list[str] = []
    count = [n]
    t0 = time.perf_counter()
    await asyncio.gather(*(client(port, count, ids, lat, errors) for _ in range(clients)))
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "requests": len(lat),
        "errors": len(errors),
        "req_s": len(lat) / wall,
        "p50_ms": pct(lat, 50) * 1e3,
        "p95_ms": pct(lat, 95) * 1e3,
        "p99_ms": pct(lat, 99) * 1e3,
    }


def batch_sizes(port: int) -> dict[str, float]:
    """The server's route micro-batches so far: their count and summed sizes, and the decisions
    the fast tier (``static``) and the model (``transformer``) gave (from /metrics)."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    vals = {"sum": 0.0, "count": 0.0, "static": 0.0, "transformer": 0.0}
    for line in text.splitlines():
        for k in ("sum", "count"):
            if line.startswith(f'routecore_batch_size_{k}{{kind="route"}}'):
                vals[k] = float(line.split()[-1])
        if line.startswith("routecore_cascade_decisions_total{"):  # the fast tier's (a table's or not)
            vals["static" if 'served_by="fast"' in line else "transformer"] += float(line.split()[-1])
    return vals


def config_of(args: argparse.Namespace) -> Path:
    """The served config: ``--config``, ``--clinc150`` (150 routes x 100 exemplars, the CLINC150 train split
    from ../shared written to a temporary YAML, never into the repository), or the IT-ops example."""
    if args.config:
        return Path(args.config)
    if args.clinc150:
        import tempfile

        import yaml

        from routecore.evaluation import datasets as D
        from routecore.evaluation.runner import routes_from_split

        path = Path(tempfile.gettempdir()) / "routecore-bench-clinc150-routes.yaml"
        if not path.exists():
            routes = routes_from_split(D.clinc150("train"))
            path.write_text(
                yaml.safe_dump(
                    {"routes": [{"name": r.name, "utterances": list(r.utterances)} for r in routes]}
                ),
                encoding="utf-8",
            )
        return path
    from routecore.examples import IT_OPS_ROUTES

    return IT_OPS_ROUTES


def start_server(
    args: argparse.Namespace, batching: bool, static: bool = False
) -> tuple[subprocess.Popen[bytes], int]:
    """A ready server on a free port (its embedded config comes from the cache after the first)."""
    import urllib.error
    import urllib.request

    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "routecore.serve.cli",
        "--config",
        str(config_of(args)),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    cmd += (
        (["--batch-window-ms", str(args.window_ms)] if args.window_ms is not None else [])
        + (["--max-batch", str(args.max_batch)] if args.max_batch is not None else [])
        + ([] if batching else ["--no-batching"])
        + (
            ["--fast-model", args.fast_model]
            if static and args.fast_model
            else ["--static"]
            if static
            else []
        )
    )
    proc = subprocess.Popen(cmd, cwd=ROOT)
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
            return proc, port
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("the server did not get ready") from None
            time.sleep(0.2)


def run_server(args: argparse.Namespace, mode: str, ids: Counter) -> dict[str, Any]:
    batching, static = mode != "off", mode == "static"
    proc, port = start_server(args, batching, static)
    try:
        rss0 = rss_mb(proc.pid)
        rows = []
        for c in args.clients:
            before = batch_sizes(port)
            r = asyncio.run(level(port, c, max(c, int(REQUESTS.get(c, 8 * c) * args.scale)), ids, args.httpx))
            if batching:  # this level's batches (warm-up included)
                after = batch_sizes(port)
                n = after["count"] - before["count"]
                r.update(batches=n, mean_batch=(after["sum"] - before["sum"]) / n if n else 0.0)
            if static:  # this level's decisions by tier (warm-up included)
                st, tr = (after[k] - before[k] for k in ("static", "transformer"))
                r["static_share"] = st / (st + tr) if st + tr else 0.0
            r["rss_mb"] = rss_mb(
                proc.pid
            )  # after each level: a run of equal levels shows whether memory stays flat
            rows.append(r)
            print(
                json.dumps(
                    {
                        "mode": mode,
                        **{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()},
                    }
                ),
                flush=True,
            )
        return {
            "mode": mode,
            "batching": batching,
            "rss_start_mb": rss0,
            "rss_end_mb": rss_mb(proc.pid),
            "levels": rows,
        }
    finally:
        proc.terminate()
        proc.wait(30)


def one_client_ab(args: argparse.Namespace, n: int, ids: Counter) -> dict[str, Any]:
    """One client, in interleaved blocks of 25 calls: in-process ``route()``, the server with
    batching, the server without, so that the machine's noise falls on all three alike."""
    import http.client

    from routecore import Router

    router = Router.from_config(config_of(args))
    servers = [start_server(args, True), start_server(args, False)]
    conns = [http.client.HTTPConnection("127.0.0.1", port) for _, port in servers]
    lat: dict[str, list[float]] = {"in_process": [], "batching_on": [], "batching_off": []}
    # calls in a row to one target: ONNX Runtime's threads spin a little after a run and would
    # fight the next target's
    block = 25
    try:
        for _ in range(max(1, n // block)):
            for name, conn in [("in_process", None), ("batching_on", conns[0]), ("batching_off", conns[1])]:
                for i in range(block + 5):  # the first 5 of a block are not counted
                    b = body(ids.next())  # a new query each call: no cache hit anywhere
                    t0 = time.perf_counter()
                    if conn is None:
                        router.route(json.loads(b)["query"])
                    else:
                        conn.request("POST", "/v1/route", b, {"Content-Type": "application/json"})
                        resp = conn.getresponse()
                        resp.read()
                        assert resp.status == 200
                    if i >= 5:
                        lat[name].append(time.perf_counter() - t0)
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(30)
    out = {k: {"p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3} for k, v in lat.items()}
    for k in ("batching_on", "batching_off"):
        out[k]["p50_overhead_ms"] = out[k]["p50_ms"] - out["in_process"]["p50_ms"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", default="1,8,32,128", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the request counts")
    ap.add_argument("--window-ms", type=float, help="the server's --batch-window-ms (default: its default)")
    ap.add_argument("--max-batch", type=int, help="the server's --max-batch (default: its default)")
    ap.add_argument(
        "--modes", default="on,off", help="modes to run: on, off (batching), static (on, with --static)"
    )
    ap.add_argument("--fast-model", help="the fast tier of mode static (default: the model's own table)")
    ap.add_argument("--queries", help="JSONL (text fields) or text file of queries instead of the templates")
    ap.add_argument(
        "--httpx", action="store_true", help="clients through httpx instead of raw asyncio streams"
    )
    ap.add_argument(
        "--ab", type=int, default=300, help="calls of the interleaved one-client comparison (0: skip it)"
    )
    ap.add_argument("--config", help="the served config (default: the IT-ops example)")
    ap.add_argument(
        "--clinc150", action="store_true", help="serve 150 routes x 100 exemplars (CLINC150 train, ../shared)"
    )
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    os.environ.setdefault(
        "ROUTECORE_HOME", str(Path("/tmp") / "routecore-serve-bench")
    )  # the embedded-config cache
    ids = Counter(int(time.time()) % 1_000_000 * 1000)
    if args.queries:
        QUERIES[:] = read_queries(args.queries)
    out: dict[str, Any] = {
        "machine": f"{platform.node()} {os.cpu_count()} cpus {platform.processor()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": " ".join(sys.argv),
        "window_ms": args.window_ms,
        "max_batch": args.max_batch,
    }
    if args.ab:
        out["one_client"] = one_client_ab(args, int(args.ab * args.scale), ids)
        print(json.dumps({"one_client": out["one_client"]}), flush=True)
    # with --queries every server gets the same stream from its start (its own query cache is empty)
    out["runs"] = [run_server(args, m, Counter(0) if QUERIES else ids) for m in args.modes.split(",") if m]
    by = {
        r["batching"]: {lv["clients"]: lv for lv in r["levels"]} for r in out["runs"] if r["mode"] != "static"
    }
    static = {lv["clients"]: lv for r in out["runs"] if r["mode"] == "static" for lv in r["levels"]}
    if 32 in static and True in by and 32 in by[True]:
        on32 = by[True][32]
        out["static_goal"] = {
            "throughput_ratio_32": static[32]["req_s"] / on32["req_s"],
            "p95_ms_32": static[32]["p95_ms"],
            "static_share_32": static[32]["static_share"],
        }
        print(json.dumps({"static_goal": out["static_goal"]}), flush=True)
    if True in by and False in by and 32 in by[True] and 1 in by[True]:
        on32, off32, one = by[True][32], by[False][32], by[True][1]
        out["goal"] = {
            "throughput_ratio_32": on32["req_s"] / off32["req_s"],
            "p95_32_over_p95_1": on32["p95_ms"] / one["p95_ms"],
        }
        if "one_client" in out:
            out["goal"]["sidecar_p50_overhead_ms"] = out["one_client"]["batching_on"]["p50_overhead_ms"]
        print(json.dumps({"goal": out["goal"]}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
