// Package controllertest helps test code built on package controller
// without an API server.
//
// [Retriever] is an in-memory controller.Retriever (and client-go
// ListerWatcher) that unit tests drive with Add, Update and Delete. It serves
// the initial state the way a client-go 0.35+ reflector asks for it: as a
// streamed watch ending in an "initial events end" bookmark (watch-list), or,
// with Options.DisableWatchList, as a LIST followed by a WATCH from the
// list's resourceVersion, like a server or fake without watch-list support.
// Tests should cover both paths.
//
// Fakes are for fast tests of pure logic; behaviour that depends on the API
// server belongs in integration tests against a real control plane.
package controllertest
