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


def device_class() -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
