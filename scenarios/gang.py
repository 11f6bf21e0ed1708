"""Gang scheduling: two gangs of four on room for six; the second waits whole until a node appears.

Each gang is a ``scheduling.k8s.io/v1alpha2`` PodGroup with the Gang policy (``minCount: 4``)
and four pods that name it in ``spec.schedulingGroup``. The scheduler places a gang in one pod
group cycle and binds it only if all four fit (docs/gang.md):

* gang-a fits on the two 3-CPU nodes: all four pods are bound, its PodGroup says
  ``PodGroupScheduled=True``;
* gang-b: two of its pods would fit in the room left, but a gang is all or nothing, so none is
  bound; each pod says why (the ones that fit: ``pod group is unschedulable, waiting for
  minCount pods from a gang to be scheduled``; the others: ``Insufficient cpu``) and the
  PodGroup says ``PodGroupScheduled=False`` (Unschedulable, ``pod group is unschedulable``);
* node3 appears: gang-b's pods are retried (after their backoff) and bound, all four.

Upstream's alpha features, off by default in v1.36: ``kube-extender demo`` starts kube-apiserver
and the schedulers with the gates below; against your own cluster see docs/gang.md.
"""

# kube-apiserver (which also serves scheduling.k8s.io/v1alpha2 then) and the scheduler run with
# these, as kube-scheduler's --feature-gates.
FEATURE_GATES = {"GenericWorkload": True, "GangScheduling": True}

GANG_SIZE = 4
GROUP_MESSAGE = "pod group is unschedulable"


def create_gang(kube, name):
    kube.create_pod_group(name, min_count=GANG_SIZE)
    pods = [f"{name}-{i}" for i in range(GANG_SIZE)]
    for pod in pods:
        kube.create_pod(pod, cpu="1", pod_group=name)
    return pods


def scenario(kube):
    kube.create_node("node1", cpu="3")
    kube.create_node("node2", cpu="3")

    first = create_gang(kube, "gang-a")
    for pod in first:
        kube.wait_bound(pod)
    kube.wait_pod_group("gang-a", "True")
    kube.out("  gang-a: all four pods bound in one pod group cycle")

    second = create_gang(kube, "gang-b")
    condition = kube.wait_pod_group("gang-b", "False")
    assert condition["reason"] == "Unschedulable", condition
    assert condition["message"] == GROUP_MESSAGE, condition
    reasons = {pod: kube.wait_unschedulable(pod, timeout=10) for pod in second}
    assert all(GROUP_MESSAGE in why or "Insufficient cpu" in why for why in reasons.values())
    would_fit = sum(GROUP_MESSAGE in why for why in reasons.values())
    kube.out(f"  gang-b: {would_fit} of its pods would fit, none is bound: all or nothing")
    kube.report(second)
    kube.report_pod_groups(["gang-b"])

    kube.create_node("node3", cpu="3")
    for pod in second:
        kube.wait_bound(pod, timeout=60)
    kube.wait_pod_group("gang-b", "True")
    kube.out("  node3 appeared: gang-b bound whole")
    kube.report()
    kube.report_pod_groups(["gang-a", "gang-b"])
