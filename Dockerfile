# syntax=docker/dockerfile:1
# Builds one operator into a static, trimmed binary stamped with its version,
# on an empty base (scratch): the binary, a non-root user, nothing else.
#
#   make docker-build OPERATOR=my-operator IMG=registry.example/my-operator:v0.1.0
#
# or, without make:
#
#   docker build --build-arg OPERATOR=my-operator --build-arg VERSION=v0.1.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     -t registry.example/my-operator:v0.1.0 .
#
# where my-operator is a directory of operators/ (OPERATOR has no default).
#
# CMD builds any other command of the repository instead, e.g.
# --build-arg CMD=./examples/pod-logger.
#
# The go build command is hack/build/build.sh, which `make build` runs too:
# bin/ holds the same binaries, without Docker. hack/build/build_test.go
# checks that they are static and trimmed, and that this file and the
# Makefile build through that script only.
#
# `make image` builds the same image without Docker (hack/image, from the
# binary of make build): its tests check that this file's final stage has
# the layout and labels of that image. See docs/deploy.md.
ARG GO_VERSION=1.26
# The builder image, by tag: a tag moves as Go's patch releases and Debian's
# updates land. For a reproducible build, pin it by digest:
#   make docker-build GO_IMAGE=golang:1.26@sha256:<digest>
# (docker buildx imagetools inspect golang:1.26 prints the digest). Only the
# build stage uses it: the final image is scratch and the binary.
ARG GO_IMAGE=golang:${GO_VERSION}

# The build runs on the builder's platform and cross-compiles to the
# target's (docker buildx build --platform linux/amd64,linux/arm64).
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
# The root module replaces the library's (kooper/) and envtest's modules
# with their directories: go mod download reads their go.mod files.
COPY go.mod go.sum ./
COPY kooper/go.mod kooper/go.sum kooper/
COPY hack/envtest/go.mod hack/envtest/go.sum hack/envtest/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG OPERATOR
ARG CMD=./operators/${OPERATOR}/cmd/${OPERATOR}
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	if [ "${CMD}" = ./operators//cmd/ ]; then echo "name the operator to build: --build-arg OPERATOR=<a directory of operators/>" >&2; exit 1; fi; \
	GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" VERSION="${VERSION}" hack/build/build.sh /out/operator "${CMD}"

# The operators need no file but their own: they speak TLS only to the API
# server, whose CA comes from the ServiceAccount mount or the kubeconfig, and
# an operator's webhook serves its own certificate. So no CA bundle,
# no tzdata, no /etc/passwd, no shell.
FROM scratch
ARG OPERATOR
ARG VERSION=dev
ARG REVISION=
# Owned by 0:0 (COPY's default), so the process cannot change it.
COPY --from=build --chmod=0755 /out/operator /operator
# distroless' nonroot (65532), numerically, so that runAsNonRoot can verify
# it: there is no /etc/passwd to resolve a name.
USER 65532:65532
ENTRYPOINT ["/operator"]
LABEL org.opencontainers.image.title="${OPERATOR}" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.source="https://github.com/kooperkit/kooper" \
	org.opencontainers.image.licenses="Apache-2.0"
