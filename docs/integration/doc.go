// Package integration runs the tutorials: every shell block of every
// docs/tutorial-*.md is executed, in order, in a copy of the work tree (so
// that what it writes, and a dev cluster it starts, are its own), and its
// output is compared with the text block that follows it. Three comments
// before a block change what is done with it:
//
//	<!-- run: not runnable: REASON -->
//	<!-- run: in the background until "TEXT" -->
//	<!-- run: exits non-zero -->
//
// The first skips it, and the test counts it; the second runs it in the
// background (make devcluster, an operator under go run), goes on once its
// output holds TEXT (and its expected output, printed by then), and
// interrupts it when the tutorial ends, last started first; the third
// shows a refusal (a webhook's, RBAC's): the block must fail, and print its
// expected output. In expected
// output, "..." stands for any text, and expected lines must appear in
// order, others between. It runs in `make test` and has no non-test code.
package integration
