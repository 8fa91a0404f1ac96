// Package integration checks kooper/health's secure metrics against a
// local control plane: real tokens, reviewed by a real API server.
package integration
