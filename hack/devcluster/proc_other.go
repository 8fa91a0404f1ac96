//go:build !linux

package main

func takeTerminal() (restore func()) { return func() {} }
