# The project's single entry point. `make test` is the README's test command and what
# .ci/run runs; `make demo` is the README's main command.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-podman test-fast test-builds go-builds local-builds resilience test-cluster demo bench lint typecheck docker images image registry helm kube install unit clean conformance-build conformance coredns monitoring-tools prometheus

# Both tiers: every API-facing test against the emulator and against the real control plane,
# and the fast subset of the upstream conformance suite (tests/e2e/test_conformance_subset.py).
# Two pytest workers side by side (xdist: each has its own real control plane, all share the
# engine), then the tests that stop the engine (marker engine_exclusive) alone.
# Then the engine tests' representative subset on Podman (below), and a check that no container,
# volume or pod cgroup of a test's pod was left on either engine (tests/support/leak_check.py;
# what was already there before the run, from a run cut short, is recorded first and not counted).
PYTEST := $(PY) -m pytest -q -ra --durations=15 --control-plane=both
test: test-builds
	$(PY) -m tests.support.leak_check --record build/leak-baseline.json
	$(PYTEST) -n 2 --dist loadfile -m 'not engine_exclusive and not cluster_full'
	$(PYTEST) -m engine_exclusive
	$(MAKE) --no-print-directory test-podman PODMAN_TESTS='$(PODMAN_SUBSET)'
	$(PY) -m tests.support.leak_check --baseline build/leak-baseline.json

# The engine tests on Podman's API service (docs/runtime.md#podman; scripts/ensure-podman.sh
# installs it, starts `podman system service` and loads the test images into its store), on the
# emulator tier: the runtime, pod lifecycle, kubelet API (logs, exec, attach, port-forward; and
# through the real kubectl), probes and volumes in `make test`; `make test-podman` runs all of PODMAN_TESTS.
PODMAN_SUBSET := $(addprefix tests/integration/,test_runtime_docker.py test_pods_lifecycle.py \
	test_kubeletapi_docker.py test_probes_pods.py test_pods_volumes.py) \
	tests/e2e/test_kubeletapi_kubectl.py
PODMAN_TESTS ?= $(PODMAN_SUBSET) $(addprefix tests/integration/,test_pods_restart.py \
	test_probes_handlers.py test_pods_spec.py test_pods_mounts.py test_pods_security_context.py \
	test_pods_lifecycle_hooks.py test_pods_ephemeral.py test_pods_runtime_class.py \
	test_pods_restart_all.py test_pods_dns.py test_pods_deadline.py test_pods_pod_fields.py \
	test_pods_writes.py test_pods_volume_types.py test_security_pods.py test_security_volumes.py \
	test_security_subpath_race.py test_static_pods_provider.py)
test-podman: docker images install
	bash scripts/ensure-podman.sh
	$(PY) -m pytest -q -ra --durations=10 --engine=podman --control-plane=emulator -n 2 --dist loadfile $(PODMAN_TESTS)

# On a cold machine the Go builds (CPU) run beside the image builds, the venv's tools and the
# linters (disk and network): two lanes. apt's users (the engine, the registry) come first.
test-builds: docker registry prometheus install
	$(MAKE) --no-print-directory -j 2 --output-sync=target go-builds local-builds

go-builds: kube conformance-build coredns monitoring-tools

local-builds: images image helm lint typecheck

# The inner loop: the emulator tier only (no Go build needed).
test-fast: docker images image registry install helm lint typecheck
	$(PY) -m pytest -q -ra --durations=15 --control-plane=emulator

# The resilience suite alone (tests/resilience, marker `resilience`), on both control planes.
resilience: docker images install helm kube
	$(PY) -m pytest -q -ra --durations=15 --control-plane=both -m resilience tests/resilience

# The cluster tests alone (root; issue 25, docs/networking.md): the real plane as a cluster of two
# nodes with kube-proxy and CoreDNS, every test of tests/e2e/test_cluster_networking.py in both
# pod-network modes (the webhook test takes agnhost from `make conformance-build`). `make test`
# runs the Docker mode's; the whole upstream suite against such a cluster is
# `python -m conformance.run --cluster` (docs/conformance.md).
test-cluster: docker images install kube coredns conformance-build
	bash scripts/ensure-cni-plugins.sh
	$(PY) -m pytest -q -ra --durations=15 --control-plane=real tests/e2e/test_cluster_networking.py

demo: docker images install
	bash scripts/demo.sh

# The benchmarks (docs/performance.md) at their default sizes (20 pods), on the emulator; not part of `make test`.
bench: docker images install
	$(PY) -m bench.startup
	$(PY) -m bench.lone
	$(PY) -m bench.steady
	$(PY) -m bench.churn
	$(PY) -m bench.scale
	$(PY) -m bench.scrape

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The engine, with crun and runsc registered for the RuntimeClass tests.
docker:
	bash scripts/ensure-docker.sh
	bash scripts/ensure-oci-runtimes.sh

images: docker
	bash scripts/build-test-images.sh

# The vk-provider image (Dockerfile), built with no registry and no package index: a local
# Debian base with python3 (debootstrap) and the wheels built on the host. Cached by a hash of
# its inputs; cold about 3 minutes, warm under a second.
image: docker
	bash scripts/build-image.sh >/dev/null

# Debian's docker-registry and htpasswd, for the image-pull tests' local registry.
registry:
	bash scripts/ensure-registry.sh
	bash scripts/ensure-cni-plugins.sh

helm: install
	bash scripts/ensure-helm.sh $(VENV)/bin/helm

# The upstream kube-apiserver, controller manager, scheduler and etcd, built from Go modules
# (cached; a cold build takes 15-30 minutes on 2 cores).
kube:
	bash scripts/ensure-kube.sh >/dev/null

# CoreDNS for `vk-provider sandbox --control-plane real --cluster-network` (docs/networking.md):
# built from its Go module (tools/coredns, the plugins of kubeadm's Corefile) and imported as the
# image vk-sandbox/coredns:<version>-<hash>; cached, about a minute warm, a few cold.
coredns: docker
	bash scripts/ensure-iptables.sh
	bash scripts/ensure-coredns.sh >/dev/null

# The monitoring add-ons tests/e2e/test_monitoring_real.py runs beside the real control plane
# (docs/metrics.md): metrics-server and kube-state-metrics built from their Go modules (tools/,
# scripts/ensure-go-tool.sh; cached, about 3 minutes cold), Prometheus and promtool from Debian.
monitoring-tools:
	bash scripts/ensure-go-tool.sh metrics-server >/dev/null
	bash scripts/ensure-go-tool.sh kube-state-metrics >/dev/null

prometheus:
	bash scripts/ensure-prometheus.sh

# The upstream conformance suite (e2e.test, `go test -c k8s.io/kubernetes/test/e2e`) and the
# test images its SIG Node specs use, built offline (cached; about 4 minutes after the control
# plane's build, 25 from an empty Go cache on one core; docs/conformance.md).
conformance-build: docker kube
	bash scripts/build-conformance.sh >/dev/null

# The SIG Node [Conformance] and [NodeConformance] specs against one vk-provider node on the
# real control plane: build/conformance/junit.xml and the results in docs/conformance.md.
# Not part of `make test` (about an hour); `make test` runs a fast subset of it.
# CONFORMANCE_ARGS passes options, e.g. CONFORMANCE_ARGS='--shards 6 --conformance-only'.
conformance: docker install kube conformance-build
	$(PY) -m conformance.run $(CONFORMANCE_ARGS)

# The release into dist/ (scripts/release.sh, docs/install.md): the wheel and sdist, the chart
# package and index, the image as a `docker save` archive and its SBOM, SHA256SUMS. A few minutes.
.PHONY: release release-test lock
release: docker helm
	bash scripts/release.sh

# Installs what `make release` left in dist/ (the chart's .tgz, the image archive, the wheel in a
# clean venv) on the real control plane: tests/e2e/test_release.py. Not part of `make test`.
release-test: release kube images
	VK_PROVIDER_RELEASE_DIR=$(CURDIR)/dist $(PY) -m pytest -q -ra --control-plane=real tests/e2e/test_release.py

# The emulator's protobuf field table (vk_sandbox/api/protobuf_schema.json) and the unit tests'
# client-go encoded objects (tests/support/protobuf_vectors), from the k8s.io/api Go types of
# tools/protoschema/go.mod. Both are committed; run after a version bump or a new resource.
.PHONY: protobuf-schema
protobuf-schema:
	cd tools/protoschema && go run . $(CURDIR)/vk_sandbox/api/protobuf_schema.json
	cd tools/protoschema && go run . -vectors $(CURDIR)/tests/support/protobuf_vectors

# Re-pin requirements/image.lock and requirements/release-tools.lock (with hashes) from the index.
lock:
	bash scripts/lock-requirements.sh

lint: install
	$(VENV)/bin/ruff check vk_provider vk_sandbox vk_common vk_cli tests bench conformance
	$(VENV)/bin/ruff format --check vk_provider vk_sandbox vk_common vk_cli tests bench conformance
	$(VENV)/bin/hadolint Dockerfile

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(PY) -m pytest -q tests/unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
