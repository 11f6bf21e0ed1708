"""Coscheduling: gang scheduling with scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1``
PodGroup (scheduler-plugins ``pkg/coscheduling``), split as upstream splits it: the plugin
(:mod:`.coscheduling`), the PodGroup manager (:mod:`.core`) and the API types it reads
(:mod:`.podgroup`)."""

from .coscheduling import Coscheduling

__all__ = ["Coscheduling"]
