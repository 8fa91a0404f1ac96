#!/usr/bin/env bash
# Installs and removes a sample operator with kubectl alone (kustomize is
# built into kubectl), against the current kubectl context: $KUBECONFIG, else
# ~/.kube/config. make deploy and make undeploy call it; so do the tests in
# manifests/integration.
#
#   manifests/deploy.sh render   OPERATOR [IMAGE]   print what deploy applies
#   manifests/deploy.sh deploy   OPERATOR [IMAGE]   kubectl apply -k
#   manifests/deploy.sh upgrade  OPERATOR [IMAGE]   a new release: all but CRDs, rollout, CRDs
#   manifests/deploy.sh undeploy OPERATOR           custom resources, operator, CRDs
#
# OPERATOR is a directory of manifests/ with a kustomization.yaml
# (pod-terminator, multi-resource). IMAGE (name[:tag][@digest]) replaces the
# operator's image. kubectl has no `kustomize edit set image`, and the tree
# must not change, so IMAGE goes into a temporary overlay: a kustomization in
# a temporary directory whose only resource is the operator's directory
# (through a symlink: kustomize refuses absolute paths) and whose images:
# entry renames the image the operator's directory renders.
#
# Environment: KUBECTL (default kubectl), UNDEPLOY_TIMEOUT (default 2m: how
# long undeploy waits for the operator to finalize its custom resources),
# UPGRADE_TIMEOUT (default 5m: how long upgrade waits for the rollout).
set -euo pipefail

KUBECTL="${KUBECTL:-kubectl}"
UNDEPLOY_TIMEOUT="${UNDEPLOY_TIMEOUT:-2m}"
UPGRADE_TIMEOUT="${UPGRADE_TIMEOUT:-5m}"
MANIFESTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"

die() {
	echo "deploy.sh: $*" >&2
	exit 1
}

usage() {
	die "usage: deploy.sh render|deploy|upgrade OPERATOR [IMAGE] | undeploy OPERATOR"
}

# operator_dir OPERATOR: the operator's kustomization directory.
operator_dir() {
	local dir="${MANIFESTS}/$1"
	[[ "$1" =~ ^[a-z0-9-]+$ && -f "${dir}/kustomization.yaml" && "$1" != crds && "$1" != rbac ]] ||
		die "unknown operator \"$1\": want the name of a directory of manifests/ with a kustomization.yaml (pod-terminator, multi-resource)"
	echo "${dir}"
}

# image_name REF: REF without its tag and digest (a registry port stays).
image_name() {
	local name="${1%%@*}"
	if [[ "${name##*/}" == *:* ]]; then
		name="${name%:*}"
	fi
	echo "${name}"
}

# overlay DIR IMAGE: makes the temporary overlay of DIR setting IMAGE and
# prints its directory; the caller removes it.
overlay() {
	local dir="$1" image="$2" names ref tag="" digest=""
	[[ "${image}" =~ ^[A-Za-z0-9][A-Za-z0-9._/:@-]*$ ]] || die "invalid image \"${image}\""
	# The image the operator's directory renders (its kustomization's images:
	# default): that is the name the overlay's images: entry must match.
	names="$("${KUBECTL}" kustomize "${dir}" | awk '$1 == "image:" { print $2 } $1 == "-" && $2 == "image:" { print $3 }' | sort -u)"
	[[ -n "${names}" && "${names}" != *$'\n'* ]] || die "want exactly one image in ${dir}, got: ${names:-none}"
	ref="${image%%@*}"
	if [[ "${image}" == *@* ]]; then
		digest="${image#*@}"
	fi
	if [[ "${ref##*/}" == *:* ]]; then
		tag="${ref##*:}"
	fi
	local tmp
	tmp="$(mktemp -d)"
	ln -s "${dir}" "${tmp}/base"
	{
		echo "apiVersion: kustomize.config.k8s.io/v1beta1"
		echo "kind: Kustomization"
		echo "resources:"
		echo "  - base"
		echo "images:"
		echo "  - name: \"$(image_name "${names}")\""
		echo "    newName: \"$(image_name "${image}")\""
		if [[ -n "${tag}" ]]; then echo "    newTag: \"${tag}\""; fi
		if [[ -n "${digest}" ]]; then echo "    digest: \"${digest}\""; fi
	} >"${tmp}/kustomization.yaml"
	echo "${tmp}"
}

# with_target OPERATOR IMAGE COMMAND...: runs COMMAND with the directory to
# kustomize appended: the operator's own, or an overlay setting IMAGE.
with_target() {
	local dir image="$2"
	dir="$(operator_dir "$1")"
	shift 2
	if [[ -z "${image}" ]]; then
		"$@" "${dir}"
		return
	fi
	local tmp status=0
	tmp="$(overlay "${dir}" "${image}")"
	"$@" "${tmp}" || status=$?
	rm -rf "${tmp}"
	return "${status}"
}

render() {
	with_target "$1" "${2:-}" "${KUBECTL}" kustomize
}

deploy() {
	local op="$1" image="${2:-}"
	echo "deploying ${op}${image:+ with image ${image}}"
	with_target "${op}" "${image}" "${KUBECTL}" apply -k
	echo "${op} deployed; follow its rollout with: ${KUBECTL} rollout status -n kooper-${op} deployment/${op}"
}

# upgrade applies a new release of an installed operator in the order that
# refuses no call (docs/deploy.md): first everything but its CRDs, and waits
# until the new Deployment's replicas are all Ready, serving the admission
# and conversion webhooks; then its CRDs. A CRD whose conversion is by
# webhook gets, in the same apply, the CA bundle the operator already wrote
# into its ValidatingWebhookConfiguration (one CA signs both): with an empty
# one, every conversion would fail until the operator wrote it. Then
# migrate what is stored (make migrate-storage).
upgrade() (
	local op="$1" image="${2:-}" tmp
	echo "upgrading ${op}${image:+ to image ${image}}"
	tmp="$(mktemp -d)"
	# shellcheck disable=SC2064 # expand tmp now
	trap "rm -rf '${tmp}'" EXIT
	render "${op}" "${image}" >"${tmp}/all.yaml"
	# One file per CRD (crd-N.yaml), the rest together (rest.yaml); the
	# names of the ValidatingWebhookConfigurations (webhooks).
	awk -v dir="${tmp}" '
		function flush() {
			if (doc == "") return
			if (kind == "CustomResourceDefinition") { n++; printf "%s", doc > (dir "/crd-" n ".yaml") }
			else { printf "---\n%s", doc > (dir "/rest.yaml") }
			if (kind == "ValidatingWebhookConfiguration") print name > (dir "/webhooks")
			doc = ""; kind = ""; name = ""; inmeta = 0
		}
		/^---$/ { flush(); next }
		{ doc = doc $0 "\n" }
		/^kind: / { kind = $2 }
		/^metadata:/ { inmeta = 1; next }
		/^[^ ]/ { inmeta = 0 }
		inmeta && /^  name: / && name == "" { name = $2 }
		END { flush() }
	' "${tmp}/all.yaml"
	[[ -f "${tmp}/rest.yaml" ]] || die "${op} renders nothing but CRDs"
	"${KUBECTL}" apply -f "${tmp}/rest.yaml"
	echo "waiting for every replica of the new ${op} to be Ready (at most ${UPGRADE_TIMEOUT})"
	"${KUBECTL}" rollout status -n "kooper-${op}" "deployment/${op}" --timeout="${UPGRADE_TIMEOUT}"
	local ca="" vwc
	if [[ -f "${tmp}/webhooks" ]]; then
		while IFS= read -r vwc; do
			ca="$("${KUBECTL}" get validatingwebhookconfiguration "${vwc}" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
			[[ -n "${ca}" ]] && break
		done <"${tmp}/webhooks"
	fi
	# An operator with no admission webhook keeps its CA in the Secret of
	# its certificate only (make new-version's).
	if [[ -z "${ca}" ]]; then
		ca="$("${KUBECTL}" get secret -n "kooper-${op}" "${op}-webhook-tls" -o jsonpath='{.data.ca\.crt}' --ignore-not-found)"
	fi
	local crd
	for crd in "${tmp}"/crd-*.yaml; do
		[[ -e "${crd}" ]] || continue
		if grep -q '^    strategy: Webhook$' "${crd}"; then
			[[ -n "${ca}" ]] || die "${op}'s CRD converts by webhook, but neither a ValidatingWebhookConfiguration of ${op} nor the Secret kooper-${op}/${op}-webhook-tls holds a CA bundle yet: is ${op} running?"
			"${KUBECTL}" patch --local -f "${crd}" --type=json -o yaml \
				-p "[{\"op\": \"add\", \"path\": \"/spec/conversion/webhook/clientConfig/caBundle\", \"value\": \"${ca}\"}]" >"${crd}.patched"
			mv "${crd}.patched" "${crd}"
		fi
		"${KUBECTL}" apply -f "${crd}"
	done
	echo "${op} upgraded; if a CRD's storage version changed, migrate what is stored: make migrate-storage CRD=<plural>.<group>"
)

# undeploy removes, in this order: the operator's custom resources, waiting
# until they are gone, while the operator still runs to remove its finalizers;
# the operator's own objects (all labelled app.kubernetes.io/name=OPERATOR);
# its CRDs. The operator's objects include its own namespaces (labelled like
# the rest): the namespace controller deletes what is left in them, such as
# the Lease, and delete waits for that.
undeploy() {
	local op="$1" dir installed crds=() line
	dir="$(operator_dir "${op}")"
	# What of this operator is installed, as kind/name.
	installed="$("${KUBECTL}" get -k "${dir}" -o name --ignore-not-found)"
	while IFS= read -r line; do
		case "${line}" in
		customresourcedefinition.apiextensions.k8s.io/*) crds+=("${line#*/}") ;;
		esac
	done <<<"${installed}"

	local crd
	for crd in ${crds[@]+"${crds[@]}"}; do
		echo "deleting every ${crd} and waiting for ${op} to finalize them (at most ${UNDEPLOY_TIMEOUT})"
		if ! "${KUBECTL}" delete "${crd}" --all --all-namespaces --wait --timeout="${UNDEPLOY_TIMEOUT}"; then
			die "some ${crd} are not gone after ${UNDEPLOY_TIMEOUT}: is ${op} running? (${KUBECTL} get ${crd}: a finalizer left on purpose can be removed by hand); ${op} was left installed"
		fi
	done

	echo "deleting ${op}"
	"${KUBECTL}" delete -k "${dir}" -l "app.kubernetes.io/name=${op}" --ignore-not-found --wait
	if ((${#crds[@]} > 0)); then
		"${KUBECTL}" delete customresourcedefinitions "${crds[@]}" --ignore-not-found --wait
	fi
}

(($# >= 2)) || usage
case "$1" in
render | deploy | upgrade)
	(($# <= 3)) || usage
	"$1" "$2" "${3:-}"
	;;
undeploy)
	(($# == 2)) || usage
	undeploy "$2"
	;;
*) usage ;;
esac
