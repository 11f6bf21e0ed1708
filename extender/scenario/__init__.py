"""Scenarios in the spirit of mini-kube-scheduler: a Python function gets a :class:`Kube`
client, creates nodes and pods, and checks where the scheduler put them."""

from .kube import Kube, ScenarioError

__all__ = ["Kube", "ScenarioError"]
