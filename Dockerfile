# syntax=docker/dockerfile:1
# Builds one operator into a static, trimmed binary stamped with its version,
# on distroless/static: no shell, no package manager, run as non-root.
#
#   make docker-build OPERATOR=pod-terminator IMG=registry.example/pod-terminator:v0.1.0
#
# or, without make:
#
#   docker build --build-arg OPERATOR=pod-terminator --build-arg VERSION=v0.1.0 \
#     -t registry.example/pod-terminator:v0.1.0 .
#
# CMD builds any other command of the repository instead, e.g.
# --build-arg CMD=./examples/pod-logger.
#
# The go build command is hack/build/build.sh, which `make build` runs too:
# bin/ holds the same binaries, without Docker. hack/build/build_test.go
# checks that they are static and trimmed, and that this file and the
# Makefile build through that script only.
ARG GO_VERSION=1.26

# The build runs on the builder's platform and cross-compiles to the
# target's (docker buildx build --platform linux/amd64,linux/arm64).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG OPERATOR=pod-terminator
ARG CMD=./operators/${OPERATOR}/cmd/${OPERATOR}
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	GOOS="${TARGETOS}" GOARCH="${TARGETARCH}" VERSION="${VERSION}" hack/build/build.sh /out/operator "${CMD}"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/operator /operator
# nonroot (65532), numerically, so that runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/operator"]
