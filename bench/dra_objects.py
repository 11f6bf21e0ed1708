"""The DRA objects of upstream's scheduler_perf ``SchedulingWithResourceClaimTemplate``
(``test/integration/scheduler_perf/dra/``), shared by ``bench/dra.py`` (through the API) and
``bench/dra_core.py`` (in process). Plain dicts; imports nothing of the project, so another
tree's ``extender`` can be measured with them (``--base``)."""

from __future__ import annotations

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"


def resource_slice(node: str, devices: int) -> dict:
    """The slice a node-local driver publishes for ``node`` (upstream's ``resourceSlice``)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def claim_spec() -> dict:
    """One device of ``test-class`` (upstream's ``resourceclaimtemplate.yaml`` spec)."""
    return {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": CLASS}}]}}


def resource_claim(name: str, namespace: str) -> dict:
    """A claim of :func:`claim_spec`, as a user (or the resourceclaim-controller) creates it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(),
    }


def allocation(node: str, device: str) -> dict:
    """``status.allocation`` of a :func:`claim_spec` claim given ``device`` of ``node``'s slice."""
    return {
        "devices": {
            "results": [{"request": "req-0", "driver": DRIVER, "pool": node, "device": device}]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        },
    }


def device_class() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
