package docscheck

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// checkedDocs are the documents whose names are checked, relative to the
// module's root. Add a document here once every name it gives is true.
func checkedDocs() []string {
	return []string{"docs/architecture.md"}
}

// TestDocsNameOnlyWhatExists: every name a checked document gives in
// backquotes (inline, or anywhere in a fenced block) is real. A path under
// one of the module's top folders (`sources/desired`,
// `manifest/project/render.go`) exists; `pkg.Ident` (`pkg` a package's
// path or, when unique, its last element) is a top-level identifier of
// that package, exported or not, its test files included;
// `pkg.Type.Member` a method or field of that type; `Type.Member` with no
// package a method or field of a type somewhere in the module; and every
// line of a fenced block marked `tree` starts with a package's path, and
// such a package imports (in its non-test files) no package named on an
// earlier line of its block: the arrows point down. A `pkg.key` that is a
// config key path (`sync.pullTimeout`) is a key, not an identifier.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	m, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range checkedDocs() {
		t.Run(doc, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(m.root, filepath.FromSlash(doc)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.check(string(text)) {
				t.Errorf("%s:%s", doc, p)
			}
		})
	}
}

// TestDocsCheckFindsBogusNames: the check fails on a package, file,
// identifier, method or tree line that does not exist and on a tree drawn
// upside down, and passes the same kinds of names when they are true.
func TestDocsCheckFindsBogusNames(t *testing.T) {
	m, err := loadModule()
	if err != nil {
		t.Fatal(err)
	}
	good := "`manifest/project`, `internal/docscheck/doc.go`, `sources.Merger.Apply`, `desired.Compute`,\n" +
		"`sync.concurrency`, `io.hostlet.spec`, `stateDir/rollouts.json`, `go test ./manifest/project/`.\n" +
		"```tree\nmanifest/project   renders\n  └── manifest   types\n```\n"
	if p := m.check(good); len(p) != 0 {
		t.Errorf("names that exist reported: %q", p)
	}
	bad := "`sources/bogus`\n`sync/bogus.go`\n`manifest.NoSuchThing`\n`desired.Compute.nothing`\n" +
		"`Merger.noSuchMethod`\n```tree\nbogus   a package that is not\n```\n" +
		"```tree\nmanifest   drawn above what imports it\nmanifest/project\n```\n"
	if p := m.check(bad); len(p) != 7 {
		t.Errorf("want 7 problems in the bogus document, got %d: %q", len(p), p)
	}
}

// module is what the check knows of the module: its packages (by path
// relative to the root), its top folders, the declarations of the packages
// parsed so far and the config's key names.
type module struct {
	root       string
	path       string
	pkgs       map[string]bool
	byLast     map[string][]string
	topDirs    map[string]bool
	decls      map[string]*decls
	configKeys map[string]bool
}

// decls are one package's top-level names and its types' members
// (methods, struct fields, interface methods).
type decls struct {
	names   map[string]bool
	members map[string]map[string]bool
}

// configPackage holds the config structs whose mapstructure tags are the
// config keys.
const configPackage = "internal/config"

func loadModule() (*module, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := modfileRE.FindSubmatch(gomod)
	if modPath == nil {
		return nil, errors.New("go.mod names no module")
	}
	m := &module{root: root, path: string(modPath[1]), pkgs: map[string]bool{}, byLast: map[string][]string{}, topDirs: map[string]bool{}, decls: map[string]*decls{}}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if rel != "." && !m.pkgs[rel] {
			m.pkgs[rel] = true
			m.byLast[path.Base(rel)] = append(m.byLast[path.Base(rel)], rel)
			m.topDirs[strings.SplitN(rel, "/", 2)[0]] = true
		}
		return nil
	})
	return m, err
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's folder")
		}
		dir = parent
	}
}

var (
	modfileRE  = regexp.MustCompile(`(?m)^module\s+(\S+)`)
	inlineCode = regexp.MustCompile("`([^`]+)`")
	tokenSep   = regexp.MustCompile(`[^A-Za-z0-9_./-]+`)
	fileExt    = regexp.MustCompile(`\.(go|md|json|ya?ml|sh|txt|png|mod|sum|tar)$`)
)

// check returns one line per name in text that does not exist, each
// starting with its line number.
func (m *module) check(text string) []string {
	var problems []string
	fence, fenceInfo := false, ""
	var drawn []drawnPkg // the packages of the tree block so far, top down
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") {
			if fence && fenceInfo == "tree" {
				problems = append(problems, m.checkArrows(drawn)...)
			}
			fence, fenceInfo, drawn = !fence, strings.TrimPrefix(trimmed, "```"), nil
			continue
		}
		var spans []string
		if fence {
			spans = []string{line}
			if fenceInfo == "tree" {
				pkg, p := m.checkTreeLine(line)
				if p != "" {
					problems = append(problems, fmt.Sprintf("%d: %s", n, p))
				} else if pkg != "" {
					drawn = append(drawn, drawnPkg{pkg, n})
				}
			}
		} else {
			for _, s := range inlineCode.FindAllStringSubmatch(line, -1) {
				spans = append(spans, s[1])
			}
		}
		for _, s := range spans {
			for _, tok := range tokenSep.Split(s, -1) {
				if p := m.checkToken(tok); p != "" {
					problems = append(problems, fmt.Sprintf("%d: %s", n, p))
				}
			}
		}
	}
	return problems
}

// checkTreeLine checks that a line of a package tree starts with a
// package's path (after the drawing characters) and returns it.
func (m *module) checkTreeLine(line string) (string, string) {
	rest := strings.TrimLeft(line, " │├└─")
	if rest == "" {
		return "", ""
	}
	first := strings.Fields(rest)[0]
	if !m.pkgs[first] {
		return "", fmt.Sprintf("tree line names %q, which is not a package of the module", first)
	}
	return first, ""
}

// drawnPkg is a package on a line of a tree block.
type drawnPkg struct {
	pkg  string
	line int
}

// checkArrows checks that no package of a tree block imports one drawn
// above it.
func (m *module) checkArrows(drawn []drawnPkg) []string {
	var problems []string
	above := map[string]bool{}
	for _, d := range drawn {
		imports, err := m.imports(d.pkg)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%d: %v", d.line, err))
		}
		for _, imp := range imports {
			if above[imp] {
				problems = append(problems, fmt.Sprintf("%d: tree: %s imports %s, drawn above it", d.line, d.pkg, imp))
			}
		}
		above[d.pkg] = true
	}
	return problems
}

// imports are the module's packages that pkg's non-test files import,
// each once.
func (m *module) imports(pkg string) ([]string, error) {
	prefix := m.path + "/"
	var out []string
	seen := map[string]bool{}
	dir := filepath.Join(m.root, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", pkg, err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", e.Name(), err)
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rel := strings.TrimPrefix(p, prefix); rel != p && !seen[rel] {
				seen[rel] = true
				out = append(out, rel)
			}
		}
	}
	return out, nil
}

// checkToken checks one word of a code span; words that name nothing of
// the module's (flags, endpoints, labels, other modules) pass.
func (m *module) checkToken(tok string) string {
	tok = strings.TrimPrefix(tok, "./")
	tok = strings.TrimRight(tok, "./")
	if tok == "" || !isLetter(tok[0]) {
		return ""
	}
	dir, base := "", tok
	if i := strings.LastIndex(tok, "/"); i >= 0 {
		dir, base = tok[:i+1], tok[i+1:]
	}
	if dir != "" && !m.topDirs[strings.SplitN(dir, "/", 2)[0]] {
		return "" // not a path inside the module: stateDir/..., docker/docker/client
	}
	if !strings.Contains(base, ".") || fileExt.MatchString(base) {
		if dir == "" {
			return "" // a word or a file name without a folder
		}
		if _, err := os.Stat(filepath.Join(m.root, filepath.FromSlash(tok))); err != nil {
			return fmt.Sprintf("%q is no package, folder or file of the module", tok)
		}
		return ""
	}
	segs := strings.Split(base, ".")
	pkg := dir + segs[0]
	switch {
	case dir != "" && !m.pkgs[pkg]:
		return fmt.Sprintf("%q: %q is not a package of the module", tok, pkg)
	case dir == "":
		if cands := m.byLast[pkg]; m.pkgs[pkg] || len(cands) == 1 {
			if !m.pkgs[pkg] {
				pkg = cands[0]
			}
		} else if len(cands) > 1 {
			return fmt.Sprintf("%q: %q is the last element of %v: give the package's path", tok, segs[0], cands)
		} else if isUpper(segs[0][0]) {
			return m.checkAnyMember(tok, segs)
		} else {
			return "" // a config key, a label, a JSON field
		}
	}
	return m.checkIdent(tok, pkg, segs[1:])
}

// checkIdent checks that pkg declares names[0] and, when there is a second
// name, that names[0] is a type with that method or field.
func (m *module) checkIdent(tok, pkg string, names []string) string {
	d, err := m.load(pkg)
	if err != nil {
		return fmt.Sprintf("%q: %v", tok, err)
	}
	if !d.names[names[0]] {
		if m.isConfigKey(strings.Split(tok, ".")) {
			return ""
		}
		return fmt.Sprintf("%q: package %s declares no %s", tok, pkg, names[0])
	}
	if len(names) > 1 && !d.members[names[0]][names[1]] {
		return fmt.Sprintf("%q: %s.%s has no method or field %s", tok, pkg, names[0], names[1])
	}
	return ""
}

// checkAnyMember checks that some package declares the type segs[0] with
// the method or field segs[1] (a Type.Member given without its package).
func (m *module) checkAnyMember(tok string, segs []string) string {
	for _, pkg := range m.sortedPkgs() {
		d, err := m.load(pkg)
		if err != nil {
			return fmt.Sprintf("%q: %v", tok, err)
		}
		if d.members[segs[0]][segs[1]] {
			return ""
		}
	}
	return fmt.Sprintf("%q: no package declares a type %s with a method or field %s", tok, segs[0], segs[1])
}

func (m *module) sortedPkgs() []string {
	out := make([]string, 0, len(m.pkgs))
	for p := range m.pkgs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// isConfigKey reports whether every segment is a key of the config
// (a mapstructure tag in configPackage).
func (m *module) isConfigKey(segs []string) bool {
	if m.configKeys == nil {
		m.configKeys = map[string]bool{}
		_ = m.parse(configPackage, func(f *ast.File) {
			ast.Inspect(f, func(n ast.Node) bool {
				if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
					tag, _ := strconv.Unquote(fld.Tag.Value)
					key, _, _ := strings.Cut(reflect.StructTag(tag).Get("mapstructure"), ",")
					m.configKeys[key] = key != "" && key != "-"
				}
				return true
			})
		})
	}
	for _, s := range segs {
		if !m.configKeys[s] {
			return false
		}
	}
	return true
}

// load parses the package's files (its tests' too) once and returns its
// declarations.
func (m *module) load(pkg string) (*decls, error) {
	if d, ok := m.decls[pkg]; ok {
		return d, nil
	}
	d := &decls{names: map[string]bool{}, members: map[string]map[string]bool{}}
	err := m.parse(pkg, func(f *ast.File) {
		for _, decl := range f.Decls {
			d.add(decl)
		}
	})
	if err != nil {
		return nil, err
	}
	m.decls[pkg] = d
	return d, nil
}

// parse parses every Go file of the package's folder, without resolving
// objects or type checking, and hands each to fn.
func (m *module) parse(pkg string, fn func(*ast.File)) error {
	dir := filepath.Join(m.root, filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read package %s: %w", pkg, err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", e.Name(), err)
		}
		fn(f)
	}
	return nil
}

func (d *decls) add(decl ast.Decl) {
	switch decl := decl.(type) {
	case *ast.FuncDecl:
		if decl.Recv == nil || len(decl.Recv.List) == 0 {
			d.names[decl.Name.Name] = true
			return
		}
		d.member(receiverType(decl.Recv.List[0].Type), decl.Name.Name)
	case *ast.GenDecl:
		for _, spec := range decl.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				d.names[spec.Name.Name] = true
				d.typeMembers(spec)
			case *ast.ValueSpec:
				for _, n := range spec.Names {
					d.names[n.Name] = true
				}
			}
		}
	}
}

// typeMembers records a struct's fields and an interface's methods
// (embedded ones by their type's name).
func (d *decls) typeMembers(spec *ast.TypeSpec) {
	var fields *ast.FieldList
	switch t := spec.Type.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			d.member(spec.Name.Name, receiverType(f.Type))
		}
		for _, n := range f.Names {
			d.member(spec.Name.Name, n.Name)
		}
	}
}

func (d *decls) member(typ, name string) {
	if d.members[typ] == nil {
		d.members[typ] = map[string]bool{}
	}
	d.members[typ][name] = true
}

// receiverType is the name of a receiver's (or an embedded field's) type:
// T, *T, T[P], pkg.T.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
