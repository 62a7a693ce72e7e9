"""Route and tool specifications, and loading them from YAML or JSON files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from routecore.errors import ConfigError


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
    thresholds: Mapping[str, float] = field(default_factory=dict)
    fallback_on_error: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def exemplars(self) -> list[str]:
        ex = list(self.utterances)
        if self.description:
            ex.append(self.description)
        return ex


@dataclass(frozen=True)
class ToolSpec:
    """One tool. ``description`` and ``success_examples`` are its exemplars;
    ``anti_patterns`` are queries it must not serve; ``core`` tools are always on."""

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

    def exemplars(self) -> list[str]:
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
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": dict(self.input_schema) or {"type": "object", "properties": {}}}}


#: Policy values a route can override (``RouteSpec.thresholds``, ``Policy.per_route``).
ROUTE_THRESHOLD_KEYS = ("high", "margin", "previous_high", "previous_margin", "medium", "min_score")


def _check_unit(where: str, key: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be a number, got {value!r}") from None
    if not 0.0 <= v <= 1.0:
        raise ConfigError(f"{where}: {key}={v} is outside [0, 1]")
    return v


def check_thresholds(where: str, th: Any) -> dict[str, float]:
    """Validated per-route overrides: known keys, numbers in [0, 1]."""
    if not isinstance(th, Mapping):
        raise ConfigError(f"{where}: thresholds must be a mapping, got {type(th).__name__}")
    bad = set(th) - set(ROUTE_THRESHOLD_KEYS)
    if bad:
        raise ConfigError(f"{where}: unknown threshold keys {sorted(bad)} (known: {list(ROUTE_THRESHOLD_KEYS)})")
    return {k: _check_unit(where, k, v) for k, v in th.items()}


def _non_negative(where: str, key: str, v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
        raise ConfigError(f"{where}: {key} must be a number >= 0, got {v!r}")
    return float(v)


def _tuple_of_str(where: str, key: str, v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise ConfigError(f"{where}: {key}[{i}] must be a string, got {x!r}")
    return tuple(v)


def route_from_dict(d: Mapping[str, Any], i: int) -> RouteSpec:
    where = f"routes[{i}]"
    if not isinstance(d, Mapping) or not d.get("name"):
        raise ConfigError(f"{where}: a route needs a name")
    where = f"route {d['name']!r}"
    known = {f.name for f in fields(RouteSpec)}
    extra = set(d) - known
    if extra:
        raise ConfigError(f"{where}: unknown keys {sorted(extra)}")
    th = check_thresholds(where, d.get("thresholds") or {})
    spec = RouteSpec(
        name=str(d["name"]),
        utterances=_tuple_of_str(where, "utterances", d.get("utterances")),
        description=str(d.get("description") or ""),
        domain=str(d.get("domain") or ""),
        thresholds=th,
        fallback_on_error=d.get("fallback_on_error"),
        metadata=_mapping(where, "metadata", d.get("metadata")),
    )
    if not spec.exemplars():
        raise ConfigError(f"{where}: has neither utterances nor a description")
    return spec


def tool_from_dict(d: Mapping[str, Any], i: int) -> ToolSpec:
    if not isinstance(d, Mapping) or not d.get("name"):
        raise ConfigError(f"tools[{i}]: a tool needs a name")
    where = f"tool {d['name']!r}"
    known = {f.name for f in fields(ToolSpec)} | {"plugin"}
    extra = set(d) - known
    if extra:
        raise ConfigError(f"{where}: unknown keys {sorted(extra)}")
    spec = ToolSpec(
        name=str(d["name"]),
        description=str(d.get("description") or ""),
        input_schema=_mapping(where, "input_schema", d.get("input_schema")),
        domain=str(d.get("domain") or d.get("plugin") or ""),
        success_examples=_tuple_of_str(where, "success_examples", d.get("success_examples")),
        anti_patterns=_tuple_of_str(where, "anti_patterns", d.get("anti_patterns")),
        cost_estimate=_non_negative(where, "cost_estimate", d.get("cost_estimate")),
        avg_latency=_non_negative(where, "avg_latency", d.get("avg_latency")),
        safety_tags=_tuple_of_str(where, "safety_tags", d.get("safety_tags")),
        core=_bool(where, "core", d.get("core", False)),
    )
    if not spec.exemplars() and not spec.core:
        raise ConfigError(f"{where}: has neither a description nor success_examples")
    return spec


def _mapping(where: str, key: str, v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ConfigError(f"{where}: {key} must be a mapping, got {type(v).__name__}")
    return dict(v)


def _bool(where: str, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {v!r}")
    return v


def unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ConfigError(f"duplicate {what} name {n!r}")
        seen.add(n)


#: A YAML document may expand to at most this many nodes (aliases counted at every use)
#: and nest this deep: an alias bomb of a few hundred bytes expands to billions.
YAML_MAX_NODES = 2_000_000
YAML_MAX_DEPTH = 64


def load_yaml(text: str, where: Any = "<string>") -> Any:
    """Parse YAML safely: libyaml's C loader when present (a 50 MB config took 81 s
    with the pure-Python one), and a refusal of alias bombs and deep nesting before
    any Python object is built."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def expanded(n: Any, depth: int) -> int:
            if depth > YAML_MAX_DEPTH:
                raise ConfigError(f"{where}: YAML nests deeper than {YAML_MAX_DEPTH} levels")
            if id(n) in sizes:
                return sizes[id(n)]
            sizes[id(n)] = 1  # a recursive alias counts once and stops here
            if isinstance(n, yaml.SequenceNode):
                total = 1 + sum(expanded(c, depth + 1) for c in n.value)
            elif isinstance(n, yaml.MappingNode):
                total = 1 + sum(expanded(k, depth + 1) + expanded(v, depth + 1) for k, v in n.value)
            else:
                total = 1
            if total > YAML_MAX_NODES:
                raise ConfigError(f"{where}: YAML expands to more than {YAML_MAX_NODES:,} nodes (aliases of aliases?)")
            sizes[id(n)] = total
            return total

        expanded(node, 0)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise ConfigError(f"malformed YAML in {where}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: YAML nests too deep") from None
    finally:
        loader.dispose()


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML (``.yaml``/``.yml``) or JSON file into a dict."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p} is not UTF-8 text: byte {e.start}: {e.reason}") from None
    if p.suffix in (".yaml", ".yml"):
        data = load_yaml(text, p)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"malformed JSON in {p}: line {e.lineno}: {e.msg}") from None
        except RecursionError:
            raise ConfigError(f"{p}: JSON nests too deep") from None
    if not data:
        raise ConfigError(f"{p} is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping with 'routes' and/or 'tools'")
    return data


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    v = data.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError(f"{key} must be a list, got {type(v).__name__}")
    return v


def parse_routes(data: Mapping[str, Any]) -> list[RouteSpec]:
    routes = [route_from_dict(r, i) for i, r in enumerate(_list(data, "routes"))]
    unique([r.name for r in routes], "route")
    names = {r.name for r in routes}
    for r in routes:
        if r.fallback_on_error and r.fallback_on_error not in names:
            raise ConfigError(f"route {r.name!r}: fallback_on_error {r.fallback_on_error!r} is not a route")
    return routes


def parse_tools(data: Mapping[str, Any]) -> list[ToolSpec]:
    tools = [tool_from_dict(t, i) for i, t in enumerate(_list(data, "tools"))]
    unique([t.name for t in tools], "tool")
    return tools
