"""Pods held at Permit share one timer thread (upstream ``waiting_pods_map.go``)."""

from __future__ import annotations

import threading

from extender.framework.runtime.waiting_pods import WaitingPod


def test_many_waiting_pods_time_out_on_one_thread() -> None:
    before = threading.active_count()
    pods = [
        WaitingPod({"metadata": {"uid": f"u{i}"}}, "n1", {"Gang": 0.05 + i / 10_000})
        for i in range(300)
    ]
    for pod in pods:
        pod.start()
    assert threading.active_count() <= before + 1
    statuses = [pod.wait(5) for pod in pods]
    assert all(s is not None and s.plugin == "Gang" for s in statuses)
    assert statuses[0].message == "rejected due to timeout after waiting 50ms at plugin Gang"


def test_an_allowed_pod_is_not_rejected_later() -> None:
    pod = WaitingPod({"metadata": {"uid": "u"}}, "n1", {"A": 0.05})
    pod.start()
    pod.allow("A")
    assert pod.wait(1) is None
    threading.Event().wait(0.1)  # past its deadline: the cancelled timeout does nothing
    assert pod.wait(0) is None
