#!/usr/bin/env bash
# Generates everything derived from the hand-written types in apis/:
#   - with k8s.io/code-generator: deep-copy functions (zz_generated.deepcopy.go),
#     OpenAPI model names (zz_generated.model_name.go) and, in apis/client/,
#     the OpenAPI definitions, the apply configurations, the typed clientset
#     (+fake), listers and informers;
#   - the CRD YAML in manifests/crds/<group>/, with controller-gen
#     (controller-tools), and a kustomization.yaml per API group plus one for
#     all of them in manifests/crds/.
# Both are built from the Go module proxy at pinned versions (no Docker) and
# cached per user in $CACHE_DIR/tools/<tool>-<version>/. code-generator runs
# from its own module directory in the module cache, so it never becomes a
# requirement of the root go.mod; `go mod tidy` runs last.
#
# Usage: hack/codegen/generate.sh [--crds] [ROOT]   (ROOT defaults to this
# repository; verify.sh passes a temporary copy). --crds makes the CRD YAML
# only (make manifests).
set -euo pipefail

CRDS_ONLY=false
if [[ "${1:-}" == --crds ]]; then
	CRDS_ONLY=true
	shift
fi

CODEGEN_VERSION=v0.37.2          # k8s.io/code-generator, the client-go line we use (both: hack/bump)
CONTROLLER_TOOLS_VERSION=v0.23.0 # sigs.k8s.io/controller-tools, newest release on that line

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

cd "${ROOT}"
TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

if [[ "${CRDS_ONLY}" == false ]]; then
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

	# kube_codegen.sh greps these for old files to remove; create them so a first
	# run does not print "No such file or directory".
	mkdir -p apis/client/applyconfiguration apis/client/clientset apis/client/listers apis/client/informers
	kube::codegen::gen_helpers \
		--boilerplate "${BOILERPLATE}" \
		"${ROOT}/apis"

	# Apply configurations give the clientset Apply and ApplyStatus, and the
	# fake NewClientset, which tracks managed fields. They need the types'
	# OpenAPI schema, or the fake refuses every write of a custom resource
	# ("no type found matching"): openapi-gen writes it into
	# apis/client/openapi, with OpenAPIModelName methods returning the name
	# applyconfiguration-gen looks a type up by (+k8s:openapi-model-package in
	# doc.go), and models-schema prints it as OpenAPI v2. A file rather than
	# <(...), so that a failing models-schema stops the script.
	#
	# openapi-gen also checks the Kubernetes API rules (a +listType on every
	# list, JSON names matching the Go names, ...). A violation in apis/ stops
	# the script; apimachinery's own types have some, not ours to fix.
	#
	# The model package must be the Go package path in OpenAPI's form
	# (com.github.kooperkit.kooper.apis.chaos.v1alpha1): applyconfiguration-gen
	# turns a type it cannot find into an untyped one without a word, so a
	# renamed module must fail here instead.
	for doc in $(grep -l '^// +k8s:openapi-gen=true$' apis/*/*/doc.go); do
		pkg="${MODULE}/$(dirname "${doc}")"
		host="${pkg%%/*}"
		want="$(tr . '\n' <<<"${host}" | tac | paste -sd .).$(tr / . <<<"${pkg#*/}")"
		if ! grep -qxF "// +k8s:openapi-model-package=${want}" "${doc}"; then
			echo "${doc}: want the marker // +k8s:openapi-model-package=${want}" >&2
			exit 1
		fi
	done
	kube::codegen::gen_openapi \
		--output-dir "${ROOT}/apis/client/openapi" \
		--output-pkg "${MODULE}/apis/client/openapi" \
		--output-model-name-file zz_generated.model_name.go \
		--report-filename "${TMP}/api-rule-violations.list" \
		--update-report \
		--boilerplate "${BOILERPLATE}" \
		"${ROOT}/apis"
	violations="$(grep -F ",${MODULE}/apis/" "${TMP}/api-rule-violations.list" || true)"
	if [[ -n "${violations}" ]]; then
		echo "the types in apis/ break these Kubernetes API rules (rule,package,type,field):" >&2
		echo "${violations}" >&2
		exit 1
	fi
	go run ./hack/codegen/models-schema >"${TMP}/models-schema.json"

	kube::codegen::gen_client \
		--with-watch \
		--with-applyconfig \
		--applyconfig-openapi-schema "${TMP}/models-schema.json" \
		--output-dir "${ROOT}/apis/client" \
		--output-pkg "${MODULE}/apis/client" \
		--boilerplate "${BOILERPLATE}" \
		"${ROOT}/apis"
	# The generators delete the files of a removed API group, not its
	# directories: git keeps no empty directory, so verify-generate would
	# find them in the work tree only.
	find apis/client -mindepth 1 -type d -empty -delete
fi

# controller-gen writes one file per CRD, <group>_<plural>.yaml. Each API
# group gets its own directory, named after the group's first label
# (chaos.kooperkit.io -> manifests/crds/chaos/, like apis/chaos/), with a
# kustomization.yaml: an operator's kustomization includes its own group's
# directory only, so undeploying one operator never deletes another's CRDs.
# Everything is regenerated from scratch, so a deleted type or group leaves
# nothing behind (README.md stays).
echo "Generating CRDs into manifests/crds"
CRD_TMP="${TMP}/crds"
mkdir "${CRD_TMP}"
"${CONTROLLER_GEN}" crd paths="./apis/..." output:crd:artifacts:config="${CRD_TMP}"
find manifests/crds -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
groups=()
for file in "${CRD_TMP}"/*.yaml; do
	name="$(basename "${file}")"
	group="${name%%_*}"
	dir="${group%%.*}"
	if [[ ! -d "manifests/crds/${dir}" ]]; then
		mkdir -p "manifests/crds/${dir}"
		groups+=("${dir}")
		printf '%s\n' \
			"# Generated by hack/codegen/generate.sh: the CRDs of the ${group} API group." \
			"apiVersion: kustomize.config.k8s.io/v1beta1" \
			"kind: Kustomization" \
			"labels:" \
			"  - pairs:" \
			"      app.kubernetes.io/part-of: kooper" \
			"resources:" >"manifests/crds/${dir}/kustomization.yaml"
	fi
	cp "${file}" "manifests/crds/${dir}/${name}"
	echo "  - ${name}" >>"manifests/crds/${dir}/kustomization.yaml"
done
# A group served in several versions says how its CRDs convert between
# them in apis/<group>/conversion.yaml, a patch of its CRDs (controller-gen
# writes no spec.conversion): copied beside them, and applied by their
# kustomization.
for dir in "${groups[@]}"; do
	if [[ -f "apis/${dir}/conversion.yaml" ]]; then
		cp "apis/${dir}/conversion.yaml" "manifests/crds/${dir}/conversion.yaml"
		printf '%s\n' "patches:" "  - path: conversion.yaml" >>"manifests/crds/${dir}/kustomization.yaml"
	fi
done
{
	echo "# Generated by hack/codegen/generate.sh: every CRD of this repository"
	echo "# (kubectl apply -k manifests/crds). An operator's kustomization includes"
	echo "# its own group's directory only."
	echo "apiVersion: kustomize.config.k8s.io/v1beta1"
	echo "kind: Kustomization"
	echo "resources:"
	printf '  - %s\n' "${groups[@]}"
} >manifests/crds/kustomization.yaml

if [[ "${CRDS_ONLY}" == false ]]; then
	go mod tidy
fi
