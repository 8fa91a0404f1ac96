#!/usr/bin/env bash
# Generates everything derived from the hand-written types in apis/:
#   - deep-copy functions (zz_generated.deepcopy.go), the typed clientset
#     (+fake), listers and informers in apis/client/, with k8s.io/code-generator;
#   - the CRD YAML in manifests/crds/, with controller-gen (controller-tools).
# Both are built from the Go module proxy at pinned versions (no Docker) and
# cached per user in $CACHE_DIR/tools/<tool>-<version>/. code-generator runs
# from its own module directory in the module cache, so it never becomes a
# requirement of the root go.mod; `go mod tidy` runs last.
#
# Usage: hack/codegen/generate.sh [ROOT]   (ROOT defaults to this repository;
# verify.sh passes a temporary copy).
set -euo pipefail

CODEGEN_VERSION=v0.36.1          # k8s.io/code-generator, the client-go line we use
CONTROLLER_TOOLS_VERSION=v0.21.0 # sigs.k8s.io/controller-tools (1.36 line)

ROOT="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd -P)"
CACHE_DIR="${CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kooper}"
BOILERPLATE="${ROOT}/hack/codegen/boilerplate.go.txt"
MODULE="$(cd "${ROOT}" && go list -m)"

# The generators' own modules come from the module proxy, not a workspace.
export GOWORK=off

# controller-gen: installed once per version.
CONTROLLER_GEN_DIR="${CACHE_DIR}/tools/controller-gen-${CONTROLLER_TOOLS_VERSION}"
CONTROLLER_GEN="${CONTROLLER_GEN_DIR}/controller-gen"
if [[ ! -x "${CONTROLLER_GEN}" ]]; then
	echo "installing controller-gen ${CONTROLLER_TOOLS_VERSION} into ${CONTROLLER_GEN_DIR} (first time: about 30s)"
	GOBIN="${CONTROLLER_GEN_DIR}" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_TOOLS_VERSION}"
fi

# code-generator: kube_codegen.sh is sourced from the module cache and
# `go install`s its generators from there into $GOBIN (read when sourced):
# a per-version directory of our cache, so a warm run only checks the Go
# build cache.
CODEGEN_MODDIR="$(go env GOMODCACHE)/k8s.io/code-generator@${CODEGEN_VERSION}"
if [[ ! -f "${CODEGEN_MODDIR}/kube_codegen.sh" ]]; then
	echo "downloading k8s.io/code-generator ${CODEGEN_VERSION} from the Go module proxy"
	(cd "$(mktemp -d)" && go mod download "k8s.io/code-generator@${CODEGEN_VERSION}")
fi
export GOBIN="${CACHE_DIR}/tools/code-generator-${CODEGEN_VERSION}"
mkdir -p "${GOBIN}"
# shellcheck source=/dev/null
source "${CODEGEN_MODDIR}/kube_codegen.sh"

cd "${ROOT}"
# kube_codegen.sh greps these for old files to remove; create them so a first
# run does not print "No such file or directory".
mkdir -p apis/client/clientset apis/client/listers apis/client/informers
kube::codegen::gen_helpers \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/apis"

kube::codegen::gen_client \
	--with-watch \
	--output-dir "${ROOT}/apis/client" \
	--output-pkg "${MODULE}/apis/client" \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/apis"

# controller-gen writes one file per CRD; remove the old ones first so a
# deleted type does not leave its CRD behind (README.md stays).
rm -f "${ROOT}"/manifests/crds/*.yaml
echo "Generating CRDs into manifests/crds"
"${CONTROLLER_GEN}" crd paths="./apis/..." output:crd:artifacts:config=manifests/crds

go mod tidy
