"""The standalone scheduler's client for HTTP extenders listed in ``extenders:``.

It speaks the same wire protocol a real kube-scheduler does (extender-protocol.md), so an
extender built for kube-scheduler, including our own webhook, works behind our scheduler too.
"""

from __future__ import annotations

import orjson
import requests

from extender.framework.types import NodeInfo
from extender.kube.duration import parse_duration

DEFAULT_HTTP_TIMEOUT = 5.0


class ExtenderError(Exception):
    pass


class HTTPExtender:
    """One ``extenders:`` entry (camelCase keys as in KubeSchedulerConfiguration)."""

    def __init__(self, config: dict, session: requests.Session | None = None) -> None:
        self.url_prefix = str(config["urlPrefix"]).rstrip("/")
        self.name = self.url_prefix
        self.filter_verb = config.get("filterVerb") or ""
        self.prioritize_verb = config.get("prioritizeVerb") or ""
        self.preempt_verb = config.get("preemptVerb") or ""
        self.bind_verb = config.get("bindVerb") or ""
        self.weight = int(config.get("weight") or 1)
        self.node_cache_capable = bool(config.get("nodeCacheCapable"))
        self.ignorable = bool(config.get("ignorable"))
        # Seconds from the config loader, or a Go duration string; 0 means the default, as
        # upstream's NewHTTPExtender.
        timeout = config.get("httpTimeout") or 0
        if isinstance(timeout, str):
            timeout = parse_duration(timeout)
        self.timeout = float(timeout) or DEFAULT_HTTP_TIMEOUT
        self.managed = {m["name"] for m in config.get("managedResources") or ()}
        self.session = session or requests.Session()
        tls = config.get("tlsConfig") or {}
        if tls.get("insecure"):
            self.session.verify = False
        elif tls.get("caFile"):
            self.session.verify = tls["caFile"]
        if tls.get("certFile") and tls.get("keyFile"):
            self.session.cert = (tls["certFile"], tls["keyFile"])

    # -- protocol helpers ------------------------------------------------------------------

    def is_interested(self, pod: dict) -> bool:
        if not self.managed:
            return True
        spec = pod.get("spec") or {}
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if self.managed & set(resources.get(kind) or {}):
                    return True
        return False

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def _post(self, verb: str, body: dict) -> object:
        url = f"{self.url_prefix}/{verb}"
        try:
            response = self.session.post(
                url,
                data=orjson.dumps(body),
                headers={"Content-Type": "application/json"},
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: {exc}") from exc
        if response.status_code != 200:
            raise ExtenderError(
                f"failed {verb} with extender at URL {url}, code {response.status_code}"
            )
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: {exc}") from exc

    def _args(self, pod: dict, nodes: list[NodeInfo]) -> dict:
        if self.node_cache_capable:
            return {"Pod": pod, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        items = [n.node for n in nodes]
        return {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    # -- verbs ----------------------------------------------------------------------------

    def filter(
        self, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        result = self._post(self.filter_verb, self._args(pod, nodes))
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name}: filter reply is not an object")
        if result.get("Error"):
            raise ExtenderError(str(result["Error"]))
        by_name = {n.name: n for n in nodes}
        names = result.get("NodeNames")
        kept: list[NodeInfo] = []
        if self.node_cache_capable and names is not None:
            for name in names:
                if name not in by_name:
                    raise ExtenderError(
                        f'extender "{self.name}" claims a filtered node "{name}" which is '
                        "not found in the input node list"
                    )
                kept.append(by_name[name])
        elif result.get("Nodes") is not None:
            for item in (result["Nodes"] or {}).get("items") or ():
                name = (item.get("metadata") or {}).get("name")
                if name in by_name:
                    kept.append(by_name[name])
        failed = dict(result.get("FailedNodes") or {})
        unresolvable = dict(result.get("FailedAndUnresolvableNodes") or {})
        return kept, failed, unresolvable

    def prioritize(self, pod: dict, nodes: list[NodeInfo]) -> dict[str, int]:
        result = self._post(self.prioritize_verb, self._args(pod, nodes))
        scores: dict[str, int] = {}
        names = {n.name for n in nodes}
        for entry in result or ():
            host = entry.get("Host")
            if host in names:
                scores[host] = scores.get(host, 0) + int(entry.get("Score") or 0)
        return scores

    def process_preemption(
        self, pod: dict, node_to_victims: dict[str, tuple[list[dict], int]]
    ) -> dict[str, tuple[list[str], int]]:
        """Send candidates; returns node -> (victim UIDs, PDB violations) the extender kept."""
        if self.node_cache_capable:
            body = {
                "Pod": pod,
                "NodeNameToVictims": None,
                "NodeNameToMetaVictims": {
                    node: {
                        "Pods": [{"UID": (p.get("metadata") or {}).get("uid", "")} for p in pods],
                        "NumPDBViolations": violations,
                    }
                    for node, (pods, violations) in node_to_victims.items()
                },
            }
        else:
            body = {
                "Pod": pod,
                "NodeNameToVictims": {
                    node: {"Pods": pods, "NumPDBViolations": violations}
                    for node, (pods, violations) in node_to_victims.items()
                },
                "NodeNameToMetaVictims": None,
            }
        result = self._post(self.preempt_verb, body)
        kept: dict[str, tuple[list[str], int]] = {}
        for node, victims in ((result or {}).get("NodeNameToMetaVictims") or {}).items():
            uids = [p.get("UID", "") for p in (victims or {}).get("Pods") or ()]
            kept[node] = (uids, int((victims or {}).get("NumPDBViolations") or 0))
        return kept

    def bind(self, pod: dict, node_name: str) -> None:
        meta = pod.get("metadata") or {}
        result = self._post(
            self.bind_verb,
            {
                "PodName": meta.get("name", ""),
                "PodNamespace": meta.get("namespace", ""),
                "PodUID": meta.get("uid", ""),
                "Node": node_name,
            },
        )
        if isinstance(result, dict) and result.get("Error"):
            raise ExtenderError(str(result["Error"]))
