"""Progress of long builds (issue 13 §3: a 100k-exemplar config built with no output)."""

from __future__ import annotations

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.core.progress import Progress
from routecore.routers.router import Router
from stubs import StubEncoder, manual, unit

ROUTES = [RouteSpec(f"R{i}", tuple(f"r{i} {j}" for j in range(50))) for i in range(3)]
TOOLS = [ToolSpec("T", "t", anti_patterns=("not t",))]


def test_a_callback_sees_every_batch_up_to_the_total():
    seen: list[tuple[int, int]] = []
    Router(
        ROUTES,
        TOOLS,
        encoder=StubEncoder({"t": unit(0)}),
        policy=manual(),
        progress=lambda d, t: seen.append((d, t)),
    )
    total = 150 + 1 + 1
    assert seen[-1] == (total, total)
    assert all(b[0] > a[0] for a, b in zip(seen, seen[1:])) and {t for _, t in seen} == {total}


def test_true_writes_one_line_on_stderr_and_the_default_is_silent(capsys):
    Router(ROUTES, encoder=StubEncoder({}), policy=manual())
    assert capsys.readouterr() == ("", "")
    Router(ROUTES, encoder=StubEncoder({}), policy=manual(), progress=True)
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err.endswith("embedding exemplars: 150/150 [" + err.split("[")[-1])
        and err.endswith("]\n")
    )


def test_progress_is_throttled_but_always_ends_at_the_total(capsys):
    p = Progress(10_000, "x")
    for i in range(1, 10_001):
        p.update(i)
    err = capsys.readouterr().err
    assert err.count("\r") < 10 and "x: 10,000/10,000" in err


def test_no_carriage_returns_in_pipes_and_logs_a_bar_on_a_terminal(capsys, monkeypatch):
    import routecore.core.progress as P

    p = Progress(1000, "x")
    for i in range(1, 1001):
        p.update(i)
    err = capsys.readouterr().err
    assert "\r" not in err and err.splitlines()[-1].startswith("x: 1,000/1,000")
    monkeypatch.setattr(P, "_isatty", lambda: True)
    p = Progress(1000, "y")
    for i in range(1, 1001):
        p.update(i)
    err = capsys.readouterr().err
    assert err.startswith("\r") and err.endswith("]\n")
