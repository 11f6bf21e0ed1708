"""A chaos soak on the real control plane (issue 12): a seeded workload churns pods and nodes
while faults are injected, then the invariants are checked and printed.

``make chaos MINUTES=30`` or ``python -m tests.chaos --minutes N``; ``make test`` runs a short
soak (pytest marker ``chaos``).
"""
