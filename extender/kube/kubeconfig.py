"""Connect to a cluster: one ``ApiClient`` that every thread of the process shares.

Where the connection comes from, first match wins (as ``kubectl`` and client-go): an explicit
kubeconfig file, else ``$KUBECONFIG`` (may list several files, merged), else the in-cluster
service account when ``KUBERNETES_SERVICE_HOST`` is set, else ``~/.kube/config``. Nothing is
read from or written to the ``kubernetes`` package's process-global default configuration.
Failures raise :class:`KubeconfigError`, both a ``ConfigException`` and a ``ValueError``.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(ConfigException, ValueError):  # type: ignore[misc]  # an untyped base
    """No usable cluster configuration."""


def _load_file(source: str, context: str | None, configuration: client.Configuration) -> None:
    paths = [p for p in source.split(os.pathsep) if p]
    if not any(Path(p).expanduser().is_file() for p in paths):
        raise KubeconfigError(f"kubeconfig {source}: no such file")
    try:
        config.load_kube_config(
            config_file=source,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise KubeconfigError(f"kubeconfig {source}: {exc}") from exc


def load_configuration(
    kubeconfig: str | None = None, context: str | None = None
) -> client.Configuration:
    """A fresh ``Configuration`` from the first source that applies (module docstring)."""
    configuration = client.Configuration()
    source = kubeconfig or os.environ.get("KUBECONFIG")
    if source:
        _load_file(source, context, configuration)
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise KubeconfigError(f"in-cluster configuration: {exc}") from exc
    else:
        default = Path(DEFAULT_KUBECONFIG).expanduser()
        if not default.is_file():
            raise KubeconfigError(
                "no cluster configured: give --kubeconfig, set KUBECONFIG, run in a cluster, "
                f"or create {DEFAULT_KUBECONFIG}"
            )
        _load_file(str(default), context, configuration)
    return configuration


def api_client(kubeconfig: str | None = None, *, context: str | None = None) -> client.ApiClient:
    """An ``ApiClient`` for the cluster, safe to share between threads: its configuration
    and User-Agent are what :class:`~extender.kube.transport.Transport` connects with."""
    return client.ApiClient(load_configuration(kubeconfig, context))


__all__ = [
    "ConfigException",
    "KubeconfigError",
    "api_client",
    "load_configuration",
]
