"""The registry: every exposed capability, found by name or by what it does.

One registry serves the ``search_capabilities`` meta-tool, ``GET /v1/capabilities``,
``execute_capability`` (lookup and schema) and the direct MCP tools, so an agent
can call exactly what it was shown and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memory_bank.capabilities.cards import card
from memory_bank.capabilities.ranking import confidence
from memory_bank.capabilities.ranking.search import CapabilitySearch
from memory_bank.capabilities.ranking.semantic import TextVectors
from memory_bank.errors import NotFound
from memory_bank.generated import models
from memory_bank.textsearch.embeddings import Embedder

Capability = Mapping[str, Any]

#: ``allows(permission)``: whether the caller may use an operation needing it.
Allows = Callable[[str], bool]


def exposed(capability: Capability) -> bool:
    """Whether the spec offers the operation to MCP clients (``x-capability.expose``)."""
    return bool(capability["policy"]["expose"])


def competes(capability: Capability) -> bool:
    """Whether search ranks the operation: every exposed one, and one that is not exposed when its
    spec gives examples of requests for it, so that such a request is recognised and answered as
    ``withheld`` rather than by a card that looks sure. Without examples it is left out: the
    operation behind ``search_capabilities`` itself, say, would name itself as HTTP only."""
    return exposed(capability) or bool(capability.get("examples"))


class CapabilityRegistry:
    """An immutable set of capabilities (names unique, as the catalog guarantees).

    Only the exposed ones can be listed, named, called or shown as cards; of the others (the
    catalog holds every operation) those with examples compete in the ranking (:func:`competes`),
    so that a request for one of them is answered by no card that looks sure, and names it as
    ``withheld``.
    """

    def __init__(self, capabilities: Sequence[Capability], *, embedder: Embedder | None = None) -> None:
        """``embedder`` (setting ``semantic_capabilities``) makes search the hybrid: each
        capability text is embedded once, at the first search of a set of operations that
        holds it (see ``_index``), and the sets share the vectors; each query at search time."""
        self._every = list(capabilities)
        self._capabilities = [c for c in self._every if exposed(c)]
        if len({c["name"] for c in self._every}) != len(self._every):
            raise ValueError("capability names must be unique")
        self._by_name = {capability["name"]: capability for capability in self._capabilities}
        self._embedder = embedder
        self._vectors = TextVectors(embedder) if embedder is not None else None
        self._searches: dict[tuple[str, ...], CapabilitySearch] = {}
        #: casefolded -> as the spec spells it: a search names one case-insensitively.
        self._categories = {str(c["policy"]["category"]).casefold(): str(c["policy"]["category"]) for c in self._capabilities}
        #: How this ranker's first result is judged; its ``threshold`` is what the search tool's description states.
        self.confidence = confidence.LEXICAL if embedder is None else confidence.HYBRID

    def __iter__(self) -> Iterator[Capability]:
        return iter(self._capabilities)

    def __len__(self) -> int:
        return len(self._capabilities)

    def get(self, name: str) -> Capability | None:
        return self._by_name.get(name)

    def api_title(self) -> str:
        """The API's title as its spec gives it (the first capability's, for a merged catalog)."""
        return next((str(c["api"]["title"]) for c in self._capabilities if c["api"]["title"]), "API")

    def families(self) -> list[str]:
        """What the operations are about, a phrase per tag in catalog order: ``tag: its description``.

        The ``search_capabilities`` description lists these, so an operation in a new tag
        shows up there without anyone editing the tool.
        """
        described: dict[str, str] = {}
        for capability in self._capabilities:
            for tag in capability["tags"] or [capability["policy"]["category"]]:
                text = capability["api"]["tags"].get(tag, "").rstrip(".")
                described.setdefault(tag, f"{tag.lower()}: {text[:1].lower()}{text[1:]}" if text else tag.lower())
        return list(described.values())

    def allowed(self, allows: Allows) -> list[Capability]:
        """The capabilities a caller with these permissions may use, in catalog order."""
        return [c for c in self._capabilities if allows(c["policy"]["permission"])]

    @property
    def indexes(self) -> int:
        """How many ranking indexes are built (one per set of APIs searched or prepared)."""
        return len(self._searches)

    def prepare(self, allows: Allows) -> None:
        """Build now the index the first search by a caller with these permissions would build."""
        self._index(allows)

    def _index(self, allows: Allows) -> CapabilitySearch:
        """The ranking index over every operation of the APIs the caller may use some of, built
        once per set of such APIs; :meth:`search` then leaves out what the caller may not call.

        Term statistics then come from those APIs alone: another API's operations (the admin
        one's, for an agent's memory token) never shift the order of these. An operation of the
        same API that the caller may not call, or that no MCP client may (not exposed, with
        examples), still competes, so a read-only token's "save a memory" ranks the reads as the
        poor matches they are (0.09, where an index of the reads alone gave one 0.34) and names
        the write as withheld instead of offering a read as a sure one, and "export my memories"
        finds the export, not the search.
        """
        sources = {c["source"] for c in self.allowed(allows)}
        capabilities = [c for c in self._every if c["source"] in sources and competes(c)]
        names = tuple(c["name"] for c in capabilities)
        index = self._searches.get(names)
        if index is None:
            index = self._searches[names] = CapabilitySearch(capabilities, embedder=self._embedder, vectors=self._vectors)
        return index

    def search(
        self,
        query: str,
        *,
        allows: Allows,
        limit: int = 5,
        category: str | None = None,
        include_schema: bool = False,
    ) -> models.CapabilitySearchResult:
        """The best ``limit`` cards for ``query`` among what the caller may use.

        A blank query lists every allowed capability ordered by category (``limit``
        does not apply: browsing wants the whole menu). ``category`` matches
        case-insensitively; one no capability has is 404, naming those there are (an empty
        answer read as "nothing does that"; not 422, since any name is a valid argument). Capabilities the caller may not use are left out of the
        ranking's results, so they neither appear nor take a place in the top ``limit``;
        those of an API the caller uses still weigh on the scores of the rest (see ``_index``),
        and when one of those is the best match it is named as ``withheld``, with the
        permission it needs: none of the cards then does what was asked.
        """
        wanted = category.casefold() if category else None
        if wanted is not None and wanted not in self._categories:
            named = ", ".join(sorted(set(self._categories.values())))
            raise NotFound(f"no category is named {category!r}; there are {named}")

        def accept(capability: Capability) -> bool:
            policy = capability["policy"]
            return exposed(capability) and allows(policy["permission"]) and (wanted is None or policy["category"].casefold() == wanted)

        total = len(self.allowed(allows))
        if not query.strip():
            listed = sorted((c for c in self._capabilities if accept(c)), key=lambda c: c["policy"]["category"])
            cards = [card(c, None, include_schema=include_schema) for c in listed]
            return models.CapabilitySearchResult(total=total, results=cards, confidence=None, withheld=None)
        index = self._index(allows)
        scores = index.scores(query)
        matches = index.rank(query, scores, limit=max(limit, 2), accept=accept)  # the second judges the first
        cards = [card(m.capability, m.score, include_schema=include_schema) for m in matches[:limit]]
        in_category = None if wanted is None else (lambda c: c["policy"]["category"].casefold() == wanted)
        best = next((m.capability for m in index.rank(query, scores, limit=1, accept=in_category)), None)
        withheld = _withheld(best, allows)
        sure = 0.0 if withheld is not None else self.confidence.of([m.score for m in matches])
        return models.CapabilitySearchResult(total=total, results=cards, confidence=sure, withheld=withheld)


def _withheld(best: Capability | None, allows: Allows) -> models.CapabilitySearchResultWithheld | None:
    """``best`` as the result's ``withheld``, when the caller cannot call it over MCP."""
    if best is None or (exposed(best) and allows(best["policy"]["permission"])):
        return None
    return models.CapabilitySearchResultWithheld(
        name=best["name"],
        permission=best["policy"]["permission"],
        reason="permission" if exposed(best) else "not_exposed",
        route=f"{best['method']} {best['path']}",
    )
