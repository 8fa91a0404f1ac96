#!/usr/bin/env bash
# Fails when the generated code or CRDs differ from what generate.sh makes of
# the hand-written types. It generates into a temporary copy of the work tree
# (tracked and untracked files, .gitignore'd ones left out) and compares, so
# the work tree is never modified. Works on a clean clone in CI: the tools
# come from the Go module proxy, no Docker.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
# Compared between the work tree and the regenerated copy.
GENERATED=(apis manifests/crds go.mod go.sum)

TMP="$(mktemp -d)"
trap 'chmod -R u+w "${TMP}" 2>/dev/null; rm -rf "${TMP}"' EXIT
COPY="${TMP}/tree"
mkdir -p "${COPY}"

cd "${ROOT}"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# Tracked files deleted from the work tree are skipped.
	git ls-files -z --cached --others --exclude-standard \
		| while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
		| tar --null -T - -cf - | tar -xf - -C "${COPY}"
else
	tar --exclude=./bin --exclude=./dist -cf - . | tar -xf - -C "${COPY}"
fi

if ! "${ROOT}/hack/codegen/generate.sh" "${COPY}" >"${TMP}/generate.log" 2>&1; then
	cat "${TMP}/generate.log" >&2
	echo "verify-generate: generate.sh failed on a copy of the tree (output above)" >&2
	exit 1
fi

stale=()
for path in "${GENERATED[@]}"; do
	while IFS= read -r line; do
		stale+=("${line}")
	done < <(diff -rq "${ROOT}/${path}" "${COPY}/${path}" 2>&1 \
		| sed -e "s|^Files ${ROOT}/\(.*\) and .* differ$|changed: \1|" \
			-e "s|^Only in ${COPY}/\(.*\): \(.*\)$|missing: \1/\2|" \
			-e "s|^Only in ${ROOT}/\(.*\): \(.*\)$|not generated (remove it): \1/\2|" \
			-e "s|${COPY}/||g" -e "s|${ROOT}/||g" || true)
done

if ((${#stale[@]} > 0)); then
	{
		echo "generated files are stale: run make generate"
		printf '  %s\n' "${stale[@]}"
	} >&2
	exit 1
fi
echo "generated files are up to date"
