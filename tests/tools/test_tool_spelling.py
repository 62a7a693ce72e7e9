"""A belt reads a mistyped query with typos of the tools' words repaired (ToolCatalog.read_query,
``policy.tools.tool_spelling``), as a route decision does; single and batch calls agree."""

from __future__ import annotations

from routecore import Router
from routecore.decide.policy import Policy
from routecore.examples import TOOLS

TYPED = "restrat the nginx servce"


def test_a_belt_repairs_the_tools_words_and_says_so(tools_router):
    belt, clean = tools_router.tools(TYPED), tools_router.tools("restart the nginx service")
    assert belt.names == clean.names and belt.names[1] == "restart_service"  # after the core tool
    (said,) = [a.message for a in belt.alerts if a.kind == "spelling"]
    assert "'restrat' as 'restart'" in said and "'servce' as 'service'" in said
    assert tools_router.tools_batch([TYPED, "x"])[0].names == belt.names
    assert not [a for a in clean.alerts if a.kind == "spelling"]


def test_tool_spelling_off_reads_the_query_as_written(encoder):
    r = Router.from_config(TOOLS, encoder=encoder, policy=Policy(tool_spelling=False))
    belt = r.tools(TYPED)
    assert not [a for a in belt.alerts if a.kind == "spelling"]
    assert r.tool_catalog.read_query(TYPED) == (TYPED, ())
