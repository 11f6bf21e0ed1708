"""Server-side apply of manifests and ServiceAccount kubeconfigs, for the test control plane.

No kubectl here: each object is one ``PATCH`` with ``Content-Type:
application/apply-patch+yaml`` and a ``fieldManager`` through our own
:class:`extender.kube.KubeClient`, which is what ``kubectl apply --server-side`` sends. A
kustomization is read as far as deploy/ uses it (``resources`` and ``labels``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import yaml

FIELD_MANAGER = "kube-extender-e2e"

# kind -> (resource, namespaced): the kinds deploy/ and the Helm chart hold.
RESOURCES: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "ServiceAccount": ("serviceaccounts", True),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
    "Service": ("services", True),
    "Deployment": ("deployments", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
    "NetworkPolicy": ("networkpolicies", True),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "ServiceMonitor": ("servicemonitors", True),
    "Certificate": ("certificates", True),
}


def documents(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def kustomize(directory: Path) -> list[dict]:
    """The objects of ``directory/kustomization.yaml``: its resources, in order, with its
    ``labels`` pairs added to each object's metadata (all deploy/ uses)."""
    (kust,) = documents((directory / "kustomization.yaml").read_text())
    unsupported = set(kust) - {"apiVersion", "kind", "resources", "labels"}
    if unsupported:
        raise ValueError(f"kustomization fields this reader does not handle: {unsupported}")
    pairs: dict[str, str] = {}
    for entry in kust.get("labels") or ():
        pairs.update(entry.get("pairs") or {})
    objects = []
    for resource in kust["resources"]:
        for obj in documents((directory / resource).read_text()):
            meta = obj.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **pairs}
            objects.append(obj)
    return objects


def path_of(obj: dict) -> str:
    kind, api_version = obj["kind"], obj["apiVersion"]
    if kind not in RESOURCES:
        raise ValueError(f"no resource known for kind {kind}")
    resource, namespaced = RESOURCES[kind]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    meta = obj["metadata"]
    if namespaced:
        namespace = meta.get("namespace") or "default"
        return f"{base}/namespaces/{namespace}/{resource}/{meta['name']}"
    return f"{base}/{resource}/{meta['name']}"


def apply(client: Any, objects: list[dict], field_manager: str = FIELD_MANAGER) -> list[dict]:
    """Server-side apply each object (forcing conflicts, as a deploy tool owning them would);
    returns what the apiserver stored. Raises the client's ApiError on a refusal."""
    stored = []
    for obj in objects:
        stored.append(
            client.request(
                "PATCH",
                path_of(obj),
                orjson.dumps(obj),  # JSON is YAML: the apply-patch body
                query={"fieldManager": field_manager, "force": "true"},
                content_type="application/apply-patch+yaml",
            )
        )
    return stored


def service_account_kubeconfig(
    client: Any,
    namespace: str,
    name: str,
    path: Path,
    server: str,
    ca_file: Path,
    seconds: int = 3600,
) -> Path:
    """A kubeconfig whose credentials are a token of ServiceAccount ``namespace/name``, from
    the TokenRequest API (``POST .../serviceaccounts/{name}/token``, as an admin)."""
    review = client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        },
    )
    user = f"system:serviceaccount:{namespace}:{name}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_file)}}
        ],
        "users": [{"name": user, "user": {"token": review["status"]["token"]}}],
        "contexts": [{"name": user, "context": {"cluster": "local", "user": user}}],
        "current-context": user,
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(config, out, sort_keys=False)
    return path
