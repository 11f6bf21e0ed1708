"""The allocator's fast paths decide exactly as the reference paths they shortcut.

* ``_pools_for_node``: ``gather_pools`` memoised per node across allocators (scheduling
  cycles) while the node and its slices are the same objects.
* ``_plain_capacity``: a request without capacity requests on a device whose capacities have
  no request policy fits without ``request_fits_capacity``'s arithmetic, unless something is
  consumed already.
* ``_Run._prepare_claim_memoised``: a claim's requests validated once per allocator (cycle)
  while the claim and its DeviceClasses are the same objects.
* ``_NODE_ANSWERS``: a node's answers (one per shape of claims) kept across allocators while
  its pools, the claims' specs, their classes and the state of the node's devices (taken,
  capacity consumed) are the same; ``Allocator._remembered`` gives them without a ``_Run``.
* ``_allocate_device(..., checked=True)``: the search's loop checked the device's use and
  capacity just before, so they are not asked again.

Each case runs with the fast paths (twice, so the second run reads the memo) and with them
disabled (the reference: ``gather_pools`` every time, ``request_fits_capacity`` always); the
results, the error text and the number of search steps must be equal. The cases: upstream's
whole allocator table and seeded random clusters with capacities, policies, consumed capacity
and multi-allocatable devices; and seeded replays over shareable devices (pods of a few shapes
arrive and leave, the state changing between cycles) asked with and without the kept answers.
"""

from __future__ import annotations

import json
import random

import pytest

from extender.dra.structured import (
    AllocatedState,
    Allocator,
    AllocatorError,
    Features,
    Quantity,
    consumed_capacity_from_json,
    insert_consumed,
)
from extender.dra.structured import allocator as allocator_module
from extender.dra.structured.pools import gather_pools

from .test_allocator import (
    CASES,
    allocated_state_of,
    cel_cache,
    class_lister_of,
    features_of,
    normalize,
)

DRIVER = "gpu.example.com"


def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    def pools(node_name, node, slices, owner):
        return gather_pools(slices, node, owner.features, owner.all_slices)

    monkeypatch.setattr(allocator_module, "_pools_for_node", pools)
    # No node's answer remembered, nor read.
    monkeypatch.setattr(allocator_module, "_answer_device_ids", lambda pools: None)
    monkeypatch.setattr(
        allocator_module.Allocator,
        "_remembered",
        lambda self, node, claims: allocator_module._NOT_KEPT,
    )
    monkeypatch.setattr(allocator_module, "_plain_capacity", lambda device, capacity: False)
    monkeypatch.setattr(
        allocator_module._Run, "_prepare_claim_memoised", allocator_module._Run._prepare_claim
    )
    allocate_device = allocator_module._Run._allocate_device

    def checking(self, r, candidate, must, checked=False):
        return allocate_device(self, r, candidate, must)

    monkeypatch.setattr(allocator_module._Run, "_allocate_device", checking)


def _run(allocator: Allocator, nodes: list[dict | None], claims: list[dict]) -> list:
    """Per node (in order, as Filter calls it): results or error, and the search steps."""
    out = []
    for node in nodes:
        before = allocator.num_allocate_one_invocations
        try:
            answer: object = normalize(allocator.allocate(node, claims))
        except AllocatorError as err:
            answer = f"error: {err}"
        out.append((answer, allocator.num_allocate_one_invocations - before))
    return out


def _answers(out: list) -> list:
    return [answer for answer, _ in out]


def _both(make, nodes, claims, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    allocator_module._NODE_POOLS.clear()
    allocator_module._PLAIN_CAPACITY.clear()
    allocator_module._NODE_ANSWERS.clear()
    with monkeypatch.context() as m:
        # The search itself (its steps are compared): no node's answer remembered.
        m.setattr(allocator_module, "_answer_device_ids", lambda pools: None)
        fast = _run(make(), nodes, claims)
        fast_again = _run(make(), nodes, claims)  # a new cycle: the pools come from the memo
    assert fast_again == fast
    # With the nodes' answers remembered (the same cycle and the next): the same answers.
    allocator_module._NODE_ANSWERS.clear()
    remembered = _run(make(), nodes, claims) + _run(make(), nodes, claims)
    assert _answers(remembered) == _answers(fast + fast)
    with monkeypatch.context() as m:
        _reference(m)
        reference = _run(make(), nodes, claims)
    return fast, reference


@pytest.mark.parametrize(
    "case", CASES, ids=[c["name"].removeprefix("TestAllocator/") for c in CASES]
)
def test_upstream_case_same_with_fast_paths(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> Allocator:
        return Allocator(
            features_of(case),
            allocated_state_of(case),
            class_lister_of(case),
            case.get("slices") or [],
            cel_cache(),
        )

    # The node twice: the second call reads the claims' memo.
    nodes = [case["node"], case["node"]]
    fast, reference = _both(make, nodes, case.get("claims") or [], monkeypatch)
    assert fast == reference


def _random_cluster(rng: random.Random) -> tuple[list[dict], list[dict], list[dict], dict]:
    nodes = [{"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}}} for i in range(3)]
    slices = []
    for node in nodes:
        name = node["metadata"]["name"]
        devices = []
        for d in range(rng.randint(0, 4)):
            device: dict = {"name": f"dev-{d}"}
            if rng.random() < 0.7:
                capacity: dict = {"value": rng.choice(["1Gi", "4Gi", "8", "100m"])}
                if rng.random() < 0.3:
                    capacity["requestPolicy"] = rng.choice(
                        [
                            {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}},
                            {"validValues": ["1Gi", "2Gi"]},
                            {"default": "2"},
                        ]
                    )
                device["capacity"] = {"memory": capacity}
            if rng.random() < 0.3:
                device["allowMultipleAllocations"] = True
            devices.append(device)
        slices.append(
            {
                "metadata": {"name": f"{name}-slice"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    if rng.random() < 0.3:  # a pool with a missing slice: incomplete, reads all slices
        slices.append(
            {
                "metadata": {"name": "partial"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": "n0",
                    "pool": {"name": "partial", "generation": 1, "resourceSliceCount": 2},
                    "devices": [{"name": "p0"}],
                },
            }
        )
    claims = []
    for c in range(rng.randint(1, 2)):
        exactly: dict = {
            "deviceClassName": "gpu",
            "allocationMode": "ExactCount",
            "count": rng.randint(1, 2),
        }
        if rng.random() < 0.3:
            exactly["capacity"] = {"requests": {"memory": rng.choice(["1Gi", "512Mi", "3"])}}
        claims.append(
            {
                "metadata": {"name": f"claim-{c}", "namespace": "ns", "uid": f"uid-{c}"},
                "spec": {"devices": {"requests": [{"name": "req", "exactly": exactly}]}},
            }
        )
    device_class = {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    return nodes, slices, claims, device_class


def _random_state(rng: random.Random, slices: list[dict]) -> AllocatedState:
    state = AllocatedState()
    for slice_ in slices:
        pool = slice_["spec"]["pool"]["name"]
        for device in slice_["spec"]["devices"]:
            device_id = (DRIVER, pool, device["name"])
            roll = rng.random()
            if roll < 0.2:
                state.allocated_devices.add(device_id)
            elif roll < 0.4 and "capacity" in device:
                state.aggregated_capacity[device_id] = {"memory": Quantity.parse("1Gi")}
    return state


@pytest.mark.parametrize("seed", range(300))
def test_random_cluster_same_with_fast_paths(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    nodes, slices, claims, device_class = _random_cluster(rng)
    state = _random_state(rng, slices)
    snapshot = json.dumps([nodes, slices, claims], sort_keys=True)

    def make() -> Allocator:
        return Allocator(Features(), state, {"gpu": device_class}.get, slices, cel_cache())

    fast, reference = _both(make, nodes, claims, monkeypatch)
    assert fast == reference
    assert json.dumps([nodes, slices, claims], sort_keys=True) == snapshot


def test_memo_follows_a_replaced_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """An informer replaces the object it updates: the next cycle must see the new devices."""
    rng = random.Random(7)
    nodes, slices, claims, device_class = _random_cluster(rng)
    claims = claims[:1]
    claims[0]["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    allocator_module._NODE_POOLS.clear()
    empty = [dict(s, spec=dict(s["spec"], devices=[])) for s in slices]

    def allocate(current: list[dict]) -> list | None:
        allocator = Allocator(
            Features(), AllocatedState(), {"gpu": device_class}.get, current, cel_cache()
        )
        return allocator.allocate(nodes[0], claims)

    assert allocate(empty) is None
    with_device = list(empty)
    with_device[0] = dict(empty[0], spec=dict(empty[0]["spec"], devices=[{"name": "new"}]))
    results = allocate(with_device)
    assert results is not None
    assert results[0]["devices"]["results"][0]["device"] == "new"


def test_claim_memo_follows_a_replaced_device_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DeviceClass updated while Filter runs over the nodes: the next node validates and
    selects with the new class, as without the memo."""
    rng = random.Random(3)
    nodes, slices, claims, device_class = _random_cluster(rng)
    for slice_ in slices:
        slice_["spec"]["devices"] = [{"name": "dev-0"}, {"name": "dev-1"}]
    claims = claims[:1]
    claims[0]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1
    claims[0]["spec"]["devices"]["requests"][0]["exactly"].pop("capacity", None)
    narrow = {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": 'device.attributes["x"].y == 1'}}]},
    }

    def make() -> Allocator:
        calls = [0]

        def lister(name: str) -> dict | None:
            calls[0] += 1
            # After the first node, the informer holds a new object for the class.
            return device_class if calls[0] <= 1 else narrow

        return Allocator(Features(), AllocatedState(), lister, slices, cel_cache())

    fast, reference = _both(make, nodes, claims, monkeypatch)
    assert fast == reference
    assert fast[0][0] is not None and str(fast[1][0]).startswith("error: class gpu")


def test_remembered_answer_follows_the_taken_devices_and_the_claim_spec() -> None:
    """A node's kept answer is not reused once one of its devices is taken (the claim of the
    pod before was allocated there) or once the claims ask for something else."""
    rng = random.Random(11)
    nodes, slices, claims, device_class = _random_cluster(rng)
    for slice_ in slices:
        slice_["spec"]["devices"] = [{"name": "dev-0"}, {"name": "dev-1"}]
    slices = [s for s in slices if s["metadata"]["name"] != "partial"]
    claim = claims[0]
    claim["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    allocator_module._NODE_ANSWERS.clear()

    def device(state: AllocatedState, claim: dict) -> str | None:
        allocator = Allocator(Features(), state, {"gpu": device_class}.get, slices, cel_cache())
        results = allocator.allocate(nodes[0], [claim])
        return None if results is None else results[0]["devices"]["results"][0]["device"]

    assert device(AllocatedState(), claim) == "dev-0"
    assert device(AllocatedState(), claim) == "dev-0"
    pool = nodes[0]["metadata"]["name"]
    taken = AllocatedState(allocated_devices={(DRIVER, pool, "dev-0")})
    assert device(taken, claim) == "dev-1"
    two = json.loads(json.dumps(claim))
    two["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert device(taken, two) is None
    assert device(AllocatedState(), two) is not None


# --- remembered answers over a replay: shared devices and consumable capacity ---------------

SHARE_POLICIES = [
    None,
    {"default": "1000", "validRange": {"min": "1", "max": "1000"}},
    {"default": "1000", "validRange": {"min": "100", "max": "1000", "step": "100"}},
    {"default": "500", "validValues": ["250", "500", "1000"]},
]


def _shared_cluster(rng: random.Random) -> tuple[list[dict], list[dict], list[dict], dict]:
    """Nodes with GPUs as the openb importer maps them (extender/replay/gpus.py): each a
    slice of shareable devices with a ``share`` capacity, some exclusive or without
    capacity; the claims of a few shapes, as a trace's pods alternate them."""
    nodes = [{"metadata": {"name": f"n{i}", "labels": {}}} for i in range(rng.randint(2, 5))]
    policy = rng.choice(SHARE_POLICIES)
    slices = []
    for node in nodes:
        name = node["metadata"]["name"]
        devices = []
        for d in range(rng.randint(0, 4)):
            device: dict = {
                "name": f"gpu-{d}",
                "attributes": {"model": {"string": rng.choice(["A", "B"])}},
            }
            roll = rng.random()
            if roll < 0.8:
                share: dict = {"value": rng.choice(["1000", "1000", "800"])}
                if policy is not None:
                    share["requestPolicy"] = policy
                device["capacity"] = {"share": share}
            if roll < 0.7 or 0.8 <= roll < 0.9:
                device["allowMultipleAllocations"] = True
            devices.append(device)
        slices.append(
            {
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    shapes = []
    for _ in range(rng.randint(1, 4)):
        exactly: dict = {
            "deviceClassName": "gpu",
            "allocationMode": "ExactCount",
            "count": rng.choice([1, 1, 1, 2]),
        }
        amount = rng.choice([None, "1000", "500", "250", "300", "1k"])
        if amount is not None:
            exactly["capacity"] = {"requests": {"share": amount}}
        if rng.random() < 0.3:
            model = rng.choice(["A", "B"])
            exactly["selectors"] = [
                {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}
            ]
        shapes.append({"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}})
    device_class = {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    return nodes, slices, shapes, device_class


def _state_of(allocations: list[list[dict]]) -> AllocatedState:
    """The allocated state as the plugin builds it each cycle
    (plugins/dynamicresources/allocation.py): a new one from the allocations in place."""
    state = AllocatedState()
    for results in allocations:
        for result in results:
            for entry in result["devices"].get("results") or ():
                device_id = (entry["driver"], entry["pool"], entry["device"])
                if "shareID" in entry:
                    state.allocated_shared_device_ids.add((*device_id, entry["shareID"]))
                    consumed = consumed_capacity_from_json(entry.get("consumedCapacity") or {})
                    insert_consumed(state.aggregated_capacity, device_id, consumed)
                else:
                    state.allocated_devices.add(device_id)
    return state


def _replay(seed: int) -> tuple[list, list[str]]:
    """Pods arrive (a claim of a random shape each) and sometimes leave; each cycle a new
    allocator over the state of the allocations in place asks every node, as Filter does,
    and the first node with an answer gets the pod. Returns the answers, share IDs made
    equal, and every share ID given."""
    rng = random.Random(seed)
    nodes, slices, shapes, device_class = _shared_cluster(rng)
    in_place: list[list[dict]] = []
    out: list = []
    share_ids: list[str] = []
    for pod in range(40):
        if in_place and rng.random() < 0.25:
            in_place.pop(rng.randrange(len(in_place)))
        spec = json.loads(json.dumps(rng.choice(shapes)))  # a new object, alike
        claim = {"metadata": {"name": f"pod-{pod}", "namespace": "ns", "uid": f"u{pod}"}}
        claim["spec"] = spec
        allocator = Allocator(
            Features(), _state_of(in_place), {"gpu": device_class}.get, slices, cel_cache()
        )
        chosen = None
        for node in nodes:
            try:
                results = allocator.allocate(node, [claim])
            except AllocatorError as err:
                out.append(f"error: {err}")
                continue
            out.append(normalize(results))
            for result in results or ():
                share_ids += [
                    e["shareID"] for e in result["devices"].get("results") or () if "shareID" in e
                ]
            if results is not None and chosen is None:
                chosen = results
        if chosen is not None:
            in_place.append(chosen)
    return out, share_ids


@pytest.mark.parametrize("seed", range(150))
def test_replayed_shared_devices_same_with_remembered_answers(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answers of every node for every pod of a replay over shareable devices with
    consumable capacity (the state changes between cycles, on one node at a time) are the
    search's; a remembered answer's share IDs are new each time it is given."""
    allocator_module._NODE_POOLS.clear()
    allocator_module._NODE_ANSWERS.clear()
    remembered, share_ids = _replay(seed)
    assert len(set(share_ids)) == len(share_ids)
    with monkeypatch.context() as m:
        _reference(m)
        reference, _ = _replay(seed)
    assert remembered == reference


def test_a_nodes_answer_is_remembered_while_another_node_shares_its_devices() -> None:
    """Capacity consumed on another node's device leaves a node's answer remembered (no
    search step); consumed on one of its own devices, it is searched anew, and the answer
    follows (the device is full)."""
    slices = [
        {
            "metadata": {"name": f"{name}-gpus"},
            "spec": {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "gpu-0",
                        "allowMultipleAllocations": True,
                        "capacity": {"share": {"value": "1000"}},
                    }
                ],
            },
        }
        for name in ("n0", "n1")
    ]
    nodes = [{"metadata": {"name": name}} for name in ("n0", "n1")]
    device_class = {"metadata": {"name": "gpu"}, "spec": {}}
    claim = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu",
                            "allocationMode": "ExactCount",
                            "count": 1,
                            "capacity": {"requests": {"share": "600"}},
                        },
                    }
                ]
            }
        },
    }
    allocator_module._NODE_ANSWERS.clear()

    def ask(consumed: dict[str, str]) -> tuple[list[bool], int]:
        state = AllocatedState()
        for pool, amount in consumed.items():
            state.aggregated_capacity[(DRIVER, pool, "gpu-0")] = {"share": Quantity.parse(amount)}
        allocator = Allocator(Features(), state, {"gpu": device_class}.get, slices, cel_cache())
        fits = [allocator.allocate(node, [claim]) is not None for node in nodes]
        return fits, allocator.num_allocate_one_invocations

    assert ask({})[0] == [True, True]
    assert ask({}) == ([True, True], 0)  # both remembered
    fits, steps = ask({"n1": "600"})
    assert fits == [True, False] and steps > 0  # n1 searched anew
    assert ask({"n1": "600"}) == ([True, False], 0)
    assert ask({"n1": "300"})[0] == [True, True]
    # n0's own device: searched anew.
    fits, steps = ask({"n0": "500", "n1": "300"})
    assert fits == [False, True] and steps > 0
