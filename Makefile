# Kooper. `make` (or `make help`) lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
# Tools are built from the Go module proxy at pinned versions and cached per
# user, outside the work tree, so a fresh clone reuses them.
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kooper
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(CACHE_DIR)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
# Prometheus's promtool and prometheus check the operators' metrics, the
# alerting rules and every Grafana panel in make test. They are built from the
# module whose PromQL parser grafana/ uses, at the version grafana/go.mod
# requires (hack/bump's test checks the two agree), without service discovery
# (-tags remove_all_sd), and linked into bin/, where the tests look for them.
PROMETHEUS_VERSION := v0.316.0
PROMETHEUS_DIR := $(CACHE_DIR)/tools/prometheus-$(PROMETHEUS_VERSION)

# Binaries are static and trimmed, stamped with VERSION (their -version flag
# prints it), by one command that `make build` and the Dockerfile both run:
# hack/build/build.sh (its test checks the binaries and that both call it).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The operators are the directories of operators/ with a cmd/<name>: the
# samples and any that make new-operator wrote. COMMANDS are what make build
# builds: the example controllers and each operator.
OPERATORS := $(sort $(patsubst operators/%/cmd,%,$(wildcard operators/*/cmd)))
COMMANDS := ./examples/pod-logger ./examples/pod-sharding $(foreach op,$(OPERATORS),./operators/$(op)/cmd/$(op))

# docker-build, deploy and undeploy act on OPERATOR: one or more of OPERATORS.
# Each operator's image is IMG when OPERATOR names one operator, else
# IMAGE_REGISTRY/<operator>:VERSION: make docker-build, a push, then make
# deploy with the same variables deploys what was built. kubectl acts on the
# current context (manifests/README.md).
OPERATOR ?= $(OPERATORS)
IMAGE_REGISTRY ?= ghcr.io/kooperkit
IMG ?=
# GO_IMAGE: the Dockerfile's builder image for make docker-build, e.g.
# golang:1.26@sha256:<digest> to pin it (default: the Dockerfile's tag).
GO_IMAGE ?=
DOCKER ?= docker
# The images' revision label, the commit, and their creation time, the
# commit's: make image builds the same digest from the same commit
# (docs/deploy.md).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
KUBECTL ?= kubectl
# image is the shell expression of the image of the operator in $$op.
image = $(or $(IMG),$(IMAGE_REGISTRY)/$$op:$(VERSION))

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: build ## Start a local control plane with the sample programs at work; Ctrl-C stops it. RUN_ARGS: '-kubeconfig PATH' an existing cluster instead, '-nodes N' kwok nodes (3), '-duration 2m' stop by itself after 2m.
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	@# Built, not go run: its first compile takes a minute, shown as it goes.
	@GO="$(GO)" hack/build/build.sh bin/run ./hack/run
	bin/run $(RUN_ARGS)

# The dev cluster keeps its kubeconfig, pid file and webhook certificate in
# .devcluster/ (hack/devcluster).
.PHONY: devcluster
devcluster: ## Only the local control plane (kwok nodes, the CRDs of manifests/crds) for your own operator: -kubeconfig .devcluster/kubeconfig, webhooks served on 127.0.0.1; Ctrl-C or make devcluster-stop stops it (DEVCLUSTER_ARGS='-nodes N', or '-pods' for one node that runs pods from bin/images as processes, as root).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	$(GO) run ./hack/devcluster $(DEVCLUSTER_ARGS)

.PHONY: new-operator
new-operator: ## Scaffold a complete, tested operator in this repository's shape, then make generate (hack/newoperator): NAME=web-demo GROUP=webapps.example.com KIND=WebApp SCOPE=Cluster|Namespaced [OWNS=ConfigMap,Secret,ServiceAccount,Service,Deployment].
	$(GO) run ./hack/newoperator -name "$(NAME)" -group "$(GROUP)" -kind "$(KIND)" -scope "$(SCOPE)" -owns "$(OWNS)"

.PHONY: new-version
new-version: ## Add a second API version to the kind of an operator make new-operator made, with its conversion webhook (stubs whose round-trip test fails until written), CRD, manifests and tests, then make generate (hack/newversion): NAME=web-demo VERSION=v1beta1.
	$(GO) run ./hack/newversion -name "$(NAME)" -version "$(VERSION)"

.PHONY: store-version
store-version: ## Make VERSION, which make new-version added to NAME's kind, the version stored and the one its operator reads (the storage mark moved, the operator's imports switched), then make generate and go vet the operator; then deploy it and make migrate-storage (hack/newversion -store): NAME=web-demo VERSION=v1beta1.
	$(GO) run ./hack/newversion -store -name "$(NAME)" -version "$(VERSION)"

# make rename and make remove-operator make this repository yours
# (hack/template, docs/template.md). Each refuses, changing nothing, what it
# cannot do, and leaves a tree where make lint, verify-generate and
# test-unit pass.
.PHONY: rename
rename: ## Rename the module, the API groups' suffix and the images everywhere, then make generate and go mod tidy in every module (hack/template): MODULE=example.com/acme/platform GROUP_SUFFIX=acme.example.com [REGISTRY=ghcr.io/acme] [FROM_GROUP_SUFFIX=...] [DRY_RUN=1].
	$(GO) run ./hack/template rename -module "$(MODULE)" -group-suffix "$(GROUP_SUFFIX)" -registry "$(REGISTRY)" -from-group-suffix "$(FROM_GROUP_SUFFIX)" $(if $(DRY_RUN),-dry-run)

.PHONY: remove-operator
remove-operator: ## Remove operator NAME and everything only it has (its API group, manifests, RBAC, dashboard, tests, docs), found in the tree, then make generate and go mod tidy (hack/template) [DRY_RUN=1].
	$(GO) run ./hack/template remove-operator -name "$(NAME)" $(if $(DRY_RUN),-dry-run)

.PHONY: devcluster-stop
devcluster-stop: ## Stop the make devcluster running in another shell, no PID needed, and wait until it has exited.
	$(GO) run ./hack/devcluster -stop

.PHONY: test
test: lint verify-generate test-unit ## Everything CI runs: lint, generated-code check, unit tests, integration tests on a local control plane (the fault runs included), benchmark smoke tests. TESTFLAGS go to every go test (TESTFLAGS=-v names each test).
	@# The integration tests, then the benchmarks' smoke tests side by side
	@# with the other runs that follow them (test-integration, test-bench).
	@$(MAKE) --no-print-directory test-integration SIDE_BY_SIDE=_test-bench

# TESTFLAGS are added to each go test that the test targets run: -v lists
# every test, and its skips (make newcomer counts them).
TESTFLAGS ?=

.PHONY: newcomer
newcomer: ## The README's two commands as a new user runs them: a fresh clone, empty Go caches, a PATH of only Go, make, gcc and a shell's basics; reports their exit codes, times and skipped tests (over an hour cold; NEWCOMER_ARGS='-home DIR' reuses a home for a warm run, hack/newcomer).
	$(GO) run ./hack/newcomer $(NEWCOMER_ARGS)

# The library (kooper/) and the tests' local control plane (hack/envtest)
# are modules of their own (docs/modules.md). make's go test, go list and
# golangci-lint see the three as one through a workspace made for them,
# bin/go.work (GOWORK: no go.work is committed, so every module keeps
# building on its own), and PACKAGES names their packages.
WORKSPACE_MODULES := . kooper hack/envtest
PACKAGES := $(foreach m,$(WORKSPACE_MODULES),$(patsubst ././...,./...,./$(m)/...))
GOWORK_FILE := $(CURDIR)/bin/go.work
WS := GOWORK="$(GOWORK_FILE)"
# WS_TEST is go test through the workspace; the test binaries run without
# it (-exec), so that a test running go in a module of its own sees that
# module alone, as a user's go does.
WS_TEST := $(WS) $(GO) test -exec 'env -u GOWORK'

# Integration packages start real control-plane processes: any package named
# integration, plus envtest's own and make run's. Everything else is a unit
# test.
INTEGRATION_PATTERN := /integration$$|/hack/envtest$$|/hack/run$$
# LONGEST_FIRST are the integration packages that take longest (two and a
# half to seven minutes each): test-integration starts them first.
LONGEST_FIRST := /docs/integration$$|/operators/pod-terminator/integration$$|/hack/template/integration$$
# JOURNEY is the newcomer's whole journey (hack/template/integration): about
# a quarter of an hour, so make test runs its short version and leaves it
# to make test-journey, which CI runs after make test.
JOURNEY := TestTheJourneyToARepositoryOfYourOwn
# UPGRADE is the pod-terminator's upgrade from its last release before
# v1beta1, built from this repository's history (manifests/integration),
# and the API versions tutorial's, run as its reader runs it
# (docs/integration): minutes each, and a clone without the history cannot
# run them, so make test-upgrade runs them, which CI runs after make test.
UPGRADE := TestAnUpgradeLosesNothing|TestTheTutorialsUpgradesRun
# LONG are the tests make test leaves to the targets above.
LONG := ^($(JOURNEY)|$(UPGRADE))$$
# grafana/ is its own module (the PromQL parser and the image packages stay
# out of the library's go.mod).
GRAFANA := cd grafana &&
# hack/crdcheck is its own module too (the API server's CRD validation, CEL
# included, stays out of the library's go.mod).
CRDCHECK := cd hack/crdcheck &&
# hack/image is its own module too (go-containerregistry, with which make
# image builds images without Docker, stays out of the library's go.mod).
IMAGE_TOOL := cd hack/image &&
# faults/ is its own module too (what the fault harness needs stays out of
# the library's go.mod).
FAULTS := cd faults &&

.PHONY: test-unit
test-unit: prometheus workspace ## Unit tests and examples with the race detector (fast, no cluster; promtool checks the alerting rules).
	CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -race -count=1 $$($(WS) $(GO) list $(PACKAGES) | grep -v -E '$(INTEGRATION_PATTERN)')
	@# Allocation counts, which the race detector changes: those tests are
	@# built without it only (//go:build !race).
	$(WS_TEST) $(TESTFLAGS) -count=1 -run 'DoesNotAllocate' ./kooper/metrics/prometheus/
	$(GRAFANA) CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -race -count=1 $$($(GO) list ./... | grep -v -E '$(INTEGRATION_PATTERN)')
	$(CRDCHECK) $(GO) test $(TESTFLAGS) -count=1 ./...

.PHONY: test-integration
test-integration: build prometheus workspace ## Integration tests against a local control plane (built first if missing), then, at once, the dashboards against a real Prometheus, the library's against the previous minor's API server (test-skew) and the fault runs (test-faults).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1 WITH_SKEW=1
	@# go test runs two packages at a time, in the order given: the longest
	@# go first, so that the short ones fill the slots at the end. The
	@# newcomer's whole journey is make test-journey's.
	CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -race -count=1 -timeout 30m -skip '$(LONG)' $$($(WS) $(GO) list $(PACKAGES) | grep -E '$(INTEGRATION_PATTERN)' | grep -E '$(LONGEST_FIRST)'; $(WS) $(GO) list $(PACKAGES) | grep -E '$(INTEGRATION_PATTERN)' | grep -v -E '$(LONGEST_FIRST)')
	@# Then, side by side, three runs on control planes of their own (their
	@# binaries are built above), hack/image's tests and SIDE_BY_SIDE (make
	@# test adds the benchmarks' smoke tests): most of their time is waiting
	@# (fault durations, leases, image layers). Each one's output shows
	@# when it ends. (Not beside the integration packages: make's output
	@# sync would reach the makes their tests start, through MAKEFLAGS, and
	@# hold a dev cluster's output until it exits.)
	@$(MAKE) --no-print-directory -j --output-sync=target _test-grafana _test-skew _test-faults _test-image $(SIDE_BY_SIDE)

.PHONY: test-journey
test-journey: prometheus workspace ## The newcomer's whole journey on a copy of this repository (about 15 minutes; CI runs it after make test, which runs a short one): three operators scaffolded, the tree renamed, lint, the unit tests, every operator's integration tests, the sample removed, make run, the scaffolds removed.
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -race -count=1 -timeout 60m -run '^$(JOURNEY)$$' ./hack/template/integration

# +kooper:operator-begin=pod-terminator
.PHONY: test-upgrade
test-upgrade: prometheus workspace ## The pod-terminator upgraded from its last release before v1beta1 (built from this repository's history) to this tree under procnode, as make upgrade does, while a writer writes through both versions: nothing refused, lost or handled twice at once; then the API versions tutorial's upgrade, as its reader runs it (about ten minutes; CI runs it after make test).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	@# One package at a time: each builds images and runs pods on a node
	@# of its own.
	CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -p 1 -count=1 -timeout 40m -run '^($(UPGRADE))$$' ./manifests/integration ./docs/integration
# +kooper:operator-end=pod-terminator

# _test-image runs hack/image's tests (its own module): they render
# manifests with bin/kubectl, linked by test-integration. Those that build
# an image run without the race detector: under it, gzip of an operator's
# binary takes ten times as long (two tests of three images: 232 s against
# 24 s), and the tool starts no goroutine of its own. The race detector runs
# the others, IMAGE_RACE.
IMAGE_RACE := ^(TestTheCommandRefusesWhatItCannotPackage|TestSourceDateEpochIsTheCreationTime)$$
.PHONY: _test-image
_test-image:
	$(IMAGE_TOOL) CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -race -count=1 -run '$(IMAGE_RACE)' ./...
	$(IMAGE_TOOL) $(GO) test $(TESTFLAGS) -count=1 -skip '$(IMAGE_RACE)' ./...

# _test-grafana runs grafana/'s integration test: the operators under a real
# Prometheus, every panel and alert evaluated.
.PHONY: _test-grafana
_test-grafana:
	$(GRAFANA) CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -count=1 ./integration

# REPEAT is how many times make test-repeat runs each integration test. A
# package's TestMain starts one control plane per go test process, so each
# pass meets what the earlier ones left: tests name their objects per run,
# read counters as differences and await their cleanup. One package at a
# time (-p 1). The newcomer's whole journey is left out: each pass of it
# starts from a fresh copy with clusters of its own, so a repeat meets
# nothing an earlier pass left (make test-journey runs it).
REPEAT ?= 3

.PHONY: test-repeat
test-repeat: build prometheus workspace ## Every integration test REPEAT times (3) against its package's one local control plane, as a flake hunt needs (about an hour): catches tests that depend on a fresh cluster.
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1 WITH_SKEW=1
	CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -race -count=$(REPEAT) -p 1 -timeout 60m -skip '$(LONG)' $$($(WS) $(GO) list $(PACKAGES) | grep -E '$(INTEGRATION_PATTERN)')
	$(GRAFANA) CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -count=$(REPEAT) -timeout 30m ./integration

# The version-skew run: the library's own integration tests against the
# previous minor's kube-apiserver (hack/controlplane/skew), which users on a
# cluster one release older run the library against.
SKEW_PACKAGES := ./kooper/controller/integration ./kooper/x/sharding/integration

.PHONY: test-skew
test-skew: workspace ## The library's integration tests against the previous minor's kube-apiserver (version skew).
	@$(MAKE) --no-print-directory controlplane WITH_SKEW=1
	@$(MAKE) --no-print-directory _test-skew

# _test-skew and _test-faults run the tests only, the binaries built:
# test-integration runs them side by side.
.PHONY: _test-skew _test-faults
_test-skew:
	KOOPER_CONTROLPLANE_BIN="$(CURDIR)/bin/skew" KOOPER_WANT_SERVER_VERSION="$$(bin/skew/kube-apiserver --version | cut -d' ' -f2)" \
		CGO_ENABLED=1 $(WS_TEST) $(TESTFLAGS) -race -count=1 $(SKEW_PACKAGES)

# The fault runs: replicas of a controller under leader election, each
# through a fault-injecting proxy of its own, on a local control plane; the invariants
# (one key on one replica at a time, every final version handled) are
# checked throughout (faults/doc.go). SEED repeats a run's faults.
SEED ?=
DURATION ?= 30m

.PHONY: test-faults
test-faults: ## Each fault once (connection resets, latency, a blackhole, API server and etcd restarts, compaction, 429s, SIGKILL and SIGSTOP of the leader), then 30s of them mixed from a printed seed, and 45s of them under each operator (faults/; SEED=... repeats).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	@$(MAKE) --no-print-directory _test-faults

_test-faults:
	$(FAULTS) FAULTS_SEED="$(SEED)" FAULTS_DURATION=30s FAULTS_OPERATOR_DURATION=45s CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -race -count=1 ./...

.PHONY: soak
soak: ## Faults mixed at random for DURATION (30m) from SEED (a new one, printed), under the library's controller and, at the same time, each operator in turn (DURATION each), the invariants checked throughout; a run stops at its first violation, naming the seed.
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	$(FAULTS) FAULTS_SEED="$(SEED)" FAULTS_DURATION="$(DURATION)" FAULTS_OPERATOR_DURATION="$(DURATION)" $(GO) test -count=1 -v -timeout 0 -run 'TestMixedFaults|UnderFaults' ./integration ./operators

.PHONY: test-bench
test-bench: ## Every benchmarked implementation on a tiny workload: in memory in both cache-fill modes, and on a local control plane.
	@$(MAKE) --no-print-directory controlplane
	@$(MAKE) --no-print-directory _test-bench

.PHONY: _test-bench
_test-bench:
	cd bench && $(GO) test $(TESTFLAGS) -count=1 ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) workspace ## gofmt, go vet, tidy go.mod files, golangci-lint (pinned) and the library's surface budget (hack/surface).
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:"; echo "$$unformatted"; exit 1; fi
	$(WS) $(GO) vet $(PACKAGES)
	cd bench && $(GO) vet ./...
	$(GRAFANA) $(GO) vet ./...
	$(CRDCHECK) $(GO) vet ./...
	$(IMAGE_TOOL) $(GO) vet ./...
	$(FAULTS) $(GO) vet ./...
	$(GO) mod tidy -diff
	cd kooper && $(GO) mod tidy -diff
	cd hack/envtest && $(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	$(GRAFANA) $(GO) mod tidy -diff
	$(CRDCHECK) $(GO) mod tidy -diff
	$(IMAGE_TOOL) $(GO) mod tidy -diff
	$(FAULTS) $(GO) mod tidy -diff
	$(WS) $(GOLANGCI_LINT) run $(PACKAGES)
	$(GO) run ./hack/surface -check
	cd bench && $(GOLANGCI_LINT) run --config ../.golangci.yml ./...
	$(GRAFANA) $(GOLANGCI_LINT) run --config ../.golangci.yml ./...
	$(CRDCHECK) $(GOLANGCI_LINT) run --config ../../.golangci.yml ./...
	$(IMAGE_TOOL) $(GOLANGCI_LINT) run --config ../../.golangci.yml ./...
	$(FAULTS) $(GOLANGCI_LINT) run --config ../.golangci.yml ./...

# lint-packages lints LINT_PACKAGES of the root module, the library's or
# envtest's, quicker than make lint while you change a few
# (LINT_PACKAGES=./operators/web-demo/...).
.PHONY: lint-packages
lint-packages: $(GOLANGCI_LINT) workspace
	$(WS) $(GOLANGCI_LINT) run $(LINT_PACKAGES)

# workspace writes bin/go.work, the workspace of WORKSPACE_MODULES through
# which make's go commands see them as one. Made for each run: cheap, and
# never stale.
.PHONY: workspace
workspace:
	@mkdir -p bin
	@{ printf 'go %s\n\nuse (\n' "$$(sed -n 's/^go //p' go.mod)"; printf '\t%s\n' $(abspath $(WORKSPACE_MODULES)); printf ')\n'; } > "$(GOWORK_FILE).tmp"
	@mv "$(GOWORK_FILE).tmp" "$(GOWORK_FILE)"

$(GOLANGCI_LINT):
	@GO="$(GO)" hack/tools/install.sh "$(@D)" "about 3 minutes" github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: prometheus
prometheus: $(PROMETHEUS_DIR)/promtool ## Build promtool and prometheus (pinned) into the user cache, linked from bin/: make test's metrics, alert and dashboard checks use them (first time about 3 minutes).
	@mkdir -p bin
	@for b in promtool prometheus; do ln -sfn "$(PROMETHEUS_DIR)/$$b" "bin/$$b" 2>/dev/null || cp -f "$(PROMETHEUS_DIR)/$$b" "bin/$$b"; done

# One go install for both: they share most packages, compiled once.
$(PROMETHEUS_DIR)/promtool:
	@GO="$(GO)" CGO_ENABLED=0 STAMP=github.com/prometheus/common/version.Version \
		hack/tools/install.sh "$(@D)" "about 2.5 minutes on 2 cores" -tags remove_all_sd \
		github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION) github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

.PHONY: generate
generate: ## Generate deepcopy, OpenAPI, apply configurations, clients, listers, informers (code-generator), CRD YAML (controller-gen, then checked as the API server checks it), the Grafana dashboards, docs/metrics.md, the operators index and the tutorials' code blocks.
	CACHE_DIR="$(CACHE_DIR)" hack/codegen/generate.sh
	$(CRDCHECK) $(GO) run .
	$(GRAFANA) $(GO) run ./cmd/dashboards
	$(GO) run ./hack/docs

.PHONY: verify-generate
verify-generate: ## Fail if generated code, CRDs, dashboards, docs/metrics.md or a tutorial's code block is stale, or a CRD would be refused by the API server (CEL cost included).
	CACHE_DIR="$(CACHE_DIR)" hack/codegen/verify.sh
	$(CRDCHECK) $(GO) run .
	$(GRAFANA) $(GO) run ./cmd/dashboards -check
	$(GO) run ./hack/docs -check

.PHONY: docs
docs: ## Rewrite every tutorial code block from the region of the compiled file it quotes (hack/docs).
	$(GO) run ./hack/docs

.PHONY: bench
bench: ## Compare Kooper with spotahome/kooper v2, controller-runtime and a bare informer (about 1.5 minutes).
	cd bench && $(GO) run ./cmd/compare -rounds 9

.PHONY: bench-fresh
bench-fresh: ## Fresh changes first: 100 objects created during a 10,000-object backlog, against the peers (about 65 s); writes docs/img/bench-fresh.png and bench/results/fresh.json.
	cd bench && $(GO) run ./cmd/fresh -png ../docs/img/bench-fresh.png

.PHONY: bench-cluster
bench-cluster: ## The same peers on a local control plane, all five scenarios: 10,000 pods, 4 rounds (about 55 minutes); writes docs/img/bench-cluster.png, docs/img/bench-failover.png and bench/results/cluster.json.
	@$(MAKE) --no-print-directory controlplane
	cd bench && $(GO) run ./cmd/cluster -png ../docs/img/bench-cluster.png -png-failover ../docs/img/bench-failover.png

.PHONY: bench-failover
bench-failover: ## Failover (warm standbys) and fresh changes first on a local control plane against the peers: 10,000 pods, 3 rounds (about 25 minutes); writes docs/img/bench-failover.png and bench/results/failover.json.
	@$(MAKE) --no-print-directory controlplane
	cd bench && $(GO) run ./cmd/cluster -scenarios failover,fresh -rounds 3 -json results/failover.json -png-failover ../docs/img/bench-failover.png

.PHONY: bench-sharding
bench-sharding: ## Kooper's sharding on a local control plane (Kooper only, no peer shards): 10,000 pods with the ShardedListAndWatch gate on, 2,000 with it off, then membership changes (about 3 minutes); writes docs/img/bench-sharding.png and bench/results/sharding.json.
	@$(MAKE) --no-print-directory controlplane
	cd bench && $(GO) run ./cmd/cluster -scenarios sharding -rounds 1 -json results/sharding.json -png-sharding ../docs/img/bench-sharding.png

.PHONY: build
build: ## Build static, trimmed binaries stamped with VERSION into bin/ (hack/build/build.sh, as the Dockerfile does).
	GO="$(GO)" VERSION="$(VERSION)" hack/build/build.sh bin/ $(COMMANDS)

.PHONY: manifests
manifests: ## Regenerate the CRD YAML and its kustomizations in manifests/crds/ (the controller-gen part of make generate).
	CACHE_DIR="$(CACHE_DIR)" hack/codegen/generate.sh --crds
	$(CRDCHECK) $(GO) run .

.PHONY: docker-build
docker-build: check-operator ## Build an image per OPERATOR (default every operator) tagged IMG (one operator) or IMAGE_REGISTRY/<operator>:VERSION.
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "docker-build: $(DOCKER) not found: install Docker (or set DOCKER=podman); make build makes the same static binaries without it" >&2; exit 1; }
	@$(DOCKER) info >/dev/null 2>&1 || { echo "docker-build: $(DOCKER) cannot reach its daemon (is it running?); make build makes the same static binaries without it" >&2; exit 1; }
	@for op in $(OPERATOR); do \
		echo "$(DOCKER) build$(if $(GO_IMAGE), --build-arg GO_IMAGE=$(GO_IMAGE)) --build-arg OPERATOR=$$op --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(image) ."; \
		$(DOCKER) build $(if $(GO_IMAGE),--build-arg GO_IMAGE="$(GO_IMAGE)") --build-arg OPERATOR=$$op --build-arg VERSION="$(VERSION)" --build-arg REVISION="$(REVISION)" -t "$(image)" .; \
	done

# image and image-push build each operator for linux (GOARCH the host's
# unless given: make image GOARCH=arm64) into bin/ with hack/build/build.sh,
# as make build does on Linux, then package bin/<operator> with hack/image,
# which runs on the host (GOOS= GOARCH=). hack/image's tests run both targets
# with a go that only records its arguments, then run what it recorded.
image_build = GO="$(GO)" VERSION="$(VERSION)" GOOS=linux hack/build/build.sh bin/ $(foreach op,$(OPERATOR),./operators/$(op)/cmd/$(op))
# image_tool FLAGS: hack/image on bin/$$op, with FLAGS.
image_tool = ($(IMAGE_TOOL) GOOS= GOARCH= SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)" $(GO) run . -binary "../../bin/$$op" -version "$(VERSION)" -revision "$(REVISION)" $(1))

.PHONY: image
image: check-operator ## Build an image per OPERATOR (default every operator) without Docker into bin/images/<operator>.tar (docker load, crane push), tagged IMG (one operator) or IMAGE_REGISTRY/<operator>:VERSION: bin/<operator> on scratch (hack/image, docs/deploy.md).
	$(image_build)
	@for op in $(OPERATOR); do $(call image_tool,-tag "$(image)" -out "../../bin/images/$$op.tar"); done

.PHONY: image-push
image-push: check-operator ## Build and push an image per OPERATOR without Docker to IMG (one operator) or IMAGE_REGISTRY/<operator>:VERSION with docker login's credentials; prints each repository@sha256:digest for make deploy IMG=... (hack/image).
	$(image_build)
	@for op in $(OPERATOR); do $(call image_tool,-push "$(image)"); done

.PHONY: deploy
deploy: check-operator ## kubectl apply -k manifests/<operator> per OPERATOR (default every operator) to the current context, with the image set to IMG or IMAGE_REGISTRY/<operator>:VERSION.
	@for op in $(OPERATOR); do KUBECTL="$(KUBECTL)" manifests/deploy.sh deploy $$op "$(image)"; done

.PHONY: upgrade
upgrade: check-operator ## Upgrade OPERATOR (default every operator) in the current context to this tree's release, in the order that refuses no call: all but its CRDs, the rollout, then its CRDs (a webhook conversion's CA bundle copied in); then make migrate-storage if a storage version changed (docs/deploy.md).
	@for op in $(OPERATOR); do KUBECTL="$(KUBECTL)" manifests/deploy.sh upgrade $$op "$(image)"; done

.PHONY: undeploy
undeploy: check-operator ## Remove OPERATOR (default every operator) from the current context: its custom resources first (while it can finalize them), then the operator, then its CRDs.
	@for op in $(OPERATOR); do KUBECTL="$(KUBECTL)" manifests/deploy.sh undeploy $$op; done

.PHONY: migrate-storage
migrate-storage: ## After a new API version became the storage version, move the stored objects of CRD (a CRD's name, or several) to it and leave status.storedVersions holding it alone, in the current context, by StorageVersionMigration where served (1.37+), else writing them (hack/migrate) [MIGRATE_ARGS='-rewrite -timeout 10m'].
	@if [ -z "$(strip $(CRD))" ]; then echo "CRD is empty: name one, <plural>.<group> (kubectl get crd lists them)" >&2; exit 1; fi
	$(GO) run ./hack/migrate $(MIGRATE_ARGS) $(CRD)

.PHONY: check-operator
check-operator:
	@for op in $(OPERATOR); do case " $(OPERATORS) " in *" $$op "*) ;; *) echo "unknown OPERATOR $$op: want one or more of $(OPERATORS)" >&2; exit 1;; esac; done
	@if [ -n "$(IMG)" ] && [ "$(words $(OPERATOR))" != 1 ]; then echo "IMG is one operator's image: name that operator, e.g. OPERATOR=$(firstword $(OPERATORS)) IMG=$(IMG)" >&2; exit 1; fi
	@if [ -z "$(strip $(OPERATOR))" ]; then echo "OPERATOR is empty: want one or more of $(OPERATORS)" >&2; exit 1; fi

.PHONY: controlplane
controlplane: ## Build the local control plane into the user cache, linked from bin/ (WITH_KWOK=1 adds kwok, WITH_SKEW=1 the previous minor's kube-apiserver; first time 6.5-11 min on 2 cores, see hack/controlplane/README.md#first-build).
	GO="$(GO)" WITH_KWOK="$(WITH_KWOK)" WITH_SKEW="$(WITH_SKEW)" hack/controlplane/build.sh

# bump-kubernetes reads VERSION only from the command line: its default is
# the binaries' version (git describe).
VERSION_K8S := $(if $(filter command line,$(origin VERSION)),$(VERSION))

.PHONY: bump-kubernetes
bump-kubernetes: ## Move every Kubernetes pin to VERSION (e.g. VERSION=1.38.0) with hack/bump, then regenerate.
	@if [ -z "$(VERSION_K8S)" ]; then echo "usage: make bump-kubernetes VERSION=1.MINOR.PATCH" >&2; exit 2; fi
	$(GO) run ./hack/bump -version "$(VERSION_K8S)"
	@$(MAKE) --no-print-directory generate

.PHONY: clean
clean: ## Remove bin/ (the per-user tool cache stays).
	rm -rf bin/
