// Package docscheck holds the tests that keep the project's documents true
// to its code: every package, Go file and identifier a document names in
// backquotes exists in the module. It has no code of its own; the list of
// documents it covers is in docs_test.go (docs/architecture.md for now).
package docscheck
