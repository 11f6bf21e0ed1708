# kube-extender: the two commands of the README, and their parts.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The example plugin packages: installed into the venv (their entry points register RackSpread,
# which tests/e2e/test_plugins.py enables by name, and GPUBinPack and GPUFragmentation, which
# the replay policies scheduler-config/replay/gpu-*.yaml enable) and their own tests run with ours.
EXAMPLES := examples/rack-spread examples/gpu-policies
EXAMPLE_TESTS := $(addsuffix /tests,$(EXAMPLES))
export KUBE_EXTENDER_CACHE ?= $(HOME)/.cache/kube-extender

.PHONY: start test unit fuzz lint setup controlplane test-binaries bench bench-cluster bench-perf conformance chaos cluster-up cluster-down clean

## The README's first command: build what the demo runs once (etcd, kube-apiserver,
## kube-scheduler), run the seed scenario on it.
start: setup controlplane
	$(BIN)/kube-extender demo

## The README's second command: lint, unit, webhook and end-to-end tests.
test: setup test-binaries lint
	$(BIN)/python -m pytest -q -p no:cacheprovider tests $(EXAMPLE_TESTS)

unit: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit tests/webhook $(EXAMPLE_TESTS)

## The fuzzing suite with a larger budget (make test runs it with 20 examples a case).
FUZZ_EXAMPLES ?= 2000
fuzz: setup
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -p no:cacheprovider tests/fuzz

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(addsuffix /pyproject.toml,$(EXAMPLES))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q $(addprefix -e ,$(EXAMPLES))
	touch $@

## What the demo, the e2e harness, conformance, chaos and the cluster benchmarks run: etcd,
## kube-apiserver and kube-scheduler (one go build for both).
controlplane:
	bash hack/build-controlplane.sh kube-apiserver kube-scheduler

## All that `make test` runs: the control plane and kube-controller-manager (the volume tests'
## PV binder) in one go build, the volume tests' dynamic provisioner, helm for the chart tests,
## Debian's chromium for the replay report's browser test (installed only when missing).
test-binaries:
	bash hack/build-controlplane.sh kube-apiserver kube-scheduler kube-controller-manager
	bash hack/build-provisioner.sh
	bash hack/build-helm.sh
	bash hack/install-chromium.sh

## Benchmarks: figures and ratios against a peer measured in the same run (never timed tests).
bench: setup
	$(BIN)/python bench/core.py

bench-cluster: setup test-binaries
	$(BIN)/python bench/webhook.py
	$(BIN)/python bench/extender_overhead.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/burst_skew.py
	$(BIN)/python -m bench.hostile
	$(BIN)/python bench/gang.py --rounds 3

## Upstream scheduler_perf's workloads, kube-scheduler vs ours (long: 500 and 5000 nodes).
bench-perf: setup test-binaries
	$(BIN)/python bench/perf.py

## Differential tests against the real kube-scheduler: make conformance SEEDS=50
SEEDS ?= 20
PODS ?= 25
conformance: setup test-binaries
	$(BIN)/python -m tests.conformance --seeds $(SEEDS) --pods-per-seed $(PODS) --isolate
	$(BIN)/python -m tests.conformance --volumes --seeds $(SEEDS) --pods-per-seed $(PODS) --isolate
	$(BIN)/python -m tests.conformance --dra --seeds $(SEEDS) --pods-per-seed $(PODS) --isolate
	$(BIN)/python -m tests.conformance --paths --seeds $(SEEDS) --pods-per-seed $(PODS)
	$(BIN)/python -m tests.conformance --workloads --seeds $(SEEDS)

## The chaos soak (issue 12): faults under a seeded churn, then the invariants. `make test`
## runs a short one (tests/chaos, marker chaos); this is the long one: make chaos MINUTES=10
MINUTES ?= 30
chaos: setup controlplane
	$(BIN)/python -m tests.chaos --minutes $(MINUTES)

cluster-up: setup controlplane
	$(BIN)/kube-extender cluster up

cluster-down: setup
	$(BIN)/kube-extender cluster down

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
