//go:build !linux

package main

import "syscall"

func ownGroup() *syscall.SysProcAttr { return nil }
