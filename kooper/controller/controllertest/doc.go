// Package controllertest helps test code built on package controller
// without an API server.
//
// [Retriever] is an in-memory controller.Retriever that unit tests drive
// with Add, Update and Delete. It serves the initial state as a client-go
// reflector asks for it (a streamed watch ending in an "initial events end"
// bookmark), and every change as a watch event, with increasing
// resourceVersions.
//
// Fakes are for fast tests of pure logic; behaviour that depends on the API
// server belongs in integration tests against a real control plane.
package controllertest
