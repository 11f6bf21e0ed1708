"""PodInfo built from an earlier version of the same pod (``previous``) answers what a fresh
parse answers: it takes over the parse of the parts that are equal, and only those."""

from __future__ import annotations

import copy

from extender.framework.cycle_state import CycleState
from extender.framework.pod_info import PodInfo

FIELDS = (
    "key",
    "name",
    "namespace",
    "labels",
    "node_name",
    "non_zero_milli_cpu",
    "non_zero_memory",
    "host_ports",
)


def _pod() -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "a"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                }
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "a"}},
                            "matchLabelKeys": ["zone"],
                        }
                    ]
                }
            },
        },
    }


def _same(a: PodInfo, b: PodInfo) -> None:
    for field in FIELDS:
        assert getattr(a, field) == getattr(b, field), field
    assert vars_of(a.requests) == vars_of(b.requests)
    assert [t.key for t in a.required_anti_affinity_terms] == [
        t.key for t in b.required_anti_affinity_terms
    ]


def vars_of(resource: object) -> tuple:
    return tuple(
        getattr(resource, name) for name in ("milli_cpu", "memory", "ephemeral_storage", "scalar")
    )


def test_the_assumed_copy_takes_over_the_parse_of_the_pending_pod() -> None:
    pending = PodInfo(_pod())
    assumed_pod = copy.copy(pending.pod)
    assumed_pod["spec"] = {**pending.pod["spec"], "nodeName": "n1"}
    assumed = PodInfo(assumed_pod, pending)
    assert assumed.pod is assumed_pod and assumed.node_name == "n1"
    assert assumed.requests is pending.requests  # taken over, not parsed again
    assert assumed.required_anti_affinity_terms is pending.required_anti_affinity_terms
    _same(assumed, PodInfo(assumed_pod))


def test_changed_labels_rebuild_the_terms_and_changed_specs_everything() -> None:
    pending = PodInfo(_pod())
    bound = copy.deepcopy(pending.pod)
    bound["spec"]["nodeName"] = "n1"
    bound["metadata"]["labels"]["zone"] = "z1"  # as the binding adds topology labels
    relabelled = PodInfo(bound, pending)
    assert relabelled.requests is pending.requests
    assert relabelled.required_anti_affinity_terms is not pending.required_anti_affinity_terms
    _same(relabelled, PodInfo(bound))
    assert relabelled.required_anti_affinity_terms[0].key != (
        pending.required_anti_affinity_terms[0].key
    )  # matchLabelKeys took the new label in
    resized = copy.deepcopy(bound)
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    resized_info = PodInfo(resized, relabelled)
    assert resized_info.requests.milli_cpu == 1000
    _same(resized_info, PodInfo(resized))


def test_cycle_state_hands_out_its_pod_info_for_that_very_pod_only() -> None:
    state = CycleState()
    info = PodInfo(_pod())
    state.pod_info = info
    assert state.parsed_pod(info.pod) is info
    other = copy.deepcopy(info.pod)
    assert state.parsed_pod(other) is not info
    assert state.clone().parsed_pod(info.pod) is info
