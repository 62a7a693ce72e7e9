"""`ToolCatalog`: the tools of a router, their score tables and lessons.

Holds the tool specs, the tools' :class:`~routecore.decide.tables.ScoreTable` (their
exemplars) and the anti-pattern one, the core tools, the discovery-tool cache
and the optional experience memory. :mod:`routecore.tools.toolbelt` builds the
per-query tool belts from it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from routecore.calibrate.calibration_record import Calibration
from routecore.config.specs import ToolSpec
from routecore.core.entities import EntityMatcher
from routecore.core.lexical import DEFAULT_B, LexicalTable
from routecore.decide.arguments import stored_text
from routecore.decide.conversation import read_query
from routecore.decide.language_policies import LanguagePolicies
from routecore.decide.policy import Policy
from routecore.decide.spelling import Speller, tokenizer_words
from routecore.decide.tables import EncoderLike, build_table, exemplar_texts
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.memory.lesson_cache import store_key
from routecore.memory.memory import ExperienceMemory


def lexical_form(spec_policy: Policy, calibration: Calibration | None) -> tuple[str, float]:
    """The tools' lexical stemmer and BM25 ``b``: the policy's stemmer when set, else the
    calibration's (the one ``routecore fit --tools`` chose), else none; ``b`` the calibration's."""
    stemmer, b = (
        (calibration.tool_lexical_stemmer, calibration.tool_lexical_b) if calibration else ("none", DEFAULT_B)
    )
    return spec_policy.tool_lexical_stemmer or stemmer, b


class ToolCatalog:
    """The tools a router can offer, with what the tool belt needs to rank them.

    Args:
        tools: the tool specifications.
        encoder: embeds the exemplars (unless given), the queries and the lessons.
        policy: thresholds and defaults of the tool belt.
        memory: optional :class:`ExperienceMemory` whose lessons adjust tool scores.
        storage: the tables' storage (see :class:`~routecore.decide.tables.ScoreTable`).
        vectors, anti_vectors: precomputed embeddings of the exemplars and the anti-patterns.
        lexical: the BM25 table of the tools (names and exemplars; ``policy.tool_lexical_weight``).

    ``tools.names``, ``tools.pos`` and ``tools.domains`` are the tool names, their
    positions and their domains, in spec order.
    """

    def __init__(
        self,
        tools: Sequence[ToolSpec],
        *,
        encoder: EncoderLike,
        policy: Policy,
        memory: ExperienceMemory | None = None,
        storage: str = "auto",
        vectors: np.ndarray | None = None,
        anti_vectors: np.ndarray | None = None,
        lexical: LexicalTable | None = None,
    ):
        self.specs = list(tools)
        self.encoder, self.policy, self.memory, self.lexical = encoder, policy, memory, lexical
        self.by_name = {t.name: t for t in self.specs}
        if policy.fallback_tool is not None and policy.fallback_tool not in self.by_name:
            raise ConfigError(f"policy.fallback_tool {policy.fallback_tool!r} is not a tool of this router")
        self.core = [i for i, t in enumerate(self.specs) if t.core]
        self.without_exemplars = any(not t.exemplars() for t in self.specs)  # such tools score -inf
        self._discovery: dict[tuple[str, ...], dict[str, list[str]]] = {}
        self.tools = build_table(self.specs, encoder, storage, vectors)
        self.anti = build_table(self.specs, encoder, storage, anti_vectors, "anti_patterns")
        self.languages: LanguagePolicies | None = None  # set_languages
        self.entities: EntityMatcher | None = None  # the Router's entities: section
        self.entity_tools = any(t.prefers_entities or t.requires_entities for t in self.specs)
        self.speller = Speller(self.tools.texts, tokenizer_words(encoder))  # the tools' words

    def read_query(self, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What a belt encodes for ``text`` and the alerts that say so: :func:`routing_text`, then
        typos of the tools' words repaired (unless ``policy.tools.tool_spelling`` is off), as
        :meth:`routecore.routers.route_table.RouteTable.read_query` reads a route query."""
        return read_query(text, self.speller, self.policy.tool_spelling)

    def set_languages(self, spec_policy: Policy, calibration: Calibration | None) -> None:
        """Give queries in languages the tools' exemplars do not cover their own tool floor
        (:mod:`routecore.calibrate.languages`); a policy later set by hand is used as given."""
        self.languages = LanguagePolicies.build(self.policy, spec_policy, calibration, tools=True)

    def lexical_table(self, stemmer: str, b: float) -> LexicalTable:
        """A BM25 table of the tools (names and exemplars) with terms stemmed by ``stemmer`` and
        length norm ``b``."""
        texts, owners = exemplar_texts(self.specs)
        return LexicalTable(
            texts, owners, len(self.specs), [t.name for t in self.specs], stemmer=stemmer, b=b
        )

    def set_lexical_form(self, spec_policy: Policy, calibration: Calibration | None) -> None:
        """Rebuild the lexical table when its stemmer or ``b`` are not :func:`lexical_form`'s
        (a calibration put in force by ``routecore fit --tools``)."""
        lex = self.lexical
        stemmer, b = lexical_form(spec_policy, calibration)
        if lex is not None and (lex.index.stemmer != stemmer or abs(lex.index.b - b) > 1e-6):
            self.lexical = self.lexical_table(stemmer, b)

    def lexical_bias(self, text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """What each tool's cosine gains from its lexical score for ``text`` (hybrid scoring),
        in code and in spec order (:meth:`ScoreTable.lexical_bias`), or None."""
        lexical = self.lexical if self.policy.lexical else None
        return self.tools.lexical_bias(lexical, text, self.policy.tool_lexical_weight or 0.0)

    def discovery_tools(self, prefixes: tuple[str, ...]) -> dict[str, list[str]]:
        """Plugin -> its tools whose names start with one of ``prefixes`` (cached)."""
        if prefixes not in self._discovery:
            by: dict[str, list[str]] = {}
            for t in self.specs:
                if t.domain and t.name.startswith(prefixes):
                    by.setdefault(t.domain, []).append(t.name)
            self._discovery[prefixes] = by
        return self._discovery[prefixes]

    def record_lesson(self, query: str, tool: str, *, use: bool, context: str = "") -> int:
        """Remember a correction: for queries like ``query`` (in ``context``), (do not) use ``tool``."""
        if self.memory is None:
            raise ConfigError("this router has no experience memory")
        if tool not in self.by_name:
            raise InvalidArgumentError(f"unknown tool {tool!r}")
        if not isinstance(use, bool):
            raise InvalidArgumentError(f"use must be True or False, got {use!r}")
        context = stored_text(context, "record_lesson(): the context (a domain name)", blank=True)
        query = stored_text(query, "record_lesson(): the query")
        # On one thread when the encoder can (routecore.Encoder): recording a lesson is background
        # work, and every intra-op thread it took was a core the calls being served wanted (issue 36 §6).
        encode = getattr(self.encoder, "encode_background", self.encoder.encode_with_stats)
        emb = encode([self.read_query(query)[0] or query]).embeddings[0]  # as a belt reads the query
        return self.memory.record(
            query, tool, use=use, embedding=emb, model_id=store_key(self.encoder), context=context
        )
