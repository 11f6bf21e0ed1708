"""Pod group states (upstream ``pkg/scheduler/backend/cache/podgroupstate.go``): members move
between unscheduled, assumed and assigned as the informers and the scheduler report them."""

from __future__ import annotations

import pytest

from extender.framework.podgroups import (
    PodGroupStateNotFound,
    PodGroupStates,
    gang_min_count,
    pod_group_key,
)
from tests.unit.builders import make_pod


def member(name: str, node: str | None = None) -> dict:
    return make_pod(name, uid=f"uid-{name}", node_name=node, schedulingGroup={"podGroupName": "pg"})


def counts(states: PodGroupStates) -> tuple[int, int, int]:
    state = states.get("default", "pg")
    return state.all_pods_count(), len(state.unscheduled), state.scheduled_pods_count()


def test_a_member_goes_from_pending_to_assumed_to_bound() -> None:
    states = PodGroupStates()
    pod = member("a")
    states.add_pod(pod)
    assert counts(states) == (1, 1, 0)
    assumed = member("a", node="n1")
    states.assume_pod(assumed)
    assert counts(states) == (1, 0, 1)
    states.forget_pod(assumed)
    assert counts(states) == (1, 1, 0)
    states.assume_pod(assumed)
    states.add_pod(assumed)  # the informer reports it bound
    state = states.get("default", "pg")
    assert state.assigned == {"uid-a"} and not state.assumed
    assert [p["metadata"]["name"] for p in state.scheduled_pods()] == ["a"]


def test_get_is_a_copy_and_an_empty_group_is_forgotten() -> None:
    states = PodGroupStates()
    states.add_pod(member("a"))
    copy = states.get("default", "pg")
    copy.assume_pod(member("a", node="n1"))
    assert counts(states) == (1, 1, 0)
    states.remove_pod(member("a"))
    with pytest.raises(PodGroupStateNotFound, match="pod group state not found"):
        states.get("default", "pg")


def test_pods_without_a_group_and_groups_without_a_gang() -> None:
    states = PodGroupStates()
    states.add_pod(make_pod("loner"))
    assert states.groups() == []
    assert pod_group_key(member("a")) == ("default", "pg")
    assert gang_min_count({"spec": {"schedulingPolicy": {"basic": {}}}}) is None
    assert gang_min_count({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}) == 3
