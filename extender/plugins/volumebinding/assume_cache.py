"""The assume cache of PersistentVolumes and PersistentVolumeClaims (upstream
``volumebinding/assume_cache.go``): what Reserve assumed, shadowing the informers' objects
until they catch up, so that the next pod's cycle does not take the same volume."""

from __future__ import annotations

import threading

from extender.framework.handle import Lister

from ..volume_util import claim_key, meta, volume_class


def _rv(obj: dict | None) -> int:
    try:
        return int(meta(obj or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class AssumeCache:
    """Assumed PVs and PVCs over the informers' stores (upstream ``AssumeCache``).

    An assumed object shadows the informer's until the informer holds a newer version of it
    (a higher resourceVersion) or the assumption is restored."""

    def __init__(self, pvs: Lister, pvcs: Lister) -> None:
        self.pvs = pvs
        self.pvcs = pvcs
        self._lock = threading.Lock()
        self._pv: dict[str, dict] = {}
        self._pvc: dict[str, dict] = {}

    def _current(self, store: dict[str, dict], key: str, api: dict | None) -> dict | None:
        assumed = store.get(key)
        if assumed is None:
            return api
        if api is None or _rv(api) > _rv(assumed):
            store.pop(key, None)  # the informer moved on (or the object is gone)
            return api
        return assumed

    def get_pv(self, name: str) -> dict | None:
        with self._lock:
            return self._current(self._pv, name, self.pvs.get("", name))

    def get_pvc(self, namespace: str, name: str) -> dict | None:
        with self._lock:
            key = claim_key(namespace, name)
            return self._current(self._pvc, key, self.pvcs.get(namespace, name))

    def list_pvs(self, class_name: str) -> list[dict]:
        out = []
        with self._lock:
            for pv in self.pvs.list():
                current = self._current(self._pv, meta(pv).get("name", ""), pv)
                if current is not None and volume_class(current) == class_name:
                    out.append(current)
        return out

    def assume_pv(self, pv: dict) -> None:
        with self._lock:
            self._pv[meta(pv)["name"]] = pv

    def assume_pvc(self, pvc: dict) -> None:
        with self._lock:
            self._pvc[claim_key(meta(pvc).get("namespace", ""), meta(pvc)["name"])] = pvc

    def restore_pv(self, name: str) -> None:
        with self._lock:
            self._pv.pop(name, None)

    def restore_pvc(self, key: str) -> None:
        with self._lock:
            self._pvc.pop(key, None)
