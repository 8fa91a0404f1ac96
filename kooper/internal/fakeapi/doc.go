// Package fakeapi is the in-memory API of the library's own tests: a
// Retriever of one type that lists and watches like an API server, which
// tests drive with Add, Update and Delete.
//
// It serves the initial state the way a client-go 0.35+ reflector asks for
// it: as a streamed watch ending in an "initial events end" bookmark
// (watch-list), or, with Options.DisableWatchList, as a LIST followed by a
// WATCH from the list's resourceVersion, like a server or fake without
// watch-list support; the library's tests cover both paths. Calls records
// the List and Watch calls it received, and ListerWatcher hands it to
// client-go informers.
//
// Operators' tests use kooper/controller/controllertest, which wraps it.
package fakeapi
