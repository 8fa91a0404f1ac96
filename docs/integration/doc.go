// Package integration runs the tutorials: every shell block of every
// docs/tutorial-*.md is executed, in order, in a copy of the work tree (so
// that what it writes, and a dev cluster it starts, are its own), and its
// output is compared with the text block that follows it. A comment before
// a block changes what is done with it:
//
//	<!-- run: not runnable: REASON -->
//	<!-- run: in the background until "TEXT" -->
//	<!-- run: exits non-zero -->
//	<!-- run: with make test-upgrade -->
//
// The first skips it, and the test counts it; the second runs it in the
// background (make devcluster, an operator under go run), goes on once its
// output holds TEXT (and its expected output, printed by then), and
// interrupts it when the tutorial ends, last started first; the third
// shows a refusal (a webhook's, RBAC's): the block must fail, and print its
// expected output. The fourth marks a step that needs the repository's
// history and root (a release built from the history, pods run as
// processes): TestTheTutorialsRun, in `make test`, leaves it, and
// TestTheTutorialsUpgradesRun, in `make test-upgrade`, runs the marked
// blocks alone, in order, in a copy that shares the history. The last
// three combine, separated by "; ". In expected output, "..." stands for
// any text, and expected lines must appear in order, others between. It
// has no non-test code.
package integration
