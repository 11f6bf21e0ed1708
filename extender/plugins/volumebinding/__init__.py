"""VolumeBinding (PreFilter, Filter, PreScore/Score, Reserve/Unreserve, PreBind): binds a pod's
PersistentVolumeClaims as part of scheduling (upstream
``pkg/scheduler/framework/plugins/volumebinding``, v1.36, split the same way).

* PreFilter: every claim must exist (``persistentvolumeclaim "x" not found``), not be Lost or
  being deleted, and every unbound claim must be of a WaitForFirstConsumer class (else
  ``pod has unbound immediate PersistentVolumeClaims``); both UnschedulableAndUnresolvable. No
  claim: Skip. Bound claims whose PVs are pinned to hostnames restrict the cycle to those nodes.
* Filter (``FindPodVolumes``): bound PVs' node affinity must match the node; each unbound
  claim needs a matching Available static PV (class, capacity, volume mode, selector, access
  modes, node affinity; the smallest wins, one PV per claim) or else dynamic provisioning:
  a class provisioner (not ``kubernetes.io/no-provisioner``), the class's allowedTopologies,
  and, for a CSIDriver with ``storageCapacity: true``, a CSIStorageCapacity of the class that
  the node can reach and that is large enough.
* Score: only with the StorageCapacityScoring feature, alpha and off in v1.36: PreScore Skips.
* Reserve assumes the chosen bindings in an in-memory cache shared by cycles (so the next pod
  does not take the same PV), Unreserve restores it.
* PreBindPreFlight: Skip when Reserve found every claim bound, else Success (the standalone
  scheduler then sets the pod's ``nominatedNodeName`` before PreBind).
* PreBind (standalone scheduler only: the extender never reserves or binds) writes the PV's
  ``claimRef`` or the claim's ``volume.kubernetes.io/selected-node`` annotation, then polls
  the API objects every second until the claims are bound, failing on a reset claimRef,
  a dropped selected-node (provisioning failed) or after ``bindTimeoutSeconds`` (600).

Modules, as upstream's files: :mod:`.assume_cache` (``assume_cache.go``), :mod:`.binder`
(``binder.go``), :mod:`.plugin` (``volume_binding.go``: the plugin class, its args and events).
The volume helpers VolumeBinding shares with the other volume plugins are in
``extender/plugins/volume_util.py``.
"""

from __future__ import annotations

from .plugin import VolumeBinding

__all__ = ["VolumeBinding"]
