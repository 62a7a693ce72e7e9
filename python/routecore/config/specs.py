"""Route and tool specifications: their types, names and checks, and parsing a config document into
them (reading the YAML or JSON file is :mod:`routecore.config.config_files`)."""

from __future__ import annotations

import os
import threading
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from routecore.config.config_files import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from routecore.config.config_files import YAML_MAX_DEPTH as YAML_MAX_DEPTH
from routecore.config.config_files import YAML_MAX_NODES as YAML_MAX_NODES
from routecore.config.config_files import load_yaml as load_yaml
from routecore.config.config_files import read_config_file as read_config_file
from routecore.config.config_files import read_text as read_text
from routecore.config.tool_mappings import normalize_config_tools, read_overlay, tool_dict
from routecore.errors import ConfigError, UnknownKeyError


@dataclass(frozen=True)
class RouteSpec:
    """One route. ``utterances`` are its exemplars; ``description`` counts as one too.

    ``thresholds`` overrides policy values for this route: any of
    :data:`ROUTE_THRESHOLD_KEYS`. ``Policy.per_route`` (set in code, or by ``routecore
    fit``) takes precedence over them. ``fallback_on_error`` names the route to try
    when this one's handler fails (INCIDENT → RAG → GENERAL).
    """

    name: str
    utterances: tuple[str, ...] = ()
    description: str = ""
    domain: str = ""
    thresholds: RouteThresholds = field(default_factory=lambda: RouteThresholds())
    fallback_on_error: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: Entity types (routecore.core.entities) that lift this route when the query holds one / without
    #: which it is left out.
    prefers_entities: tuple[str, ...] = ()
    requires_entities: tuple[str, ...] = ()
    #: How a clarification question names this route ("a refund"); unset, its description, else its name.
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.thresholds, RouteThresholds):  # a mapping, as configs and bundles give it
            object.__setattr__(
                self, "thresholds", RouteThresholds.of(self.thresholds, f"route {self.name!r}")
            )
        if not _TRUSTED.on:
            _check_spec(self, "route")

    @property
    def shown(self) -> str:
        """The words a clarification question uses for this route."""
        return self.label or self.description or self.name

    def exemplars(self) -> list[str]:
        """The texts the route is scored by: its utterances, then its description when it has one."""
        ex = list(self.utterances)
        if self.description:
            ex.append(self.description)
        return ex


@dataclass(frozen=True)
class ToolSpec:
    """One tool. ``description`` and ``success_examples`` are its exemplars;
    ``anti_patterns`` are queries it must not serve; ``core`` tools are always on.
    ``metadata`` keeps what an imported format carried beyond these fields (MCP
    annotations and title, OpenAI ``strict``).

    Tools in MCP, OpenAI or LangChain format: :meth:`parse` (one) and
    :func:`routecore.config.tool_formats.tool_specs` (many, with an overlay)."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    domain: str = ""
    success_examples: tuple[str, ...] = ()
    anti_patterns: tuple[str, ...] = ()
    cost_estimate: float | None = None
    avg_latency: float | None = None
    safety_tags: tuple[str, ...] = ()
    core: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: Entity types (routecore.core.entities) that lift this tool when the query holds one / without
    #: which it is not offered.
    prefers_entities: tuple[str, ...] = ()
    requires_entities: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _TRUSTED.on:
            _check_spec(self, "tool")

    @classmethod
    def parse(cls, tool: Any, *, overlay: Any = None) -> ToolSpec:
        """A ToolSpec from a tool in any accepted format (:mod:`routecore.config.tool_formats`)."""
        return tool_specs([tool], overlay=overlay, where="tool")[0]

    def exemplars(self) -> list[str]:
        """The texts the tool is scored by: its description, then its success examples."""
        ex = [self.description] if self.description else []
        return ex + list(self.success_examples)

    def summary(self) -> str:
        """One line for an LLM router prompt, with the tool's cost, latency and
        safety tags when they are set."""
        first = self.description.strip().split("\n")[0]
        notes = []
        if self.cost_estimate is not None:
            notes.append(f"cost {self.cost_estimate:g}")
        if self.avg_latency is not None:
            notes.append(f"latency {self.avg_latency:g}")
        if self.safety_tags:
            notes.append("safety: " + ", ".join(self.safety_tags))
        return f"{self.name} [{self.domain or '-'}]: {first}" + (f" ({'; '.join(notes)})" if notes else "")

    def schema(self) -> dict[str, Any]:
        """OpenAI-style function schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.input_schema) or {"type": "object", "properties": {}},
            },
        }


#: Policy values a route can override (``RouteSpec.thresholds``, ``Policy.per_route``).
ROUTE_THRESHOLD_KEYS = ("high", "margin", "previous_high", "previous_margin", "medium", "min_score")


@dataclass(frozen=True)
class RouteThresholds:
    """One route's own values of the policy's thresholds (:data:`ROUTE_THRESHOLD_KEYS`): each set
    one replaces the policy's for that route, each ``None`` leaves it. ``RouteSpec.thresholds``,
    ``Policy.per_route`` and a fit's per-route cuts (``Calibration.per_route``) hold them; their
    JSON form (:meth:`to_dict`) is a mapping of the set ones, and a mapping is read as one
    (:meth:`of`)."""

    high: float | None = None
    margin: float | None = None
    previous_high: float | None = None
    previous_margin: float | None = None
    medium: float | None = None
    min_score: float | None = None

    def __post_init__(self) -> None:
        # the config schema's rule (numbers in [0, 1]), as for a route's `thresholds:` in a file
        for k, v in check_thresholds("thresholds", self).items():
            object.__setattr__(self, k, float(v))

    @classmethod
    def of(
        cls, value: "RouteThresholds | Mapping[str, Any] | None", where: str = "thresholds"
    ) -> "RouteThresholds":
        """``value`` as thresholds: itself, or a mapping checked against the config schema (unknown
        keys and values out of [0, 1] are a :class:`ConfigError` that names ``where``)."""
        if isinstance(value, cls):
            return value
        return cls(**check_thresholds(where, value if value is not None else {}))

    def get(self, key: str) -> float | None:
        """The value of ``key`` (one of :data:`ROUTE_THRESHOLD_KEYS`), or ``None`` when unset."""
        if key not in ROUTE_THRESHOLD_KEYS:
            raise UnknownKeyError(
                f"route thresholds have no {key!r}: one of {', '.join(ROUTE_THRESHOLD_KEYS)}"
            )
        v: float | None = getattr(self, key)
        return v

    def over(self, base: "RouteThresholds") -> "RouteThresholds":
        """``base`` with this one's set values in their place."""
        return replace(base, **self.to_dict())

    def to_dict(self) -> dict[str, float]:
        """The set values, in :data:`ROUTE_THRESHOLD_KEYS` order."""
        return {k: v for k in ROUTE_THRESHOLD_KEYS if (v := getattr(self, k)) is not None}

    def __bool__(self) -> bool:
        return any(getattr(self, k) is not None for k in ROUTE_THRESHOLD_KEYS)


class _Trusted(threading.local):
    on = False


#: Set while specs are built from a document the schema has just checked (they skip a second check).
_TRUSTED = _Trusted()


def _schema() -> Any:
    from routecore.config import config_schema  # msgspec loads on first use, not at import

    return config_schema


def check_thresholds(where: str, th: Any) -> dict[str, float]:
    """Validated per-route overrides: known keys, numbers in [0, 1]."""
    s = _schema()
    checked: dict[str, float] = s.given(
        s.convert(dict(th) if isinstance(th, Mapping) else th, s.Thresholds, where)
    )
    return checked


#: Route names a config may not use: they would read as a decision rather than a route.
RESERVED_ROUTE_NAMES = frozenset({"clarify"})


def name_key(name: str) -> str:
    """The form two names are compared in: NFKC, case-folded. Names with the same key look alike
    ("café" composed and decomposed, "ＢＩＬＬＩＮＧ" and "billing") and may not name two routes or
    two tools."""
    return unicodedata.normalize("NFKC", name).casefold()


def check_name(name: str, kind: str, where: str) -> None:
    """A :class:`ConfigError` for a route or tool name that is blank, starts or ends with a space, holds
    an invisible or control character (zero-width space or joiner, a bidirectional override, a line
    break), or, for a route, is reserved (``CLARIFY``)."""
    if not isinstance(name, str):
        return  # the schema names the wrong type
    if not name.strip():
        raise ConfigError(f"{where}: {kind} name {name!r} is blank")
    if name != name.strip():
        raise ConfigError(f"{where}: {kind} name {name!r} starts or ends with a space")
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")]
    if bad:
        shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in dict.fromkeys(bad))
        raise ConfigError(
            f"{where}: {kind} name {name!r} holds invisible or control characters ({shown}); "
            "names must read as they compare"
        )
    if kind == "route" and name_key(name) in RESERVED_ROUTE_NAMES:
        raise ConfigError(
            f"{where}: {name!r} is reserved (the clarify decision's route); name the route otherwise"
        )


def _check_spec(spec: RouteSpec | ToolSpec, kind: str) -> None:
    """Types and ranges of a spec built in code (configs are checked as a whole by :func:`parse_config`)."""
    s = _schema()
    s.convert(spec, s.Route if kind == "route" else s.Tool, f"{kind} {spec.name!r}")
    check_name(spec.name, kind, f"{kind} {spec.name!r}")
    for k in (
        "utterances",
        "success_examples",
        "anti_patterns",
        "safety_tags",
        "prefers_entities",
        "requires_entities",
    ):
        if isinstance(getattr(spec, k, ()), list):
            object.__setattr__(spec, k, tuple(getattr(spec, k)))


def _route(r: Any, i: int, where: str) -> RouteSpec:
    check_name(r.name, "route", f"{where}: routes[{i}]")
    spec = RouteSpec(
        name=r.name,
        utterances=tuple(r.utterances),
        description=r.description,
        domain=r.domain,
        thresholds=RouteThresholds(**check_thresholds(where, r.thresholds)),
        fallback_on_error=r.fallback_on_error,
        metadata=r.metadata,
        prefers_entities=tuple(r.prefers_entities),
        requires_entities=tuple(r.requires_entities),
        label=r.label,
    )
    if not spec.exemplars():
        raise ConfigError(f"{where}: routes[{i}] ({r.name!r}) has neither utterances nor a description")
    return spec


def _tool(t: Any, i: int, where: str) -> ToolSpec:
    check_name(t.name, "tool", f"{where}: tools[{i}]")
    spec = ToolSpec(
        name=t.name,
        description=t.description,
        input_schema=t.input_schema,
        domain=t.domain or t.plugin,
        success_examples=tuple(t.success_examples),
        anti_patterns=tuple(t.anti_patterns),
        cost_estimate=t.cost_estimate,
        avg_latency=t.avg_latency,
        safety_tags=tuple(t.safety_tags),
        core=t.core,
        metadata=t.metadata,
        prefers_entities=tuple(t.prefers_entities),
        requires_entities=tuple(t.requires_entities),
    )
    if not spec.exemplars() and not spec.core:
        raise ConfigError(f"{where}: tools[{i}] ({t.name!r}) has neither a description nor success_examples")
    return spec


def unique(names: list[str], what: str, where: str = "config") -> None:
    """A :class:`ConfigError` when two names are the same or look alike (:func:`name_key`)."""
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        k = name_key(n)
        if k in seen:
            first, j = names[seen[k]], seen[k]
            if first == n:
                raise ConfigError(
                    f"{where}: {what}s[{i}]: duplicate {what} name {n!r} (first at {what}s[{j}])"
                )
            raise ConfigError(
                f"{where}: {what}s[{i}]: {what} name {ascii(n)} looks like {ascii(first)} "
                f"({what}s[{j}]): the same once Unicode-normalized (NFKC) and case-folded"
            )
        seen[k] = i


def parse_config(data: Any, where: str = "config") -> tuple[list[RouteSpec], list[ToolSpec]]:
    """Routes and tools of a parsed config document, checked against the schema
    (:mod:`routecore.config.config_schema`) and cross-checked: unique names, fallbacks
    that name routes. Errors name ``where`` and the path inside the document.

    ``tools`` entries may be in MCP or OpenAI format (:mod:`routecore.config.tool_formats`)."""
    cfg = _schema().validate(normalize_config_tools(data), where)
    _TRUSTED.on = True  # the document was just checked as a whole
    try:
        routes = [_route(r, i, where) for i, r in enumerate(cfg.routes)]
        tools = [_tool(t, i, where) for i, t in enumerate(cfg.tools)]
    finally:
        _TRUSTED.on = False
    unique([r.name for r in routes], "route", where)
    unique([t.name for t in tools], "tool", where)
    names = {r.name for r in routes}
    for i, r in enumerate(routes):
        if r.fallback_on_error and r.fallback_on_error not in names:
            raise ConfigError(
                f"{where}: routes[{i}].fallback_on_error: {r.fallback_on_error!r} is not a route"
            )
    return routes, tools


def parse_routes(data: Mapping[str, Any], where: str = "config") -> list[RouteSpec]:
    """The routes of a config mapping (its ``routes`` list); errors name ``where``."""
    return parse_config({"routes": data.get("routes") or []} if isinstance(data, Mapping) else data, where)[0]


def parse_tools(data: Mapping[str, Any], where: str = "config") -> list[ToolSpec]:
    """The tools of a config mapping (its ``tools`` list); errors name ``where``."""
    return parse_config({"tools": data.get("tools") or []} if isinstance(data, Mapping) else data, where)[1]


def tool_specs(
    tools: Iterable[Any],
    *,
    overlay: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    domain: str | None = None,
    missing_ok: bool = False,
    where: str = "tools",
) -> list[ToolSpec]:
    """ToolSpecs from tools in any accepted format, with ``overlay`` applied.

    Args:
        tools: ToolSpecs, mappings (routecore, MCP, OpenAI) or LangChain tools, mixed freely.
        overlay: routecore fields by tool name (:func:`read_overlay`); its safety tags
            are added to those of MCP annotations, its other values win.
        domain: the domain (plugin) of tools that have none (an MCP server's name).
        missing_ok: accept overlay entries that name no tool (a server dropped the
            tool); by default they raise :class:`ConfigError`, since a typo would
            otherwise go unnoticed.

    Raises:
        ConfigError: an unreadable tool or overlay, duplicate names, or an invalid
            field (the error names the tool's position).
    """
    over = read_overlay(overlay) if overlay is not None else {}
    docs: list[dict[str, Any]] = []
    for i, t in enumerate(tools):
        d = _from_spec(t) if isinstance(t, ToolSpec) else tool_dict(t, f"{where}[{i}]")
        if not isinstance(d.get("name"), str) or not d["name"]:
            raise ConfigError(f"{where}[{i}]: a tool needs a name")
        extra = over.get(d["name"], {})
        d.update({k: v for k, v in extra.items() if k != "safety_tags"})
        if extra.get("safety_tags"):
            d["safety_tags"] = list(dict.fromkeys([*d.get("safety_tags", ()), *extra["safety_tags"]]))
        if domain and not (d.get("domain") or d.get("plugin")):
            d["domain"] = domain
        docs.append(d)
    unknown = set(over) - {d["name"] for d in docs}
    if unknown and not missing_ok:
        named = "overlay" if isinstance(overlay, Mapping) else f"overlay {overlay}"
        raise ConfigError(f"{named} names tools that are not in the catalog: {sorted(unknown)[:10]}")
    return parse_config({"tools": docs}, where)[1]


def _from_spec(t: ToolSpec) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(t).items()}
