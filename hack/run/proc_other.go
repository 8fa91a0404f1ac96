//go:build !linux

package main

import "syscall"

func ownGroup() *syscall.SysProcAttr { return nil }

func takeTerminal() (restore func()) { return func() {} }
