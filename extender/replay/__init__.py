"""The policy replay lab (issue 32): replay a recorded or imported workload through the
scheduling core in virtual time and compare policies on it.

* :mod:`extender.replay.trace`: the trace format v1 (load, validate, save).
* :mod:`extender.replay.gpus`: how GPUs are mapped (extended resource or DRA devices with
  consumable capacity), shared by the importers and the metrics.
* :mod:`extender.replay.importers`: public traces into the format (``openb``: Alibaba's
  ``cluster-trace-gpu-v2023``).
* :mod:`extender.replay.metrics`: a replay log's metrics (queueing, allocation over time, FGD
  GPU fragmentation, spread, preemptions, a per-node heat map).
* :mod:`extender.replay.report`: the policies' metrics side by side: JSON, an HTML page with
  plots, a terminal table.
* :mod:`extender.replay.record`: a trace of a live cluster or of a dump
  (``kube-extender record``), :mod:`extender.replay.anonymise` its names and labels hashed.
* :mod:`extender.replay.live`: the same trace replayed on a real cluster in scaled wall time,
  through whatever scheduler runs there; :mod:`extender.replay.fidelity` compares two logs.
"""
