"""What plugins and the runtime hand each other at the points of a cycle: PreFilterResult,
PostFilterResult with its NominatingInfo, NodeScore, and the cycle's per-plugin score table
(upstream kubernetes ``staging/src/k8s.io/kube-scheduler/framework/interface.go``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import overload


class PreFilterResult:
    """Nodes a PreFilter plugin restricts the cycle to; ``node_names=None`` means all nodes.

    ``plugins`` is filled by the runtime: the plugins whose results were merged into it.
    """

    __slots__ = ("node_names", "plugins")

    def __init__(self, node_names: set[str] | frozenset[str] | None = None) -> None:
        self.node_names = node_names
        self.plugins: list[str] = []

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(set(self.node_names or ()) & set(other.node_names or ()))


class NominatingMode(Enum):
    NOOP = 0
    OVERRIDE = 1


@dataclass(slots=True)
class NominatingInfo:
    nominated_node_name: str = ""
    mode: NominatingMode = NominatingMode.NOOP


@dataclass(slots=True)
class PostFilterResult:
    nominating_info: NominatingInfo | None = None


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


class NodePluginScores:
    """A node's weighted score from each plugin (``scores``: plugin -> score x weight) and
    their sum (``total_score``, what the host is picked by).

    Built by the runtime from the cycle's per-plugin score columns; the per-plugin dict is
    made on first use, as most cycles read only the totals."""

    __slots__ = ("name", "total_score", "_scores", "_columns", "_index")

    def __init__(self, name: str, scores: dict[str, int] | None = None, total_score: int = 0):
        self.name = name
        self.total_score = total_score
        self._scores = scores
        self._columns: tuple[list[str], list[list[int]]] | None = None
        self._index = 0

    @classmethod
    def from_columns(
        cls, name: str, total: int, columns: tuple[list[str], list[list[int]]], index: int
    ) -> NodePluginScores:
        entry = cls.__new__(cls)
        entry.name = name
        entry.total_score = total
        entry._scores = None
        entry._columns = columns
        entry._index = index
        return entry

    @property
    def scores(self) -> dict[str, int]:
        if self._scores is None:
            if self._columns is None:
                self._scores = {}
            else:
                names, columns = self._columns
                i = self._index
                self._scores = {n: column[i] for n, column in zip(names, columns, strict=True)}
                self._columns = None
        return self._scores

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodePluginScores):
            return NotImplemented
        return (self.name, self.scores, self.total_score) == (
            other.name,
            other.scores,
            other.total_score,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodePluginScores({self.name!r}, {self.scores!r}, {self.total_score})"


class NodeScoreList(Sequence[NodePluginScores]):
    """The scored nodes of one cycle, in node order: ``names`` and ``totals`` as plain lists
    (what picking a host and the extender's prioritize answer read), and a
    :class:`NodePluginScores` per node made when an entry is first asked for."""

    __slots__ = ("names", "totals", "_columns", "_entries")

    def __init__(
        self, names: list[str], totals: list[int], columns: tuple[list[str], list[list[int]]]
    ) -> None:
        self.names = names
        self.totals = totals
        self._columns = columns
        self._entries: list[NodePluginScores] | None = None

    def _all(self) -> list[NodePluginScores]:
        if self._entries is None:
            make, columns = NodePluginScores.from_columns, self._columns
            self._entries = [
                make(name, total, columns, i)
                for i, (name, total) in enumerate(zip(self.names, self.totals, strict=True))
            ]
        return self._entries

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> NodePluginScores: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodePluginScores]: ...

    def __getitem__(self, index: int | slice) -> NodePluginScores | list[NodePluginScores]:
        return self._all()[index]

    def __iter__(self) -> Iterator[NodePluginScores]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
