"""The node table: a columnar view of a :class:`~extender.framework.snapshot.Snapshot`.

Most Filter and Score plugins ask the same question of every node ("does the request fit",
"does the pod tolerate these taints", "which zone is this"). Asked node by node in Python that
is one call per node per plugin; asked of a column it is a handful of numpy operations for all
nodes at once. A plugin may therefore offer a *batch form* (``filter_batch`` / ``score_batch``,
:mod:`extender.framework.interfaces`) that reads this table; the per-node methods stay the
reference, and a batch form must answer exactly what they answer for every row.

Row ``i`` is ``snapshot.node_info_list[i]``. Columns:

* resources, int64: allocatable (``alloc_*``), requested by the node's pods (``req_*``), the
  non-zero requests the scoring plugins use (``nz_*``), and ``pod_count``; scalar resources
  (extended, hugepages) on demand with :meth:`NodeTable.scalar`;
* ``unschedulable`` (bool);
* labels, on demand per key with :meth:`NodeTable.labels`: a code per row into a list of the
  values seen (code 0: the node has no such label), so a selector is evaluated once per
  distinct value instead of once per node;
* taints, grouped: :meth:`NodeTable.taint_groups` gives a group per row and one taint list per
  group (nodes of a pool share their taints);
* images, on demand per image name with :meth:`NodeTable.image_states`: the size and the
  snapshot's node count of that image as each row's ``NodeInfo.image_states`` holds them;
* ``has_node`` (bool): the row's NodeInfo has its node object;
* ``generations`` (int64): each row's ``NodeInfo.generation``, so that data a plugin keeps
  per row across tables can find the rows whose node or pods changed since (a NodeInfo gets
  a new generation on every change, and a clone shares the generation of what it copies);
* pods by label pair, on demand with :meth:`NodeTable.pods_with_label`: every pod of the
  table's nodes carrying a ``(key, value)`` label, with its row, so that counting plugins
  visit the few pods that can match a selector instead of every node;
* plugin data, with :meth:`NodeTable.derived`: computed once per table under a plugin-owned
  key, and updated across derives from the changed rows (InterPodAffinity's grouped terms).

A table is immutable once built. :meth:`NodeTable.derive` makes the table of a snapshot that
differs from this one in a few rows (the cache's overlay after a pod was assumed or bound)
by copying the columns and recomputing those rows only.

``exact`` is False when some amount does not fit int64 arithmetic with room to spare (a
saturated or absurd quantity); batch forms then decline and the per-node reference answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, is_
from typing import Any, TypeVar

import numpy as np

from .labels import LabelSelector
from .node_info import NodeInfo
from .pod_info import PodInfo

# Amounts above this leave no room for the products the scoring plugins compute (x 100, sums of
# a few resources): such a table is not `exact`, and batch forms decline.
SAFE_AMOUNT = 1 << 52

T = TypeVar("T")
_MISSING = object()

# How many ancestors' label-pair entries a derived table may patch from (each with the rows
# changed since): a linear chain of overlays reuses an entry built a few overlays ago.
_PAIR_BASES = 4

PairEntry = tuple[np.ndarray, list[PodInfo]]
_NO_PODS: PairEntry = (np.zeros(0, dtype=np.int64), [])

_INT_COLUMNS = (
    "alloc_milli_cpu",
    "alloc_memory",
    "alloc_ephemeral",
    "alloc_pods",
    "req_milli_cpu",
    "req_memory",
    "req_ephemeral",
    "nz_milli_cpu",
    "nz_memory",
    "pod_count",
)


def _row(info: NodeInfo) -> tuple[int, ...]:
    a, r, nz = info.allocatable, info.requested, info.non_zero_requested
    return (
        a.milli_cpu,
        a.memory,
        a.ephemeral_storage,
        a.allowed_pod_number,
        r.milli_cpu,
        r.memory,
        r.ephemeral_storage,
        nz.milli_cpu,
        nz.memory,
        len(info.pods),
    )


def _taint_key(taints: list[dict]) -> tuple:
    # What TaintToleration reads of a taint; nodes with equal keys answer alike.
    return tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)


class LabelColumn:
    """One label key over the rows: ``codes[i]`` indexes ``values`` (0: label absent)."""

    __slots__ = ("codes", "values", "lookup")

    def __init__(self, codes: np.ndarray, values: list[str | None], lookup: dict[str, int]):
        self.codes = codes
        self.values = values
        self.lookup = lookup

    def mask(self, accept: Any) -> np.ndarray:
        """Rows whose value (``None`` when absent) satisfies ``accept(value)``."""
        table = np.fromiter((bool(accept(v)) for v in self.values), bool, len(self.values))
        return table[self.codes]

    def mask_values(self, answers: Iterable[tuple[str, bool]], default: bool) -> np.ndarray:
        """Rows whose value is listed in ``answers`` get its answer, rows with another value
        ``default``, rows without the label False: O(answers), not O(distinct values)."""
        table = np.full(len(self.values), default, dtype=bool)
        table[0] = False
        lookup = self.lookup
        for value, answer in answers:
            code = lookup.get(value)
            if code is not None:
                table[code] = answer
        return table[self.codes]

    def map(self, values: Sequence[Any], dtype: Any = np.int64) -> np.ndarray:
        """``values[code]`` for every row (``values`` indexed like :attr:`values`)."""
        return np.asarray(values, dtype=dtype)[self.codes]


class NodeTable:
    """Columns over ``infos`` (a snapshot's node list, in its order)."""

    __slots__ = (
        "infos",
        "names",
        "index",
        "exact",
        "unschedulable",
        "has_node",
        "generations",
        "_labels",
        "_taints",
        "_scalars",
        "_images",
        "_image_base",
        "extras",
        "_base",
        "changed",
        "_pairs",
        "_pair_bases",
        *_INT_COLUMNS,
    )

    alloc_milli_cpu: np.ndarray
    alloc_memory: np.ndarray
    alloc_ephemeral: np.ndarray
    alloc_pods: np.ndarray
    req_milli_cpu: np.ndarray
    req_memory: np.ndarray
    req_ephemeral: np.ndarray
    nz_milli_cpu: np.ndarray
    nz_memory: np.ndarray
    pod_count: np.ndarray

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        # The snapshot's own list (never mutated), so `rows(snapshot.node_info_list)` is free.
        self.infos = infos if isinstance(infos, list) else list(infos)
        self.names = [info.name for info in self.infos]
        self.index = {name: i for i, name in enumerate(self.names)}
        rows = [_row(info) for info in self.infos]
        n = len(rows)
        try:
            # One conversion; an amount beyond int64 raises, one beyond SAFE_AMOUNT is seen
            # by the maximum: either way the table is not exact.
            matrix = np.array(rows, dtype=np.int64).reshape(n, len(_INT_COLUMNS))
            self.exact = not n or (
                int(matrix.min()) > -SAFE_AMOUNT and int(matrix.max()) < SAFE_AMOUNT
            )
        except OverflowError:
            self.exact = False
        if not self.exact:
            matrix = np.zeros((n, len(_INT_COLUMNS)), dtype=np.int64)
        for j, column in enumerate(_INT_COLUMNS):
            setattr(self, column, np.ascontiguousarray(matrix[:, j]))
        self.unschedulable = np.fromiter((i.unschedulable for i in self.infos), bool, n)
        self.has_node = np.fromiter((i.node is not None for i in self.infos), bool, n)
        self.generations = np.fromiter(map(attrgetter("generation"), self.infos), np.int64, n)
        self._labels: dict[str, LabelColumn] = {}
        self._taints: tuple[np.ndarray, list[list[dict]], dict[tuple, int]] | None = None
        self._scalars: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._images: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        # (the parent table's image columns, the rows that differ from the parent's), or None
        self._image_base: tuple[dict, list[int]] | None = None
        # Data plugins derive from the table, under plugin-owned keys (see `derived`).
        self.extras: dict[str, Any] = {}
        # The parent's extras and node list (see `derived`); None for a table built anew.
        self._base: tuple[dict[str, Any], list[NodeInfo]] | None = None
        self.changed: tuple[int, ...] = ()
        self._pairs: dict[tuple[str, str], PairEntry] = {}
        # (an ancestor table's pair entries, the rows that differ from that ancestor's)
        self._pair_bases: list[tuple[dict[tuple[str, str], PairEntry], frozenset[int]]] = []

    def __len__(self) -> int:
        return len(self.infos)

    def rows(self, infos: Sequence[NodeInfo]) -> np.ndarray | None:
        """The rows of ``infos``, or ``None`` if one of them is not this table's NodeInfo
        (a clone, or a node of another snapshot): batch forms then do not apply."""
        mine = self.infos
        if infos is mine:
            return np.arange(len(mine))
        if not infos:
            return np.zeros(0, dtype=np.int64)
        index = self.index
        try:
            # C-level passes: the rows by name, then the same NodeInfo objects at those rows.
            found = [index[name] for name in map(attrgetter("name"), infos)]
        except KeyError:
            return None
        if not all(map(is_, infos, map(mine.__getitem__, found))):
            return None
        return np.array(found, dtype=np.int64)

    # -- columns on demand ----------------------------------------------------------------

    def labels(self, key: str) -> LabelColumn:
        column = self._labels.get(key)
        if column is None:
            values: list[str | None] = [None]
            lookup: dict[str, int] = {}
            codes = np.empty(len(self.infos), dtype=np.int32)
            for i, info in enumerate(self.infos):
                value = info.labels.get(key)
                if value is None:
                    codes[i] = 0
                    continue
                code = lookup.get(value)
                if code is None:
                    code = lookup[value] = len(values)
                    values.append(value)
                codes[i] = code
            column = self._labels[key] = LabelColumn(codes, values, lookup)
        return column

    def taint_groups(self) -> tuple[np.ndarray, list[list[dict]]]:
        """``(group per row, taints of each group)``."""
        if self._taints is None:
            groups: list[list[dict]] = []
            lookup: dict[tuple, int] = {}
            codes = np.empty(len(self.infos), dtype=np.int32)
            for i, info in enumerate(self.infos):
                key = _taint_key(info.taints)
                code = lookup.get(key)
                if code is None:
                    code = lookup[key] = len(groups)
                    groups.append(info.taints)
                codes[i] = code
            self._taints = (codes, groups, lookup)
        return self._taints[0], self._taints[1]

    def scalar(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``(allocatable, requested)`` of a scalar resource; ``None`` if not int64-safe."""
        pair = self._scalars.get(name)
        if pair is None:
            alloc = [info.allocatable.scalar.get(name, 0) for info in self.infos]
            req = [info.requested.scalar.get(name, 0) for info in self.infos]
            if not all(-SAFE_AMOUNT < v < SAFE_AMOUNT for v in (*alloc, *req)):
                return None
            pair = self._scalars[name] = (
                np.array(alloc, dtype=np.int64),
                np.array(req, dtype=np.int64),
            )
        return pair

    def image_states(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``(size, num_nodes)`` of image ``name`` per row, from each row's
        ``NodeInfo.image_states`` (0, 0 where the node does not have it); ``None`` if an
        amount is not int64-safe. Read when first asked: a derived table's replaced rows
        get their image states from the snapshot after the table was derived."""
        if name in self._images:
            return self._images[name]
        base = self._image_base
        parent = base[0].get(name) if base is not None else None
        rows: Sequence[int]
        if parent is not None and base is not None:
            sizes, counts = parent[0].copy(), parent[1].copy()
            rows = base[1]
        else:
            sizes = np.zeros(len(self.infos), dtype=np.int64)
            counts = np.zeros(len(self.infos), dtype=np.int64)
            rows = range(len(self.infos))
        infos = self.infos
        pair: tuple[np.ndarray, np.ndarray] | None = (sizes, counts)
        for i in rows:
            state = infos[i].image_states.get(name)
            if state is None:
                sizes[i] = counts[i] = 0
            elif -SAFE_AMOUNT < state.size < SAFE_AMOUNT and 0 <= state.num_nodes < SAFE_AMOUNT:
                sizes[i], counts[i] = state.size, state.num_nodes
            else:
                pair = None
                break
        self._images[name] = pair
        return pair

    def pods_with_label(self, key: str, value: str) -> PairEntry:
        """``(rows, pods)``: every pod of the table's nodes carrying the label ``key=value``
        (``NodeInfo.pods_with_label`` of each row, read when first asked) and the row of each,
        in parallel. The order of the pods is unspecified. Read-only: the entry is shared.

        A derived table patches an ancestor's entry (its rows changed since are re-read);
        otherwise one pass over the rows' label indexes builds it."""
        pair = (key, value)
        entry = self._pairs.get(pair)
        if entry is not None:
            return entry
        infos = self.infos
        for pairs, changed in self._pair_bases:
            base = pairs.get(pair)
            if base is None:
                continue
            rows, pods = base
            if changed:
                ordered = sorted(changed)
                keep = ~np.isin(rows, ordered)
                new_rows = rows[keep].tolist()
                new_pods = [p for p, k in zip(pods, keep.tolist(), strict=True) if k]
                for i in ordered:
                    found = infos[i].pods_with_label(key, value)
                    new_rows.extend([i] * len(found))
                    new_pods.extend(found)
                entry = (np.array(new_rows, dtype=np.int64), new_pods)
            else:
                entry = base
            break
        else:
            all_rows: list[int] = []
            all_pods: list[PodInfo] = []
            for i, info in enumerate(infos):
                found = info.pods_with_label(key, value)
                if found:
                    all_rows.extend([i] * len(found))
                    all_pods.extend(found)
            entry = (np.array(all_rows, dtype=np.int64), all_pods)
        self._pairs[pair] = entry
        return entry

    def candidates(self, selector: LabelSelector) -> PairEntry | None:
        """``(rows, pods)`` of the table's pods that can match ``selector`` (the table-wide
        ``NodeInfo.candidates``): those carrying a pair of its selective requirement with the
        fewest such pods; empty for a selector matching nothing; ``None`` when the selector
        has no selective requirement (every pod could match: the caller walks the nodes).
        Callers still apply their full check (namespace, whole selector, deletion)."""
        if selector.matches_nothing:
            return _NO_PODS
        if not selector.selective:
            return None
        best: PairEntry | None = None
        for key, values in selector.selective:
            if len(values) == 1:
                found = self.pods_with_label(key, values[0])
            else:
                entries = [self.pods_with_label(key, value) for value in values]
                found = (
                    np.concatenate([rows for rows, _ in entries]),
                    [p for _, pods in entries for p in pods],
                )
            if best is None or len(found[1]) < len(best[1]):
                if not found[1]:
                    return _NO_PODS
                best = found
        return best

    # -- incremental ----------------------------------------------------------------------

    def derive(self, infos: Sequence[NodeInfo], changed: Sequence[int]) -> NodeTable:
        """The table of ``infos``: this table's node list with the rows ``changed`` replaced
        (same names, same order). Costs the copy of the columns plus the changed rows."""
        table = NodeTable.__new__(NodeTable)
        table.infos = infos if isinstance(infos, list) else list(infos)
        table.names = self.names
        table.index = self.index
        changed_rows = [_row(table.infos[i]) for i in changed]
        table.exact = self.exact and all(
            -SAFE_AMOUNT < v < SAFE_AMOUNT for row in changed_rows for v in row
        )
        # Columns are never written once built: a column whose changed rows keep their
        # values is the parent's own array (pod changes move the requested amounts and the
        # pod count, never the allocatable, the labels or the taints), else a patched copy.
        for j, name in enumerate(_INT_COLUMNS):
            amounts = getattr(self, name)
            if table.exact:
                updates = [
                    (i, row[j])
                    for i, row in zip(changed, changed_rows, strict=True)
                    if amounts[i] != row[j]
                ]
                if updates:
                    amounts = amounts.copy()
                    for i, amount in updates:
                        amounts[i] = amount
            setattr(table, name, amounts)
        table.unschedulable, table.has_node = self.unschedulable, self.has_node
        flags = [
            (i, table.infos[i].unschedulable, table.infos[i].node is not None) for i in changed
        ]
        if any(
            table.unschedulable[i] != unschedulable or table.has_node[i] != has_node
            for i, unschedulable, has_node in flags
        ):
            table.unschedulable = self.unschedulable.copy()
            table.has_node = self.has_node.copy()
            for i, unschedulable, has_node in flags:
                table.unschedulable[i] = unschedulable
                table.has_node[i] = has_node
        # Generations differ on every changed row (that is what made it changed).
        table.generations = self.generations.copy()
        for i in changed:
            table.generations[i] = table.infos[i].generation
        table._labels = {}
        for key, column in self._labels.items():
            codes, values, lookup = column.codes, column.values, column.lookup
            for i in changed:
                value = table.infos[i].labels.get(key)
                code = 0
                if value is not None:
                    found = lookup.get(value)
                    if found is None:
                        if values is column.values:  # copy on first write: the parent's stay
                            values, lookup = list(values), dict(lookup)
                        found = lookup[value] = len(values)
                        values.append(value)
                    code = found
                if codes[i] != code:
                    if codes is column.codes:
                        codes = codes.copy()
                    codes[i] = code
            if codes is column.codes and values is column.values:
                table._labels[key] = column
            else:
                table._labels[key] = LabelColumn(codes, values, lookup)
        table._taints = None
        if self._taints is not None:
            codes, groups, taint_lookup = self._taints
            parent_codes = codes
            for i in changed:
                taints = table.infos[i].taints
                group = _taint_key(taints)
                taint_code = taint_lookup.get(group)
                if taint_code is None:
                    if groups is self._taints[1]:
                        groups, taint_lookup = list(groups), dict(taint_lookup)
                    taint_code = taint_lookup[group] = len(groups)
                    groups.append(taints)
                if codes[i] != taint_code:
                    if codes is parent_codes:
                        codes = codes.copy()
                    codes[i] = taint_code
            table._taints = (codes, groups, taint_lookup)
        # Scalar columns are rare and cheap to rebuild: not carried over.
        table._scalars = {}
        # Image columns: the parent's, with the changed rows re-read on first use (the snapshot
        # fills the replaced NodeInfos' image states after deriving the table). Only the
        # parent's dict is kept, not the parent table: no chain of tables stays alive.
        table._images = {}
        table._image_base = (self._images, list(changed))
        table.extras = {}
        # The parent's extras and node list only, not the parent table: overlays made one
        # after the other do not keep every earlier table alive.
        table._base = (self.extras, self.infos)
        table.changed = tuple(changed)
        # Pair entries: the parent's and a few ancestors', each patched on first use for the
        # rows changed since (the dicts only, never the tables; an ancestor's dict only ever
        # gains entries built for that ancestor's rows, so branching derives stay exact).
        now = frozenset(changed)
        table._pairs = {}
        table._pair_bases = [(self._pairs, now)] + [
            (pairs, rows | now) for pairs, rows in self._pair_bases[: _PAIR_BASES - 1]
        ]
        return table

    def derived(self, key: str, build: Callable[[NodeTable], T], update: Callable[..., T]) -> T:
        """Plugin data computed from the table, once per table: ``build(table)`` from scratch,
        or ``update(parent_value, parent_infos, table)`` when the table this one was derived
        from had computed it and only the rows in :attr:`changed` differ (``parent_infos[row]``
        is the NodeInfo the parent had there). ``update`` must not mutate the parent's value
        (copy what it changes). A row changed in place (``Snapshot.refresh``) leaves nothing
        to compare with: the value is built anew."""
        value = self.extras.get(key, _MISSING)
        if value is not _MISSING:
            return value
        base = self._base
        if base is not None and base[1] is not self.infos and key in base[0]:
            value = update(base[0][key], base[1], self)
        else:
            value = build(self)
        self.extras[key] = value
        return value
