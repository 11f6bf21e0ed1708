"""Offline: a cluster held in memory instead of watched, for the product's offline commands
(``explain`` on a dump, ``simulate``) and the plugin testing kit (``extender.testing``
re-exports both names).

* :class:`Cluster`: nodes, pods and other objects, with their listers and snapshot.
* :func:`apiserver_defaults`: a pod as the apiserver stores it (requests default to limits).
"""

from .cluster import Cluster
from .defaults import apiserver_defaults

__all__ = ["Cluster", "apiserver_defaults"]
