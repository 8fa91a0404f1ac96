// Package build checks hack/build/build.sh, the one go build command of this
// repository: `make build` and the Dockerfile both run it, so the binaries in
// bin/ are the images' binaries. Its test builds the operators with it and
// proves, without Docker, what the images rely on: static binaries (no
// dynamic loader, no shared libraries: the images are scratch plus the
// binary),
// trimmed paths, CGO off and the version stamped; and that neither the
// Dockerfile nor the Makefile builds any other way.
package build
