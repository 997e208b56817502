package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Literals returns, from the Go files matching each glob (relative to the
// package's folder), every string that a constant expression of string
// literals joined by + spells (each whole expression once, its parts not
// again) and that keep accepts, in file and position order, each once. It
// fails t when no file matches a glob or one does not parse.
//
// It makes the hostile inputs written in tests (the attack tests' tables
// of manifests, Compose files, Dockerfiles, streams) the seeds of a fuzz
// target: an input added to those tests joins the target's corpus with no
// change to the target.
func Literals(t testing.TB, keep func(string) bool, globs ...string) []string {
	t.Helper()
	var files []string
	for _, g := range globs {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			t.Fatalf("no file matches %s", g)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	var out []string
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			s, ok := literal(n)
			if !ok {
				return true
			}
			if !seen[s] && keep(s) {
				seen[s] = true
				out = append(out, s)
			}
			return false
		})
	}
	return out
}

// literal is the string that n spells when it is a string literal or
// literals joined by +.
func literal(n ast.Node) (string, bool) {
	switch e := n.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := literal(e.X)
		if !ok {
			return "", false
		}
		y, ok := literal(e.Y)
		return x + y, ok
	case *ast.ParenExpr:
		return literal(e.X)
	}
	return "", false
}
