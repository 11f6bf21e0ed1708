"""Connect to a cluster: an explicit kubeconfig, ``$KUBECONFIG``, in-cluster, or ~/.kube/config."""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

# Request threads, informers and binding workers share one pool.
CONNECTION_POOL_SIZE = 64


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    configuration = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    try:
        if path:
            if not Path(path).is_file():
                raise ValueError(f"kubeconfig {path}: no such file")
            config.load_kube_config(config_file=path, client_configuration=configuration)
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
        else:
            default = Path.home() / ".kube" / "config"
            if not default.is_file():
                raise ValueError(
                    "no cluster configured: give --kubeconfig, set KUBECONFIG, or run in a cluster"
                )
            config.load_kube_config(config_file=str(default), client_configuration=configuration)
    except ConfigException as exc:
        raise ValueError(f"kubeconfig {path or '(in-cluster)'}: {exc}") from exc
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return client.ApiClient(configuration)
