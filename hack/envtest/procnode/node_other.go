//go:build !linux

package procnode

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
)

// Node is a registered node whose pods run as processes on this machine;
// only on Linux.
type Node struct{}

// Start returns an error wrapping ErrUnsupported: pods run as processes
// on Linux only.
func Start(context.Context, Options) (*Node, error) {
	return nil, fmt.Errorf("%w: %s (network namespaces need Linux)", ErrUnsupported, runtime.GOOS)
}

// Name is the node's name.
func (n *Node) Name() string { return "" }

// IP is the node's InternalIP.
func (n *Node) IP() netip.Addr { return netip.Addr{} }

// ContainerLogs lists the log of every container this node ran.
func (n *Node) ContainerLogs() []ContainerLog { return nil }

// Stop stops the node.
func (n *Node) Stop(context.Context) error { return nil }
