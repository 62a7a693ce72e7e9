"""The typed schema of a routecore config file (routes, tools, policy, llm), on msgspec.

One definition serves three uses: validating a parsed YAML/JSON document
(:func:`validate`), validating a :class:`~routecore.decide.policy.Policy` built in code,
and the JSON Schema that editors use (:func:`json_schema`, ``routecore schema``).

msgspec was chosen over pydantic for import time and size (measured in
BENCHMARKS.md, "Config schema"). Errors name the file, the path inside it
(``routes[3].utterances[7]``), what was expected and what was found.
"""

from __future__ import annotations

import ast
import inspect
import re
import typing
from typing import Annotated, Any, Dict, List, Literal, Optional, TypeVar, Union

import msgspec
from msgspec import Meta, Struct, field

from routecore.config.policy_schema import SECTION_OF as SECTION_OF
from routecore.config.policy_schema import SECTIONS, Thresholds
from routecore.config.policy_schema import BiasRule as BiasRule
from routecore.config.policy_schema import ClassifierSection as ClassifierSection
from routecore.config.policy_schema import ContextSection as ContextSection
from routecore.config.policy_schema import HybridSection as HybridSection
from routecore.config.policy_schema import LearningSection as LearningSection
from routecore.config.policy_schema import Policy as Policy
from routecore.config.policy_schema import PolicySections as PolicySections
from routecore.config.policy_schema import RouteSection as RouteSection
from routecore.config.policy_schema import ToolSection as ToolSection
from routecore.config.policy_schema import check_policy_keys as check_policy_keys
from routecore.config.policy_schema import legacy_keys as legacy_keys
from routecore.config.schema_base import AtLeastOne, Finite, Name, NonNegative, Positive, Strict, Text, Unit
from routecore.errors import ConfigError


class Route(Strict):
    """One route: its exemplars (``utterances``, and ``description`` counts as one)."""

    name: Name
    utterances: List[Text] = []
    description: str = ""
    domain: str = ""
    thresholds: Thresholds = field(default_factory=Thresholds)
    fallback_on_error: Optional[Name] = None
    metadata: Dict[str, Any] = {}
    prefers_entities: List[Name] = []
    requires_entities: List[Name] = []
    #: How a clarification question names the route ("a refund"); unset, its description.
    label: str = ""


class Tool(Finite):
    """One tool: ``description`` and ``success_examples`` are its exemplars; ``core`` tools are always on."""

    name: Name
    description: str = ""
    input_schema: Dict[str, Any] = {}
    domain: str = ""
    plugin: str = ""
    success_examples: List[Text] = []
    anti_patterns: List[Text] = []
    cost_estimate: Optional[NonNegative] = None
    avg_latency: Optional[NonNegative] = None
    safety_tags: List[Name] = []
    core: bool = False
    metadata: Dict[str, Any] = {}
    prefers_entities: List[Name] = []
    requires_entities: List[Name] = []


#: An environment variable's name (the key itself, with its ``-``, is refused).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
EnvName = Annotated[
    str, Meta(min_length=1, max_length=256, extra_json_schema={"pattern": f"^{_ENV_NAME.pattern}$"})
]
HttpUrl = Annotated[str, Meta(pattern="^https?://", max_length=2048)]


class LLM(Finite):
    """The LLM fallback router: an OpenAI-compatible chat-completions server.

    The API key is read from the environment variable named by ``api_key_env``; a
    key is never written in a config (an ``api_key`` field is refused). When that
    variable is unset, requests carry no ``Authorization`` header (local servers
    need none). ``base_url`` defaults to the ``OPENAI_BASE_URL`` variable.
    """

    model: Name
    base_url: Optional[HttpUrl] = None
    api_key_env: EnvName = "OPENAI_API_KEY"
    timeout: Positive = 5.0
    max_tokens: Optional[AtLeastOne] = None
    temperature: NonNegative = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not _ENV_NAME.fullmatch(
            self.api_key_env
        ):  # the message must not repeat the value: it may be a key
            raise ValueError(
                "`api_key_env` must be the name of an environment variable (letters, digits, _), not a key"
            )


class Entities(Strict):
    """Entity types: dictionaries of terms (whole words, case-insensitive; accent-insensitive
    with ``fold_accents``) and regex patterns (routecore.core.entities)."""

    dictionaries: Dict[Name, List[Text]] = {}
    patterns: Dict[Name, Annotated[str, Meta(min_length=1, max_length=1000)]] = {}
    fold_accents: bool = True


class KnowledgeMapEntry(Strict):
    """Collections for a (domain, intent) pair; either may be left out (matches any)."""

    collections: List[Name]
    domain: Optional[Name] = None
    intent: Optional[Name] = None


class Knowledge(Strict):
    """Knowledge-source routing (routecore.routers.knowledge): the routes are collections."""

    top_k: AtLeastOne = 2
    gate: Optional[Unit] = None
    fallback: Union[Literal["all"], List[Name]] = "all"
    map: List[KnowledgeMapEntry] = []


class LLMTools(Strict):
    """The LLM tool router (routecore.routers.llm_tools) over the config's tools; its server is the
    ``llm:`` section."""

    mode: Literal["llm", "hybrid", "semantic"] = "hybrid"
    hybrid_top: AtLeastOne = 20
    hint: bool = True


class ContextLayer(Strict):
    """One layer of a context config (routecore.routers.context): its labels as routes, their policy, and
    whether it may decline (``open``, the default) or always names one of its labels (``open: false``)."""

    routes: List[Route]
    policy: Policy = field(default_factory=Policy)
    open: bool = True


class Config(Strict):
    """A routecore config file: routes and/or tools, an optional policy and LLM router."""

    routes: List[Route] = []
    tools: List[Tool] = []
    policy: Policy = field(default_factory=Policy)
    llm: Optional[LLM] = None
    entities: Optional[Entities] = None
    knowledge: Optional[Knowledge] = None
    llm_tools: Optional[LLMTools] = None
    layers: Dict[Name, ContextLayer] = {}
    schema: Optional[str] = field(default=None, name="$schema")


_PATH_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]""")


_MISSING = object()


def _value(data: Any, path: str) -> Any:
    """The value at ``path`` (``.routes[3].name``, ``.per_route['A']``) in ``data``, or ``_MISSING``."""
    v = data
    for key, index, quoted in _PATH_STEP.findall(path):
        try:
            if index:
                v = v[int(index)]
            else:
                k = key or ast.literal_eval(quoted)
                v = v[k] if isinstance(v, dict) else getattr(v, k)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, SyntaxError):
            return _MISSING
    return v


def _found(data: Any, path: str) -> str:
    """`` (found <the value at path>)``, shortened, or ``""``."""
    v = _value(data, path)
    if v is _MISSING:
        return ""
    text = repr(v)
    return f" (found {text[:80]}{'...' if len(text) > 80 else ''})"


#: The allowed values of every enum field, for error messages (msgspec does not list them).
_CHOICES = {
    name: typing.get_args(hint)
    for struct in SECTIONS.values()
    for name, hint in typing.get_type_hints(struct).items()
    if typing.get_origin(hint) is Literal
}

#: Mappings whose keys msgspec reports as ``[...]``, and the type of their values.
_KEYED = {"per_route": Thresholds}


def _name_key(data: Any, path: str) -> str:
    """``path`` with the first ``[...]`` replaced by the key whose value fails."""
    head, _, rest = path.partition("[...]")
    owner = _PATH_STEP.findall(head)[-1][0] if head else ""
    items = _value(data, head)
    if owner in _KEYED and isinstance(items, dict):
        for key, v in items.items():
            try:
                msgspec.convert(v, _KEYED[owner], from_attributes=True)
            except msgspec.ValidationError:
                return f"{head}[{key!r}]{rest}"
    return path


def _error(e: msgspec.ValidationError, data: Any, where: str) -> ConfigError:
    msg, _, path = str(e).partition(" - at `$")
    path = path.rstrip("`")
    if "[...]" in path:
        path = _name_key(data, path)
    found = (
        _found(data, path) if path and not any(w in msg for w in ("unknown field", "must be", "enum")) else ""
    )
    if "enum" in msg and path:
        field_name = _PATH_STEP.findall(path)[-1][0]
        choices = _CHOICES.get(field_name)
        if choices:
            found = f" (expected one of {', '.join(map(repr, choices))})"
    place = f"{path.lstrip('.')}: " if path else ""
    return ConfigError(f"{where}: {place}{msg[0].lower() + msg[1:]}{found}")


def given(struct: Struct) -> Dict[str, Any]:
    """The fields of ``struct`` that are set (not ``None``), in field order."""
    return {k: v for k in struct.__struct_fields__ if (v := getattr(struct, k)) is not None}


_T = TypeVar("_T")


def convert(data: Any, kind: type[_T], where: str) -> _T:
    """``data`` as a ``kind`` struct, or a :class:`ConfigError` that names the path."""
    try:
        return msgspec.convert(data, kind, from_attributes=True)
    except msgspec.ValidationError as e:
        raise _error(e, data, where) from None


def validate(data: Any, where: str = "config") -> Config:
    """Check a parsed config document against the schema (types, ranges, unknown keys)."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a mapping with 'routes' and/or 'tools', got {type(data).__name__}"
        )
    check_policy_keys(data.get("policy"), f"{where}: policy")
    layers = data.get("layers")
    for name, layer in layers.items() if isinstance(layers, dict) else ():
        if isinstance(layer, dict):
            check_policy_keys(layer.get("policy"), f"{where}: layers.{name}.policy")
    return convert(data, Config, where)


def json_schema() -> Dict[str, Any]:
    """The JSON Schema of a config file (draft 2020-12), for editors and CI checks."""
    schema = msgspec.json.decode(msgspec.json.encode(msgspec.json.schema(Config)))  # tuples become lists
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "routecore config",
        **_clean_descriptions(schema),
    }


def _clean_descriptions(node: Any) -> Any:
    """``node`` with every ``description`` dedented as ``inspect.cleandoc`` does: msgspec 0.23
    dedents docstrings and earlier versions kept their indentation, and the published schema
    must not depend on which one is installed."""
    if isinstance(node, dict):
        return {
            k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else _clean_descriptions(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_clean_descriptions(v) for v in node]
    return node
