"""RackSpread: an example out-of-tree kube-extender plugin."""

from .plugin import ERR_REASON_MAINTENANCE, MAINTENANCE_ANNOTATION, RackSpread, RackSpreadArgs

__all__ = ["ERR_REASON_MAINTENANCE", "MAINTENANCE_ANNOTATION", "RackSpread", "RackSpreadArgs"]
