"""The batch forms (``filter_batch`` / ``score_batch`` over the node table) decide exactly as
the per-node reference path: same feasible nodes in the same order, same status (plugin,
code, reasons) for every rejected node, same round-robin index, same scores per plugin.

Clusters: the conformance generator's seeded cases (every filter plugin's corner cases, small
clusters, every node visited) and the benchmark's `mixed` workload on a few hundred nodes
(default percentage of nodes to score: the early stop and the round-robin start matter).
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from bench.workload import make_cluster, mixed_pod
from extender import testing
from extender.config import default_profile
from extender.framework import CycleState, Framework, SchedulingAlgorithm, Snapshot
from extender.framework.columns import NodeTable
from extender.framework.interfaces import (
    BatchFilterPlugin,
    BatchNormalizeScore,
    BatchScorePlugin,
)
from extender.framework.results import NodeScore
from extender.framework.schedule import FitError, SchedulingError
from extender.framework.status import is_success
from extender.plugins import in_tree_registry
from tests.conformance.generator import generate
from tests.conformance.harness import ApiObjects
from tests.unit.plugins import batch_cases


def _frameworks(objects: ApiObjects | None = None) -> tuple[Framework, Framework]:
    services = objects.services() if objects is not None else None
    batch = Framework(default_profile(), in_tree_registry(), services)
    reference = Framework(default_profile(), in_tree_registry(), services)
    reference.use_batch = False
    assert batch._batch_filters, "no plugin has a batch filter form"
    return batch, reference


def _decide(
    fwk: Framework, algo: SchedulingAlgorithm, snapshot: Snapshot, pod: dict, evaluate_all: bool
) -> dict:
    state = CycleState()
    out: dict = {}
    try:
        feasible, diagnosis = algo.find_nodes_that_fit(
            fwk, state, copy.deepcopy(pod), snapshot, evaluate_all=evaluate_all
        )
    except SchedulingError as exc:
        return {"error": str(exc)}
    out["feasible"] = [info.name for info in feasible]
    out["statuses"] = {
        name: (s.plugin, s.code, tuple(s.reasons)) for name, s in diagnosis.node_to_status.items()
    }
    out["next"] = algo.next_start_node_index
    if len(feasible) > 1:
        try:
            scores = algo.prioritize_nodes(fwk, state, pod, feasible)
        except SchedulingError as exc:  # e.g. preferred terms that do not parse
            out["scores"] = str(exc)
        else:
            out["scores"] = [(s.name, dict(s.scores), s.total_score) for s in scores]
    return out


def _compare(snapshot: Snapshot, pods: list[dict], objects: ApiObjects | None, **kw: bool) -> int:
    """Both paths decide each pod alike (and the runtime never had to overrule a batch form:
    see the caplog check of the callers)."""
    batch, reference = _frameworks(objects)
    algo_b, algo_r = SchedulingAlgorithm(), SchedulingAlgorithm()
    compared = 0
    for pod in pods:
        ours = _decide(batch, algo_b, snapshot, pod, kw.get("evaluate_all", False))
        theirs = _decide(reference, algo_r, snapshot, pod, kw.get("evaluate_all", False))
        assert ours == theirs, pod["metadata"]["name"]
        compared += 1
    return compared


@pytest.mark.parametrize("seed", range(1, 41))
def test_generated_cases_decide_alike(seed: int) -> None:
    case = generate(seed, pods=25, max_nodes=8)
    objects = ApiObjects(namespace_labels=case.namespaces, workloads={})
    snapshot = Snapshot.from_objects(copy.deepcopy(case.nodes), copy.deepcopy(case.existing_pods))
    pods = [copy.deepcopy(p) for p in case.pending_pods]
    for i, pod in enumerate(pods):
        pod["metadata"].setdefault("uid", f"uid-{seed}-{i}")
    assert _compare(snapshot, pods, objects, evaluate_all=True) == len(pods)


def _plugin_by_plugin(snapshot: Snapshot, pods: list[dict], objects: ApiObjects | None) -> int:
    """Each batch form against its own per-node method on every row (after PreFilter and
    PreScore over all nodes), so a batch answer the runtime would double-check, or one that
    NormalizeScore would hide (a scaled score), is still caught. Returns the rows compared."""
    fwk, _ = _frameworks(objects)
    table = snapshot.table
    everything = snapshot.node_info_list
    rows = 0
    for pod in pods:
        state = CycleState()
        state.snapshot = snapshot
        _, status, _ = fwk.run_pre_filter_plugins(state, pod, everything)
        if status is None:
            for plugin in fwk.filter_plugins:
                if plugin.name in state.skip_filter_plugins:
                    continue
                if isinstance(plugin, BatchFilterPlugin):
                    mask = plugin.filter_batch(state, pod, table)
                    if mask is None:
                        continue
                    expected = [is_success(plugin.filter(state, pod, i)) for i in everything]
                    assert mask.tolist() == expected, (plugin.name, pod["metadata"]["name"])
                    rows += len(expected)
        state = CycleState()
        state.snapshot = snapshot
        if fwk.run_pre_score_plugins(state, pod, everything) is not None:
            continue
        for plugin in fwk.score_plugins:
            if plugin.name in state.skip_score_plugins or not isinstance(plugin, BatchScorePlugin):
                continue
            all_rows = table.rows(everything)
            assert all_rows is not None
            answer = plugin.score_batch(state, pod, table, all_rows)
            if answer is None:
                continue
            expected_scores = [plugin.score(state, pod, i)[0] for i in everything]
            assert answer.tolist() == expected_scores, (plugin.name, pod["metadata"]["name"])
            rows += len(expected_scores)
            ext = plugin.score_extensions()
            if isinstance(ext, BatchNormalizeScore):
                # On these scores and on random ones (negatives, ties, zeros, a single node).
                rng = random.Random(rows)
                for raw in (expected_scores, [rng.randint(-5, 300) for _ in everything]):
                    normalized = ext.normalize_score_batch(
                        state, pod, everything, np.array(raw, dtype=np.int64)
                    )
                    node_scores = [
                        NodeScore(i.name, v) for i, v in zip(everything, raw, strict=True)
                    ]
                    ext.normalize_score(state, pod, node_scores)
                    assert normalized is not None
                    assert normalized.tolist() == [ns.score for ns in node_scores], plugin.name
    return rows


@pytest.mark.parametrize("seed", range(1, 41))
def test_generated_cases_plugin_by_plugin(seed: int) -> None:
    case = generate(seed, pods=25, max_nodes=8)
    objects = ApiObjects(namespace_labels=case.namespaces, workloads={})
    snapshot = Snapshot.from_objects(copy.deepcopy(case.nodes), copy.deepcopy(case.existing_pods))
    assert _plugin_by_plugin(snapshot, copy.deepcopy(case.pending_pods), objects) > 0


def test_mixed_workload_plugin_by_plugin() -> None:
    snapshot = _mixed_snapshot(150, 9)
    pods = [mixed_pod(i, f"pending-{i}", "bench", "default-scheduler") for i in range(20)]
    assert _plugin_by_plugin(snapshot, pods, None) > 0


def _mixed_snapshot(n: int, seed: int) -> Snapshot:
    nodes, pods = make_cluster(n, pods_per_node=4, seed=seed)
    rng = random.Random(seed)
    for node in rng.sample(nodes, n // 10):
        node["spec"]["unschedulable"] = True
    for node in rng.sample(nodes, n // 5):  # some nodes nearly full
        node["status"]["allocatable"] = dict(node["status"]["allocatable"], cpu="1", pods="5")
    for j in range(n):
        pod = mixed_pod(j, f"running-{j}", "bench", "default-scheduler")
        pod["spec"]["nodeName"] = nodes[rng.randrange(n)]["metadata"]["name"]
        pods.append(pod)
    return Snapshot.from_objects(nodes, pods)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mixed_workload_decides_alike_with_early_stop(seed: int) -> None:
    snapshot = _mixed_snapshot(300, seed)
    pods = [mixed_pod(i, f"pending-{i}", "bench", "default-scheduler") for i in range(60)]
    # Requests that fit nowhere, or only on the big nodes: rejections with statuses.
    big = mixed_pod(60, "big", "bench", "default-scheduler")
    big["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "15", "memory": "1Gi"}
    huge = mixed_pod(61, "huge", "bench", "default-scheduler")
    huge["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64", "example.com/gpu": "1"}
    assert _compare(snapshot, [*pods, big, huge], None) == 62


def test_overlay_carries_the_table_over() -> None:
    """A snapshot overlaid with changed NodeInfos derives its table; the derived columns equal
    a table built from scratch over the same nodes."""
    snapshot = _mixed_snapshot(50, 7)
    table = snapshot.table
    table.labels("pool")
    table.taint_groups()
    changed = [info.clone() for info in snapshot.node_info_list[3:6]]
    changed[0].add_pod(mixed_pod(1, "extra", "bench", "default-scheduler"))
    changed[1].labels = {**changed[1].labels, "pool": "brand-new"}
    changed[2].taints = [{"key": "new", "value": "x", "effect": "NoSchedule"}]
    overlaid = snapshot.overlay(changed)
    derived = overlaid.table
    fresh = NodeTable(overlaid.node_info_list)
    assert derived is not table
    for column in ("alloc_milli_cpu", "req_milli_cpu", "req_memory", "pod_count", "nz_memory"):
        assert getattr(derived, column).tolist() == getattr(fresh, column).tolist(), column
    assert derived.unschedulable.tolist() == fresh.unschedulable.tolist()
    d, f = derived.labels("pool"), fresh.labels("pool")
    assert [d.values[c] for c in d.codes] == [f.values[c] for c in f.codes]
    (dc, dg), (fc, fg) = derived.taint_groups(), fresh.taint_groups()
    assert [dg[c] for c in dc] == [fg[c] for c in fc]
    # The parent's columns are untouched.
    assert table.labels("pool").values[table.labels("pool").codes[4]] != "brand-new"
    assert snapshot.table.req_milli_cpu[3] == NodeTable(snapshot.node_info_list).req_milli_cpu[3]


def test_an_overlay_of_pod_changes_shares_the_columns_it_does_not_change() -> None:
    """Columns are never written once built: an overlay whose NodeInfos only gained pods
    shares the parent's allocatable, label and taint columns, copies the requested ones,
    and leaves the parent's as they were."""
    snapshot = _mixed_snapshot(50, 7)
    table = snapshot.table
    table.labels("pool")
    table.taint_groups()
    before = table.req_milli_cpu.tolist()
    changed = [info.clone() for info in snapshot.node_info_list[3:5]]
    for k, info in enumerate(changed):
        info.add_pod(mixed_pod(k, f"extra-{k}", "bench", "default-scheduler"))
    derived = snapshot.overlay(changed).table
    fresh = NodeTable(derived.infos)
    assert derived.alloc_milli_cpu is table.alloc_milli_cpu
    assert derived.unschedulable is table.unschedulable
    assert derived.labels("pool") is table.labels("pool")
    assert derived.taint_groups()[0] is table.taint_groups()[0]
    assert derived.req_milli_cpu is not table.req_milli_cpu
    assert derived.req_milli_cpu.tolist() == fresh.req_milli_cpu.tolist() != before
    assert derived.pod_count.tolist() == fresh.pod_count.tolist()
    assert table.req_milli_cpu.tolist() == before


def test_a_batch_form_that_disagrees_is_caught() -> None:
    """The comparison can fail: a Fit batch form that lets every node pass changes the
    decision for a pod that fits nowhere."""
    snapshot = _mixed_snapshot(120, 4)
    pod = mixed_pod(0, "too-big", "bench", "default-scheduler")
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "100"}
    batch, reference = _frameworks()
    fit = batch.plugins["NodeResourcesFit"]
    fit.filter_batch = lambda state, pod, table: table.pod_count >= 0  # every row passes
    batch._batch_filters = [
        (k, name, fit.filter_batch if name == "NodeResourcesFit" else fn)
        for k, name, fn in batch._batch_filters
    ]
    ours = _decide(batch, SchedulingAlgorithm(), snapshot, pod, False)
    theirs = _decide(reference, SchedulingAlgorithm(), snapshot, pod, False)
    assert theirs["feasible"] == []
    assert ours != theirs or pytest.fail("the wrong batch form went unnoticed")


def test_unschedulable_pod_reports_every_node() -> None:
    snapshot = _mixed_snapshot(200, 5)
    pod = mixed_pod(3, "nowhere", "bench", "default-scheduler")
    pod["spec"]["nodeSelector"] = {"pool": "no-such-pool"}
    batch, _ = _frameworks()
    with pytest.raises(FitError) as err:
        SchedulingAlgorithm().schedule_pod(batch, CycleState(), pod, snapshot)
    assert "0/200 nodes are available" in str(err.value)


SCORE_BATCH_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality")


def test_score_batch_forms_answer_in_the_default_profile() -> None:
    """The comparisons above go through these plugins' score_batch: they are registered and
    answer (do not decline) on the mixed workload."""
    snapshot = _mixed_snapshot(100, 8)
    batch, _ = _frameworks()
    for name in SCORE_BATCH_PLUGINS:
        assert name in batch._batch_scores, name
    answered: dict[str, int] = dict.fromkeys(SCORE_BATCH_PLUGINS, 0)
    for i in range(20):
        pod = mixed_pod(i, f"p-{i}", "bench", "default-scheduler")
        state = CycleState()
        feasible, _ = SchedulingAlgorithm().find_nodes_that_fit(batch, state, pod, snapshot)
        assert batch.run_pre_score_plugins(state, pod, feasible) is None
        table = snapshot.table
        rows = table.rows(feasible)
        for name in SCORE_BATCH_PLUGINS:
            if name in state.skip_score_plugins:
                continue
            answer = batch._batch_scores[name](state, pod, table, rows)
            assert answer is not None, name
            answered[name] += 1
    assert all(answered.values()), answered


@pytest.mark.parametrize("name", SCORE_BATCH_PLUGINS)
def test_a_score_batch_that_disagrees_is_caught(name: str) -> None:
    """The score comparison can fail: a batch form off by one on some rows is noticed."""
    snapshot = _mixed_snapshot(120, 9)
    pods = [mixed_pod(i, f"p-{i}", "bench", "default-scheduler") for i in range(10)]
    batch, reference = _frameworks()
    right = batch._batch_scores[name]

    def wrong(state: CycleState, pod: dict, table: NodeTable, rows: object) -> object:
        answer = right(state, pod, table, rows)
        if answer is None:
            return None
        answer = answer.copy()
        answer[::3] = (answer[::3] + 1) % 101
        return answer

    batch._batch_scores[name] = wrong
    differs = False
    for pod in pods:
        ours = _decide(batch, SchedulingAlgorithm(), snapshot, pod, False)
        theirs = _decide(reference, SchedulingAlgorithm(), snapshot, pod, False)
        differs |= ours != theirs
    assert differs, f"a wrong {name} score_batch went unnoticed"


@pytest.mark.parametrize("seed", range(8))
def test_taints_and_node_affinity_decide_alike(seed: int) -> None:
    """Random taints, tolerations, nodeSelectors, required and preferred node affinity (every
    operator, matchFields, missing labels) through the whole Filter and Score path."""
    rng = random.Random(seed)
    n = rng.randrange(20, 80)
    snapshot = Snapshot.from_objects(batch_cases.nodes(rng, n))
    pods = [batch_cases.affinity_pod(rng, n, f"pod-{seed}-{i}") for i in range(40)]
    assert _compare(snapshot, pods, None, evaluate_all=bool(seed % 2)) == len(pods)


def test_deferred_statuses_resolve_against_the_filter_time_state() -> None:
    """A rejected node's status is computed when first read, from a clone of the cycle state
    taken at filter time: later writes to the state (Reserve, say) do not change it, and the
    evaluated count does not force it."""
    snapshot = _mixed_snapshot(150, 11)
    pod = mixed_pod(3, "picky", "bench", "default-scheduler")
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "15"}
    batch, reference = _frameworks()
    state = CycleState()
    feasible, diagnosis = SchedulingAlgorithm().find_nodes_that_fit(batch, state, pod, snapshot)
    assert diagnosis._deferred, "the batch path deferred no status"
    rejected = diagnosis.rejected_count
    assert diagnosis._deferred, "counting the rejections resolved them"
    state.write("PreFilterNodeResourcesFit", None)  # a later write the statuses must not see
    statuses = {
        n: (s.plugin, s.code, tuple(s.reasons)) for n, s in diagnosis.node_to_status.items()
    }
    assert len(statuses) == rejected
    ref_state = CycleState()
    ref_feasible, ref_diagnosis = SchedulingAlgorithm().find_nodes_that_fit(
        reference, ref_state, pod, snapshot
    )
    assert [i.name for i in feasible] == [i.name for i in ref_feasible]
    assert statuses == {
        n: (s.plugin, s.code, tuple(s.reasons)) for n, s in ref_diagnosis.node_to_status.items()
    }
    assert any(plugin == "NodeResourcesFit" for plugin, _, _ in statuses.values())


def test_node_number_score_batch_equals_score() -> None:
    from extender.plugins.node_number import NodeNumber

    nodes, _ = make_cluster(37)
    nodes[5]["metadata"]["name"] = "no-digit-x"
    snapshot = Snapshot.from_objects(nodes)
    plugin = NodeNumber({}, testing.handle())
    table = snapshot.table
    rows = table.rows(snapshot.node_info_list)
    assert rows is not None
    for name in ("pod-3", "pod-0", "pod-9"):
        pod = {"metadata": {"name": name}}
        state = CycleState()
        assert plugin.pre_score(state, pod, snapshot.node_info_list) is None
        answer = plugin.score_batch(state, pod, table, rows[::-1])
        expected = [plugin.score(state, pod, i)[0] for i in snapshot.node_info_list[::-1]]
        assert answer is not None and answer.tolist() == expected
        assert 0 < expected.count(100) < len(expected)


@pytest.mark.parametrize("seed", range(0, 120, 3))
def test_counting_scenarios_plugin_by_plugin(seed: int) -> None:
    """The counting plugins' batch forms on clusters with terminating pods, three namespaces
    (with namespaceSelector terms), hostname/zone/rack spreading and overlays of changed
    clones (the scenarios of tests/unit/plugins/test_counting_index.py)."""
    from tests.unit.plugins import test_counting_index as scenarios

    rng = random.Random(seed)
    nodes, pods = scenarios.cluster(rng)
    snapshot = scenarios.mutated_snapshot(rng, nodes, pods)
    objects = ApiObjects(namespace_labels=scenarios.NAMESPACE_LABELS, workloads={})
    incoming = [scenarios.incoming(rng) for _ in range(6)]
    for i, pod in enumerate(incoming):
        pod["metadata"]["name"] = f"incoming-{i}"
        pod["metadata"]["uid"] = f"uid-incoming-{i}"
    assert _plugin_by_plugin(snapshot, incoming, objects) > 0
    assert _compare(snapshot, incoming, objects, evaluate_all=True) == len(incoming)


@pytest.mark.parametrize("quantity", ["1e999", "-1e999", "9223372036854775807"])
def test_a_table_with_an_amount_beyond_int64_room_is_not_exact(quantity: str) -> None:
    """Saturated quantities (either sign) make the table inexact: batch forms decline."""
    nodes, _ = make_cluster(3)
    nodes[1]["status"]["allocatable"] = dict(nodes[1]["status"]["allocatable"], memory=quantity)
    assert not Snapshot.from_objects(nodes).table.exact
    assert Snapshot.from_objects(make_cluster(3)[0]).table.exact
