// Package integration runs the tutorials: every shell block of every
// docs/tutorial-*.md is executed, in order, in a copy of the work tree (so
// that what it writes, and a dev cluster it starts, are its own), and its
// output is compared with the text block that follows it. Two comments
// before a block change what is done with it:
//
//	<!-- run: not runnable: REASON -->
//	<!-- run: in the background until "TEXT" -->
//
// The first skips it, and the test counts it; the second runs it in the
// background (make devcluster, an operator under go run), goes on once its
// output holds TEXT, and interrupts it when the tutorial ends. In expected
// output, "..." stands for any text, and expected lines must appear in
// order, others between. It runs in `make test` and has no non-test code.
package integration
