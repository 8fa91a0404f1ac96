// Package inventory finds the operators of a Kooper repository and what
// belongs to each, and plans the removal of one (make remove-operator runs
// it through hack/template).
//
// What is an operator's is found in the tree, not listed anywhere:
//
//   - its directories: operators/<name>/, manifests/<name>/ and
//     manifests/rbac/<name>/;
//   - the API groups its code imports (apis/<group>/, with what make
//     generate made of them: their packages in apis/client/ and their CRDs
//     in manifests/crds/<group>/), unless another operator imports them
//     too;
//   - a Grafana dashboard whose controller variable selects its
//     controllers (grafana/dashboards/*.json);
//   - every Go file elsewhere that imports a package of those (a demo, a
//     fault run, a test of its CRDs): it cannot compile without them;
//   - what a marker says is its own, in any text file.
//
// A marker is a comment, in the file's own syntax (//, # or <!-- -->),
// that ends its line, with the operator's name for NAME:
//
//	+kooper:operator=NAME        alone on its line: the whole file
//	... +kooper:operator=NAME    after other text: that line
//	+kooper:operator-begin=NAME  alone on its line: the lines from here
//	+kooper:operator-end=NAME    alone on its line: to here, both included
//
// A Markdown link to a file that goes with the operator, left outside what
// goes, is turned into its text; an include of such a file or of a region
// that goes (hack/docs), left outside, is a problem that stops the removal
// before anything changes: mark the section that quotes it. Check finds
// the marker and link problems of every operator at once.
package inventory
