# syntax=docker/dockerfile:1
# Builds one command of this repository into a static, trimmed binary on a
# distroless base that runs as non-root and has no shell:
#
#   docker build --build-arg CMD=./operators/pod-terminator/cmd/pod-terminator \
#     --build-arg VERSION=$(git describe --tags --always) -t pod-terminator .
#
# The go build flags are the Makefile's BUILD_FLAGS (`make build` produces the
# same binaries without Docker).
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG CMD=./examples/pod-logger
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/app "${CMD}"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/app /app
USER 65532:65532
ENTRYPOINT ["/app"]
