"""Differential conformance tests: our core against the real kube-scheduler (issue 7)."""
