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

# Binaries are static and trimmed, the same way in `make build` and the
# Dockerfile, and stamped with VERSION (their -version flag prints it).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BUILD_FLAGS := -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
COMMANDS := ./examples/pod-logger ./operators/pod-terminator/cmd/pod-terminator ./operators/multi-resource/cmd/multi-resource

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: build ## Start a local control plane with the sample programs at work; Ctrl-C stops it (RUN_ARGS='-kubeconfig PATH' targets an existing cluster).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	$(GO) run ./hack/run $(RUN_ARGS)

.PHONY: test
test: lint verify-generate test-unit test-integration test-bench ## Everything CI runs: lint, generated-code check, unit tests, integration tests on a local control plane, benchmark smoke tests.

# Integration packages start real control-plane processes: any package named
# integration, plus devcluster and make run's own test. Everything else is a
# unit test.
INTEGRATION_PATTERN := /integration$$|/kooper/devcluster$$|/hack/run$$
# grafana/ is its own module (the PromQL parser and the image packages stay
# out of the library's go.mod).
GRAFANA := cd grafana &&

.PHONY: test-unit
test-unit: ## Unit tests and examples with the race detector (fast, no cluster).
	CGO_ENABLED=1 $(GO) test -race -count=1 $$($(GO) list ./... | grep -v -E '$(INTEGRATION_PATTERN)')
	$(GRAFANA) CGO_ENABLED=1 $(GO) test -race -count=1 $$($(GO) list ./... | grep -v -E '$(INTEGRATION_PATTERN)')

.PHONY: test-integration
test-integration: build ## Integration tests against a local control plane (built first if missing).
	@$(MAKE) --no-print-directory controlplane WITH_KWOK=1
	CGO_ENABLED=1 $(GO) test -race -count=1 $$($(GO) list ./... | grep -E '$(INTEGRATION_PATTERN)')
	$(GRAFANA) CGO_ENABLED=1 $(GO) test -count=1 ./integration

.PHONY: test-bench
test-bench: ## Every benchmarked implementation on a tiny workload, in both cache-fill modes.
	cd bench && $(GO) test -count=1 ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet, tidy go.mod files and golangci-lint (pinned).
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt -w needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	$(GRAFANA) $(GO) vet ./...
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	$(GRAFANA) $(GO) mod tidy -diff
	$(GOLANGCI_LINT) run ./...
	cd bench && $(GOLANGCI_LINT) run --config ../.golangci.yml ./...
	$(GRAFANA) $(GOLANGCI_LINT) run --config ../.golangci.yml ./...

$(GOLANGCI_LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) from the Go module proxy into $(dir $@) (first time: about 3 minutes)"
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: generate
generate: ## Generate deepcopy, clients, listers, informers (code-generator v0.36.1), CRD YAML (controller-gen v0.21.0), the Grafana dashboards and docs/metrics.md.
	CACHE_DIR="$(CACHE_DIR)" hack/codegen/generate.sh
	$(GRAFANA) $(GO) run ./cmd/dashboards

.PHONY: verify-generate
verify-generate: ## Fail if generated code, CRDs, dashboards or docs/metrics.md are stale.
	CACHE_DIR="$(CACHE_DIR)" hack/codegen/verify.sh
	$(GRAFANA) $(GO) run ./cmd/dashboards -check

.PHONY: bench
bench: ## Compare Kooper with spotahome/kooper v2, controller-runtime and a bare informer (about 1.5 minutes).
	cd bench && $(GO) run ./cmd/compare -rounds 9

.PHONY: build
build: ## Build static binaries into bin/.
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o bin/ $(COMMANDS)

.PHONY: controlplane
controlplane: ## Build the local control plane into the user cache, linked from bin/ (WITH_KWOK=1 adds kwok; first time 9+ min).
	GO="$(GO)" WITH_KWOK="$(WITH_KWOK)" hack/controlplane/build.sh

.PHONY: clean
clean: ## Remove bin/ (the per-user tool cache stays).
	rm -rf bin/
