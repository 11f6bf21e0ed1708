"""Importers of public cluster traces into the trace format (:mod:`extender.replay.trace`).

* :mod:`extender.replay.importers.openb`: Alibaba's ``cluster-trace-gpu-v2023`` ("openb").
"""
