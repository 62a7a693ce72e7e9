"""Tools listed live from running MCP servers, through the official ``mcp`` SDK (``routecore[mcp]``).

A server is given as:

- a command line (``"python server.py --flag"``, split like a shell would) or a list
  of arguments: the command is started as a subprocess and spoken to over stdio;
- an ``http://`` or ``https://`` URL: Streamable HTTP;
- a mapping ``{"name", "command", "args", "env", "cwd"}`` or ``{"name", "url"}``;
- an ``mcp.client.stdio.StdioServerParameters``.

Each server is a plugin: its tools get the server's name as their domain (the
name given in the mapping, else the name the server reports, else its position),
which drives domain affinity and discovery tools. Servers are listed concurrently.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from routecore.config.specs import ToolSpec
from routecore.errors import ConfigError, RoutecoreError, missing_extra


class MCPImportError(RoutecoreError):
    """An MCP server could not be started, reached or listed (names the server)."""


@dataclass(frozen=True)
class MCPServerTools:
    """The tools one MCP server listed (``tools``: their wire mappings, as sent)."""

    name: str
    tools: tuple[dict[str, Any], ...]
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


#: The most pages of ``tools/list`` read from one server (a server whose cursor never ends).
MAX_PAGES = 10_000


def _transport(server: Any) -> tuple[Any, str | None, str]:
    """(what ``mcp.Client`` connects to, the given name or None, a description for errors)."""
    from mcp.client.stdio import StdioServerParameters

    if isinstance(server, StdioServerParameters):
        return server, None, " ".join([server.command, *server.args])
    name = None
    if isinstance(server, Mapping):
        bad = set(server) - {"name", "command", "args", "env", "cwd", "url"}
        if bad or ("command" in server) == ("url" in server):
            raise ConfigError(
                "an MCP server mapping needs 'command' or 'url' (and optionally name, args, env, cwd); "
                f"got keys {sorted(server)}"
            )
        name = server.get("name")
        if "url" in server:
            return str(server["url"]), name, str(server["url"])
        cmd = server["command"]
        argv = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in cmd]
        argv += [str(a) for a in server.get("args") or ()]
        env = {str(k): str(v) for k, v in (server.get("env") or {}).items()} or None
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=server.get("cwd"))
        return params, name, " ".join(argv)
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        return server, None, server
    if isinstance(server, (str, list, tuple)):
        argv = shlex.split(server) if isinstance(server, str) else [str(a) for a in server]
        if not argv:
            raise ConfigError("an empty MCP server command")
        return StdioServerParameters(command=argv[0], args=argv[1:]), None, " ".join(argv)
    raise ConfigError(
        "an MCP server is a command line, a URL, a mapping or StdioServerParameters; "
        f"got {type(server).__name__}"
    )


async def _list_one(server: Any, position: int, timeout: float) -> MCPServerTools:
    try:
        from mcp import Client
    except ImportError as e:
        raise missing_extra("listing MCP servers needs the mcp SDK", "mcp", str(e)) from None
    target, name, shown = _transport(server)

    async def fetch() -> tuple[Any, list[dict[str, Any]]]:
        tools: list[dict[str, Any]] = []
        async with Client(target) as client:  # a stdio server's stderr (its logs) stays the parent's
            cursor = None
            for _ in range(MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            return client.server_info, tools

    try:
        info, tools = await asyncio.wait_for(fetch(), timeout)
    except asyncio.TimeoutError:
        raise MCPImportError(f"MCP server {shown!r} did not list its tools within {timeout:g} s") from None
    except RoutecoreError:
        raise
    except Exception as e:  # noqa: BLE001 - spawn errors, protocol errors, task groups
        raise MCPImportError(f"MCP server {shown!r} failed: {_root(e)}") from None
    label = name or (info.name if info is not None and info.name else f"mcp{position}")
    return MCPServerTools(
        label,
        tuple(tools),
        shown,
        {"server_info": info.model_dump(mode="json", exclude_none=True) if info else {}},
    )


def _root(e: BaseException) -> str:
    """The first leaf of an exception group, as ``Type: message``."""
    while getattr(e, "exceptions", None):  # an ExceptionGroup (anyio task groups)
        e = e.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(e).__name__}: {e}"


async def alist_mcp_tools(servers: Iterable[Any], *, timeout: float = 30.0) -> list[MCPServerTools]:
    """The tools of each server, listed concurrently (see the module doc for ``servers``).

    Raises:
        MCPImportError: a server could not be started or listed within ``timeout`` seconds.
        ConfigError: a server is written wrongly, or two servers have the same name.
        MissingExtraError: the ``mcp`` SDK is not installed.
    """
    servers = list(servers)
    if not servers:
        raise ConfigError("no MCP servers given")
    got = await asyncio.gather(*(_list_one(s, i, timeout) for i, s in enumerate(servers)))
    seen: dict[str, str] = {}
    for g in got:
        if g.name in seen:
            raise ConfigError(
                f"two MCP servers are named {g.name!r} ({seen[g.name]!r} and {g.source!r}); "
                "name them in a mapping"
            )
        seen[g.name] = g.source
    return got


def list_mcp_tools(servers: Iterable[Any], *, timeout: float = 30.0) -> list[MCPServerTools]:
    """:func:`alist_mcp_tools` from synchronous code (not from inside a running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(alist_mcp_tools(servers, timeout=timeout))
    raise ConfigError(
        "list_mcp_tools was called inside a running event loop: await alist_mcp_tools(...) instead"
    )


def mcp_tool_specs(
    listed: Sequence[MCPServerTools], *, overlay: Any = None, missing_ok: bool = False
) -> list[ToolSpec]:
    """ToolSpecs of the listed tools: each server's name is its tools' domain (plugin); ``overlay`` as in
    :func:`routecore.config.tool_formats.tool_specs`, applied across all servers."""
    from routecore.config.tool_formats import read_overlay, tool_specs

    over = read_overlay(overlay) if overlay is not None else {}
    specs: list[ToolSpec] = []
    for s in listed:
        names = {t.get("name") for t in s.tools}
        mine = {n: f for n, f in over.items() if n in names}
        specs += tool_specs(s.tools, overlay=mine, domain=s.name, where=f"MCP server {s.name!r}")
    names = {t.name for t in specs}
    unknown = set(over) - names
    if unknown and not missing_ok:
        raise ConfigError(f"overlay names tools that no MCP server lists: {sorted(unknown)[:10]}")
    from routecore.config.specs import unique

    unique([t.name for t in specs], "tool", "MCP servers")
    return specs
