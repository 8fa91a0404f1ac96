// Package layout has no code: its test checks the module layout that
// docs/modules.md describes, as a user of the library meets it.
package layout
