package compose

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/hashicorp/go-multierror"
	yaml3 "go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// Files reads the files of one project folder at one revision of its
// source. Names are slash-separated and relative to the project folder; a
// file that is not there is an error wrapping fs.ErrNotExist. Any file, a
// link or a name leaving the folder included, is the implementation's to
// refuse: Load only asks for names that fs.ValidPath accepts.
type Files interface {
	ReadFile(name string) ([]byte, error)
	// Names are every file's name, sorted.
	Names() []string
	// Executable reports whether the file is executable in its source.
	Executable(name string) bool
}

// Bounds of a project: the replicas of a service (each a pod), the pods
// of a project, the ports of a container (a range counts port by port).
const (
	MaxReplicas = 100
	MaxPods     = 1000
	MaxPorts    = 1000
)

// EnvFile is the project's interpolation file, beside the Compose file.
const EnvFile = ".env"

// Options are the host's settings and the project's place in its source.
type Options = project.Options

// Host are the host config's Compose settings.
type Host = project.Host

// Load reads the project in files and returns its services as pods, in
// service-name order (replicas in order). The error, if any, is a
// *multierror.Error of *manifest.Error: every problem of the project at
// once. Problems of one service (a key hostlet does not apply, a variable
// without a value) are in that pod's Errors; problems of the project as a
// whole (a file that does not load, a top-level key refused) are returned
// without pods.
func Load(ctx context.Context, files Files, opts Options) ([]manifest.Sourced, error) {
	cfgFiles, err := composeFiles(files, opts)
	if err != nil {
		return nil, err
	}
	env, err := projectEnv(files, opts.Env)
	if err != nil {
		return nil, projectError(opts, EnvFile, err.Error())
	}
	return load(ctx, files, opts, cfgFiles, env)
}

// Render renders a bundle: what the hostlet-compose helper answers.
func Render(ctx context.Context, b project.Bundle) project.Response {
	var (
		pods []manifest.Sourced
		err  error
	)
	if b.Body != nil {
		pods, err = LoadBytes(ctx, b.Body, b.Options)
	} else {
		pods, err = Load(ctx, &b, b.Options)
	}
	resp := project.Response{Manifests: pods}
	if resp.Manifests == nil {
		resp.Manifests = []manifest.Sourced{}
	}
	var merr *multierror.Error
	if errors.As(err, &merr) {
		for _, e := range merr.Errors {
			var me *manifest.Error
			if errors.As(e, &me) {
				resp.Errors = append(resp.Errors, me)
			} else {
				resp.Errors = append(resp.Errors, &manifest.Error{Origin: manifest.Origin{Source: b.Options.Source, File: b.Options.Dir}, Detail: e.Error()})
			}
		}
	}
	return resp
}

// LoadBytes reads a project delivered as one body (HTTP, etcd): no .env,
// no files beside it; env_file and bind mounts of relative paths are
// errors.
func LoadBytes(ctx context.Context, data []byte, opts Options) ([]manifest.Sourced, error) {
	env := map[string]string{}
	for k, v := range opts.Env {
		env[k] = v
	}
	return load(ctx, noFiles{}, opts, []projectFile{{name: "", data: data}}, env)
}

type noFiles struct{}

func (noFiles) Names() []string        { return nil }
func (noFiles) Executable(string) bool { return false }

func (noFiles) ReadFile(name string) ([]byte, error) {
	return nil, fmt.Errorf("%s: a project delivered as one body has no files beside it: %w", name, fs.ErrNotExist)
}

type projectFile struct {
	name string
	data []byte
}

// findOne reads the one file of names that exists; none is the zero value,
// more than one an error.
// composeFiles are the project's Compose files in merge order: the one
// named (opts.File) alone, else the folder's one of ProjectFiles and its
// override when there is one. The error is a project error.
func composeFiles(files Files, opts Options) ([]projectFile, error) {
	if opts.File != "" {
		data, err := files.ReadFile(opts.File)
		if err != nil {
			return nil, projectError(opts, opts.File, err.Error())
		}
		return []projectFile{{name: opts.File, data: data}}, nil
	}
	main, err := findOne(files, project.ProjectFiles)
	if err != nil {
		return nil, projectError(opts, "", err.Error())
	}
	if main.name == "" {
		return nil, projectError(opts, "", fmt.Sprintf("no Compose file (one of %s)", strings.Join(project.ProjectFiles, ", ")))
	}
	override, err := findOne(files, project.OverrideFiles)
	if err != nil {
		return nil, projectError(opts, main.name, err.Error())
	}
	if override.name == "" {
		return []projectFile{main}, nil
	}
	return []projectFile{main, override}, nil
}

func findOne(files Files, names []string) (projectFile, error) {
	var found []projectFile
	for _, n := range names {
		data, err := files.ReadFile(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return projectFile{}, fmt.Errorf("%s: %w", n, err)
		}
		found = append(found, projectFile{name: n, data: data})
	}
	switch len(found) {
	case 0:
		return projectFile{}, nil
	case 1:
		return found[0], nil
	}
	return projectFile{}, fmt.Errorf("both %s and %s are here: keep one", found[0].name, found[1].name)
}

// projectEnv is the interpolation environment: the project's .env, then
// the host's compose.env over it.
func projectEnv(files Files, host map[string]string) (map[string]string, error) {
	env := map[string]string{}
	data, err := files.ReadFile(EnvFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		vars, err := dotenv.ParseWithLookup(bytes.NewReader(data), lookupIn(host))
		if err != nil {
			return nil, dotenvError(err)
		}
		for k, v := range vars {
			env[k] = v
		}
	}
	for k, v := range host {
		env[k] = v
	}
	return env, nil
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

var dotenvLineRE = regexp.MustCompile(`\bline (\d+)\b`)

// dotenvError says which line of an env file does not parse, and nothing
// of its text: the parser quotes the value, which may be a secret.
func dotenvError(err error) error {
	if m := dotenvLineRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("line %s: not valid env-file syntax (KEY=VALUE)", m[1])
	}
	return errors.New("not valid env-file syntax (KEY=VALUE)")
}

func projectError(opts Options, file, detail string) error {
	return &multierror.Error{Errors: []error{&manifest.Error{Origin: origin(opts, file, 0), Detail: detail}}}
}

func origin(opts Options, file string, index int) manifest.Origin {
	return manifest.Origin{Source: opts.Source, File: displayPath(opts.Dir, file), Index: index}
}

func displayPath(dir, file string) string {
	switch {
	case dir == "" || dir == ".":
		return file
	case file == "":
		return dir
	}
	return path.Join(dir, file)
}

// load loads the project and takes every value it was given out of the
// errors: an interpolated value lands in typed fields whose parsers quote
// it (invalid hostPort: <value>), and it may be a secret.
func load(ctx context.Context, files Files, opts Options, cfgFiles []projectFile, env map[string]string) ([]manifest.Sourced, error) {
	given := slices.Collect(maps.Values(env)) // compose-go adds COMPOSE_PROJECT_NAME to env
	refs := &bundleFiles{files: files}
	defer refs.close()
	made := &interpolations{}
	pods, err := loadGuarded(ctx, refs, made, opts, cfgFiles, env)
	// An included folder's .env holds values as secret as the root's.
	given = slices.Concat(given, refs.envValues, made.values())
	s := newScrubber(given)
	for i := range pods {
		made.hide(&pods[i])
		for _, e := range slices.Concat(pods[i].Errors, pods[i].Notes) {
			s.scrub(e)
		}
	}
	var merr *multierror.Error
	if errors.As(err, &merr) {
		for _, e := range merr.Errors {
			var me *manifest.Error
			if errors.As(e, &me) {
				s.scrub(me)
			}
		}
	}
	return pods, err
}

// loadGuarded is loadProject with a panic of compose-go turned into the
// project's error: some inputs make the library panic before its schema
// is checked (v2.16.2: an env_file item whose path is not a string), and
// a project is refused, never the end of the helper (or of a test, or
// of validate). Its message names the panic's kind, not its text.
func loadGuarded(ctx context.Context, refs *bundleFiles, made *interpolations, opts Options, cfgFiles []projectFile, env map[string]string) (pods []manifest.Sourced, err error) {
	defer func() {
		if p := recover(); p != nil {
			kind := "a panic"
			if _, ok := p.(runtime.Error); ok {
				kind = "a runtime error"
			}
			pods, err = nil, projectError(opts, cfgFiles[0].name, "the Compose library failed on this file ("+kind+
				"): a key's value is of a kind the Compose specification does not allow")
		}
	}()
	return loadProject(ctx, refs, made, opts, cfgFiles, env)
}

// loadProject runs compose-go on the project's files (their contents: it
// reads nothing itself) and translates the services.
func loadProject(ctx context.Context, refs *bundleFiles, made *interpolations, opts Options, cfgFiles []projectFile, env map[string]string) ([]manifest.Sourced, error) {
	files := refs.files
	first := cfgFiles[0].name
	var errs []error
	details := types.ConfigDetails{WorkingDir: "/" + projectFolder(opts), Environment: env}
	for _, f := range cfgFiles {
		// First: a file too large or too deep is read no further (the
		// include checks decode it whole).
		if msgs := preScan(f.data); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, &manifest.Error{Origin: origin(opts, f.name, 0), Detail: msg})
			}
			continue
		}
		refs.useView = refs.useView || hasInclude(f.data)
		for _, msg := range vetIncludes(f.data) {
			errs = append(errs, &manifest.Error{Origin: origin(opts, f.name, 0), Detail: msg})
		}
		details.ConfigFiles = append(details.ConfigFiles, types.ConfigFile{Filename: displayPath(opts.Dir, f.name), Content: f.data})
	}
	if len(errs) > 0 {
		return nil, &multierror.Error{Errors: errs}
	}
	var findings []loader.UnsupportedAttribute
	configure := func(o *loader.Options) {
		o.SkipResolveEnvironment = true
		o.SkipResolveLabels = true
		// First, so that it answers for every path: compose-go's own
		// loader of local files, appended after it, is never asked.
		o.ResourceLoaders = []loader.ResourceLoader{refs}
		o.ResolvePaths = false
		o.Profiles = opts.Profiles
		o.SetProjectName(loader.NormalizeProjectName(projectFolder(opts)), false)
		o.Interpolate.Substitute = made.substitute
		o.UnsupportedAttributesCheck = &loader.UnsupportedAttributesCheck{
			Supported: supportedPaths,
			Report:    func(f []loader.UnsupportedAttribute) { findings = f },
		}
	}
	proj, err := loader.LoadWithContext(ctx, details, configure)
	if err == nil {
		p := &translator{files: files, opts: opts, origin: origin(opts, first, 0), env: env, project: proj, refs: refs}
		return p.pods(findings)
	}
	loadErr := loadErrors(opts, cfgFiles, details.ConfigFiles, errors.New(refs.shown(err.Error())))
	if !strings.HasPrefix(err.Error(), "validating ") {
		return nil, loadErr
	}
	// The schema refused a key or a value: compose-go says only the
	// first. Loaded again without it, the rest of what is wrong is said
	// too (hostlet's own refusals, and validation's, policy included).
	pods, ok, terr := loadUnvalidated(ctx, details, configure, func(proj *types.Project) ([]manifest.Sourced, error) {
		p := &translator{files: files, opts: opts, origin: origin(opts, first, 0), env: env, project: proj, refs: refs}
		return p.pods(findings)
	})
	if !ok {
		return nil, loadErr
	}
	return withProjectErrors(pods, terr, loadErr)
}

// loadUnvalidated loads the project again without the schema and
// translates it, reporting false when that fails in any way: compose-go's
// casts assume the schema ran, and may panic on what it would have
// refused (the schema's own error then stays the project's).
func loadUnvalidated(ctx context.Context, details types.ConfigDetails, configure func(*loader.Options), translate func(*types.Project) ([]manifest.Sourced, error)) (pods []manifest.Sourced, ok bool, terr error) {
	defer func() {
		if recover() != nil {
			pods, ok, terr = nil, false, nil
		}
	}()
	proj, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		configure(o)
		o.SkipValidation = true
	})
	if err != nil {
		return nil, false, nil
	}
	pods, terr = translate(proj)
	return pods, true, terr
}

// withProjectErrors adds a project's errors (a *multierror.Error of
// *manifest.Error) to every pod of a translation that went through, so
// that the project is refused whole, as Compose refuses it, and its pods'
// own errors are said beside; a translation refused as a whole keeps its
// errors after the project's.
func withProjectErrors(pods []manifest.Sourced, terr, projectErr error) ([]manifest.Sourced, error) {
	project := errorList(projectErr)
	if terr == nil && len(pods) == 0 {
		// Nothing to carry the schema's error (every service of an
		// inactive profile, or scaled to 0): the project's own, as before.
		return nil, projectErr
	}
	if terr != nil {
		return nil, &multierror.Error{Errors: append(project, errorList(terr)...)}
	}
	var own []*manifest.Error
	said := map[string]bool{} // the keys the schema refused already
	for _, e := range project {
		var me *manifest.Error
		if errors.As(e, &me) {
			own = append(own, me)
			said[me.Field] = me.Field != ""
		}
	}
	for i := range pods {
		var errs []*manifest.Error
		for _, e := range own {
			c := *e // each pod its own: later steps set their origin
			errs = append(errs, &c)
		}
		for _, e := range pods[i].Errors {
			if !said[e.Field] {
				errs = append(errs, e)
			}
		}
		pods[i].Errors = errs
	}
	return pods, nil
}

// errorList are the errors of a *multierror.Error, or err itself.
func errorList(err error) []error {
	var m *multierror.Error
	if errors.As(err, &m) {
		return m.Errors
	}
	return []error{err}
}

// projectFolder is the name the project takes when its file sets none.
func projectFolder(opts Options) string {
	if opts.Name != "" {
		return opts.Name
	}
	if opts.Dir != "" && opts.Dir != "." {
		return path.Base(opts.Dir)
	}
	return opts.Source
}

// loadErrors splits compose-go's error (joined errors, one per line) into
// one *manifest.Error each.
// An error compose-go names a file in ("validating FILE: ...", or the
// file's name in its text: a parse error, the override's) is that file's;
// the others the main file's.
func loadErrors(opts Options, files []projectFile, shown []types.ConfigFile, err error) error {
	var errs []error
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		file := files[0].name
		for i := len(shown) - 1; i >= 0; i-- {
			if rest, ok := strings.CutPrefix(line, "validating "+shown[i].Filename+": "); ok {
				file, line = files[i].name, strings.TrimSpace(rest)
				break
			}
			if i > 0 && strings.Contains(line, shown[i].Filename) {
				file = files[i].name
				break
			}
		}
		// compose-go's parsers quote the value they could not read,
		// and a unit parser only part of it (hunter2 of hunter2pw): the
		// scrubber hides every quoted text that is a piece of a value
		// of the project's (load), not the names of services.
		e := &manifest.Error{Origin: origin(opts, file, 0), Detail: line}
		if key, ok := strings.CutSuffix(line, " false schema"); ok {
			// The schema's words for a key it does not know.
			e.Field, e.Detail = key, "not a Compose key (keys of your own start with x-)"
		}
		errs = append(errs, e)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return &multierror.Error{Errors: errs}
}

// MaxDocuments bounds the YAML documents of one Compose file: compose-go
// validates and merges the whole model once per document.
const MaxDocuments = 8

// MaxDepth bounds how deep a Compose file's mappings and lists nest:
// compose-go's work on a node grows with its depth (a file nested 1,000
// deep took seconds, 10,000 deep minutes); the Compose specification's
// deepest key is 7 levels down, x- extensions get the rest.
const MaxDepth = 64

// MaxNodes bounds the YAML nodes (keys, values, items) of a Compose
// file, its documents together: compose-go's work grows with them, and
// with the square of a mapping's keys (a service of 20,000 keys took 10 s
// of the helper, one of 10,000 keys 2 s). The largest file of 87 real
// stacks has 945.
const MaxNodes = 10_000

// fileNodes counts the nodes of a Compose file's documents so far: as
// written (against MaxNodes) and with aliases expanded (against
// manifest.MaxAliasNodes, the bound of hostlet's own decoder: compose-go
// works on every expanded node, and a 14.6 KB file of 1,400 mappings used
// by 80 aliases took it 22 s and 233 MB).
type fileNodes struct {
	written, expanded int
}

// tooLarge is the error of a document nested deeper than MaxDepth, or
// that brings the nodes of its file (counted so far) past MaxNodes, or
// past manifest.MaxAliasNodes with aliases expanded; "" for one that is
// none of these.
func tooLarge(doc *yaml3.Node, nodes *fileNodes) string {
	if manifest.NodeDepth(doc, MaxDepth+1) > MaxDepth {
		return fmt.Sprintf("mappings and lists nested more than %d deep", MaxDepth)
	}
	if nodes.written += count(doc, MaxNodes+1-nodes.written); nodes.written > MaxNodes {
		return fmt.Sprintf("more than %d YAML nodes (keys, values and items) in one Compose file", MaxNodes)
	}
	limit := manifest.MaxAliasNodes
	if nodes.expanded += manifest.ExpandedNodes(doc, limit-nodes.expanded); nodes.expanded > limit {
		return fmt.Sprintf("aliases expand to more than %d YAML nodes in one Compose file", limit)
	}
	return ""
}

// count is the nodes of n, counted up to limit.
func count(n *yaml3.Node, limit int) int {
	c := 1
	for _, k := range n.Content {
		if c >= limit {
			break
		}
		c += count(k, limit-c)
	}
	return c
}

// preScan names, before compose-go runs, what would make it read files
// itself (include, extends of another file) and a file of too many
// documents, nested too deep or of too many nodes. It reads every document as YAML nodes, tags left alone; a
// file that is not YAML is left to compose-go to report. compose-go is
// kept off the disk regardless (refuseFiles): this is for the message.
func preScan(data []byte) []string {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var out []string
	var nodes fileNodes
	for docs := 0; ; docs++ {
		var doc yaml3.Node
		if err := dec.Decode(&doc); err != nil {
			return out // the end, or not YAML: compose-go says which
		}
		if docs == MaxDocuments {
			return append(out, fmt.Sprintf("more than %d YAML documents in one Compose file", MaxDocuments))
		}
		if msg := tooLarge(&doc, &nodes); msg != "" {
			return append(out, msg)
		}
		if msg := portRangesTooLarge(&doc); msg != "" {
			return append(out, msg)
		}
	}
}

// portRangesTooLarge names a service whose ports ranges, as written,
// span more than MaxPorts ports: compose-go expands a range port by port
// before hostlet's bound (translate) sees it, and "1-65535:1-65535" cost
// it seconds. A range that interpolation makes is bounded there only.
func portRangesTooLarge(doc *yaml3.Node) string {
	services := mapping(value(mapping(doc), "services"))
	for i := 0; services != nil && i+1 < len(services.Content); i += 2 {
		ports := value(mapping(services.Content[i+1]), "ports")
		if ports == nil || ports.Kind != yaml3.SequenceNode {
			continue
		}
		n := 0
		for _, p := range ports.Content {
			switch p.Kind {
			case yaml3.ScalarNode:
				n += portSpan(p.Value)
			case yaml3.MappingNode:
				n += max(portSpan(scalar(value(p, "published"))), portSpan(scalar(value(p, "target"))))
			}
		}
		if n > MaxPorts {
			return fmt.Sprintf("service %s: its ports ranges span %d ports, over the limit of %d", textcap.Quote(services.Content[i].Value, textcap.IDBytes), n, MaxPorts)
		}
	}
	return ""
}

// portSpan is how many ports a ports entry ("8000-8100:80-180/tcp")
// stands for: its widest range, 1 without one.
func portSpan(entry string) int {
	entry, _, _ = strings.Cut(entry, "/")
	span := 1
	for part := range strings.SplitSeq(entry, ":") {
		lo, hi, ok := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if ok && errA == nil && errB == nil && b >= a {
			span = max(span, b-a+1)
		}
	}
	return span
}

// scalar is n's value when n is a scalar, else "".
func scalar(n *yaml3.Node) string {
	if n == nil || n.Kind != yaml3.ScalarNode {
		return ""
	}
	return n.Value
}

// mapping is n (a document's content) when it is a mapping, else nil.
func mapping(n *yaml3.Node) *yaml3.Node {
	for n != nil && n.Kind == yaml3.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml3.MappingNode {
		return nil
	}
	return n
}

// value is the value of key in mapping m, nil when there is none.
func value(m *yaml3.Node, key string) *yaml3.Node {
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// MaxReferencedFiles bounds the other files (extends.file, include, their
// .env) one load reads.
const MaxReferencedFiles = 64

// bundleFiles is compose-go's resource loader for every path (extends.file,
// include): a file of the project at the source's revision, never the
// disk. compose-go reads what a loader returns by path, and takes an
// included file's folder (its relative paths, its .env) from that path:
// each file is an anonymous memory file (memfd), reached through a link
// in a private folder of links (view: 0700, a random name, removed after
// the load) at the file's place in the project, beside a link to the .env
// of its folder. No content is written to the disk, and nothing outside
// the project can be named. A body (HTTP, etcd) has no files: every
// reference is an error.
type bundleFiles struct {
	files Files
	// view is the folder of links, made on the first reference; open the
	// memory files behind them.
	view string
	open []*os.File
	// local are the links by project name; envOnly the names linked as a
	// folder's .env, never handed out as a Compose file; envValues their
	// values, for the scrubber; loads counts the loader's calls.
	local     map[string]string
	names     map[string]string // project names by memory file path
	useView   bool              // the project includes files
	envOnly   map[string]bool
	envValues []string
	loads     int
}

// MaxReferenceLoads bounds the loader's calls in one load: compose-go
// asks again for each route to a file (an include reached twice with
// another environment is loaded twice).
const MaxReferenceLoads = 256

func (b *bundleFiles) Accept(string) bool { return true }

func (b *bundleFiles) Load(_ context.Context, p string) (string, error) {
	name, err := projectPath(b.rel(p))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if b.loads++; b.loads > MaxReferenceLoads {
		return "", fmt.Errorf("%s: more than %d loads of files referenced by extends.file and include", p, MaxReferenceLoads)
	}
	if b.envOnly[name] {
		return "", fmt.Errorf("%s: a folder's .env is not a Compose file", p)
	}
	if local, ok := b.local[name]; ok {
		// One memory file per file of the project, however often it is
		// referenced (compose-go caches by the path handed back).
		return local, nil
	}
	if len(b.open) >= MaxReferencedFiles {
		return "", fmt.Errorf("%s: more than %d files referenced by extends.file and include", p, MaxReferencedFiles)
	}
	data, err := b.files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if data, err = vetExtended(data, path.Dir(name)); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	local, err := b.link(name, data)
	if err != nil {
		return "", fmt.Errorf("%s: hand it to the loader: %s", name, linkFailure(err))
	}
	// An included file's folder has its own .env, when it is not the
	// project's own (read before, with the host's compose.env over it).
	env := path.Join(path.Dir(name), EnvFile)
	if _, linked := b.local[env]; !linked && env != EnvFile {
		if envData, err := b.files.ReadFile(env); err == nil {
			vars, err := dotenv.ParseWithLookup(bytes.NewReader(envData), func(string) (string, bool) { return "", false })
			if err != nil {
				return "", fmt.Errorf("%s: %v", env, dotenvError(err))
			}
			for _, v := range vars {
				b.envValues = append(b.envValues, v)
			}
			if _, err := b.link(env, envData); err != nil {
				return "", fmt.Errorf("%s: hand it to the loader: %s", env, linkFailure(err))
			}
			if b.envOnly == nil {
				b.envOnly = map[string]bool{}
			}
			b.envOnly[env] = true
		}
	}
	return local, nil
}

// linkFailure says why a link could not be made, without its paths.
func linkFailure(err error) string {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &le):
		return le.Err.Error()
	case errors.As(err, &pe):
		return pe.Err.Error()
	}
	return err.Error()
}

// link makes a memory file holding data and its link at name in the view.
// Without an include (useView false) a memory file is handed over by its
// own path (/proc/self/fd/N), and no folder is made.
func (b *bundleFiles) link(name string, data []byte) (string, error) {
	if b.local == nil {
		b.local, b.names = map[string]string{}, map[string]string{}
	}
	if b.useView && b.view == "" {
		dir, err := os.MkdirTemp("", "hostlet-compose-")
		if err != nil {
			return "", err
		}
		b.view = dir
	}
	fd, err := unix.MemfdCreate("hostlet-compose", unix.MFD_CLOEXEC)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	b.open = append(b.open, f)
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if !b.useView {
		local := "/proc/self/fd/" + strconv.Itoa(fd)
		b.local[name], b.names[local] = local, name
		return local, nil
	}
	local := filepath.Join(b.view, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		return "", err
	}
	if err := os.Symlink("/proc/self/fd/"+strconv.Itoa(fd), local); err != nil {
		return "", err
	}
	b.local[name] = local
	return local, nil
}

// rel is p as a path of the project: a path in the view (compose-go makes
// an included file's paths absolute from its folder there) without the
// view.
func (b *bundleFiles) rel(p string) string {
	if name, ok := b.names[p]; ok {
		return name
	}
	if b.view != "" {
		if rest, ok := strings.CutPrefix(p, b.view+"/"); ok {
			return rest
		}
		if p == b.view {
			return "."
		}
	}
	return p
}

// hasInclude reports whether a document of a Compose file has an include
// (aliases and merge keys expanded).
func hasInclude(data []byte) bool {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	for docs := 0; docs < MaxDocuments; docs++ {
		var doc any
		if dec.Decode(&doc) != nil {
			return false
		}
		if top, ok := doc.(map[string]any); ok {
			if _, ok := top["include"]; ok {
				return true
			}
		}
	}
	return false
}

// vetIncludes checks the include entries of a Compose file as compose-go
// will read them (every document, aliases and merge keys expanded): each a
// path or a list of them, or a mapping of path alone. compose-go reads
// project_directory and env_file (in any letter case) from the disk
// itself: refused.
func vetIncludes(data []byte) []string {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var out []string
	for docs := 0; docs < MaxDocuments; docs++ {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return out // the end, or not YAML: compose-go says which
		}
		top, _ := doc.(map[string]any)
		inc, ok := top["include"]
		if !ok {
			continue
		}
		list, isList := inc.([]any)
		if !isList {
			out = append(out, "include: a list of files of the project")
			continue
		}
		for i, entry := range list {
			switch e := entry.(type) {
			case string:
			case map[string]any:
				for _, k := range slices.Sorted(maps.Keys(e)) {
					if k != "path" {
						out = append(out, fmt.Sprintf("include[%d].%s: not supported (an included file's folder is its folder in this project, and its .env the one beside it; give path alone)", i, textcap.Excerpt(k)))
					}
				}
			default:
				out = append(out, fmt.Sprintf("include[%d]: a path of the project, or {path: ...}", i))
			}
		}
	}
	return out
}

// vetExtended checks a file to be extended before compose-go reads it, and
// rewrites the relative extends.file of its services (in folder dir of the
// project) as paths from the project's folder, as compose-go hands them
// to the loader unchanged. compose-go fixes up an extended file's paths
// itself, looking some of them up on the host (develop.watch) and
// expanding ~ from $HOME: a file with either is refused, as are, in a
// sub-folder, anchors, aliases and merge keys on the way to an
// extends.file (the rewrite could not follow them). A file that is not
// YAML is left as it is, for compose-go to report.
func vetExtended(data []byte, dir string) ([]byte, error) {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var docs []*yaml3.Node
	changed, nodes := false, fileNodes{}
	for {
		var doc yaml3.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return data, nil
		}
		if len(docs) == MaxDocuments {
			return nil, fmt.Errorf("more than %d YAML documents in one Compose file", MaxDocuments)
		}
		if msg := tooLarge(&doc, &nodes); msg != "" {
			return nil, errors.New(msg)
		}
		var plain any
		if err := doc.Decode(&plain); err != nil {
			return data, nil
		}
		if err := vetServices(plain, dir); err != nil {
			return nil, err
		}
		if msgs := vetIncludes(data); len(msgs) > 0 {
			return nil, errors.New(msgs[0])
		}
		if dir != "." {
			c, err := rebaseExtends(&doc, dir)
			if err != nil {
				return nil, err
			}
			changed = changed || c
		}
		docs = append(docs, &doc)
	}
	if !changed {
		return data, nil
	}
	var out bytes.Buffer
	enc := yaml3.NewEncoder(&out)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, fmt.Errorf("rewrite its extends.file: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rewrite its extends.file: %w", err)
	}
	return out.Bytes(), nil
}

// vetServices refuses, in a decoded document of a file in folder dir
// (aliases and merge keys expanded), a service with develop (compose-go
// looks its paths up on the host), a volume or env_file from a home
// folder (it expands ~ itself), and a relative path (a bind's source, an
// env_file, a config's or secret's file) that leaves the project: made
// absolute from the file's folder by compose-go, it would read as a host
// path.
func vetServices(doc any, dir string) error {
	top, _ := doc.(map[string]any)
	for _, kind := range []string{"configs", "secrets"} {
		objs, _ := top[kind].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(objs)) {
			obj, _ := objs[name].(map[string]any)
			if f, ok := obj["file"].(string); ok && !path.IsAbs(f) && !fs.ValidPath(path.Join(dir, f)) {
				return fmt.Errorf("%s.%s.file: %s leaves the project folder", kind, name, f)
			}
		}
	}
	services, _ := top["services"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc, _ := services[name].(map[string]any)
		if _, ok := svc["develop"]; ok {
			return fmt.Errorf("services.%s.develop: not supported in an extended file", name)
		}
		for _, key := range []string{"volumes", "env_file"} {
			list, _ := svc[key].([]any)
			if s, ok := svc[key].(string); ok {
				list = []any{s}
			}
			for i, v := range list {
				src := v
				if m, ok := v.(map[string]any); ok {
					src = cmp.Or(m["source"], m["path"])
				} else if s, ok := v.(string); ok && key == "volumes" {
					src, _, _ = strings.Cut(s, ":")
				}
				s, ok := src.(string)
				switch {
				case !ok:
				case strings.HasPrefix(s, "~"):
					return fmt.Errorf("services.%s.%s[%d]: a path in a home folder depends on who runs hostlet; give the absolute host path", name, key, i)
				case (key == "env_file" || strings.HasPrefix(s, ".")) && !path.IsAbs(s) && !fs.ValidPath(path.Join(dir, s)):
					return fmt.Errorf("services.%s.%s[%d]: %s leaves the project folder", name, key, i, s)
				}
			}
		}
	}
	return nil
}

// rebaseExtends rewrites the relative include paths and extends.file of
// doc (a file in folder dir) as paths from the project's folder.
func rebaseExtends(doc *yaml3.Node, dir string) (bool, error) {
	changed := false
	top := mapping(doc)
	// An include of a file in a sub-folder is from that folder too.
	if inc := value(top, "include"); inc != nil {
		if inc.Kind != yaml3.SequenceNode || inc.Anchor != "" {
			return false, errors.New("include: a list of paths (no anchor or alias) in an included file of another folder")
		}
		for i, entry := range inc.Content {
			paths := []*yaml3.Node{entry}
			if entry.Kind == yaml3.MappingNode {
				p := value(entry, "path")
				paths = []*yaml3.Node{p}
				if p != nil && p.Kind == yaml3.SequenceNode {
					paths = p.Content
				}
			}
			for _, n := range paths {
				if n == nil || n.Kind != yaml3.ScalarNode || n.Anchor != "" {
					return false, fmt.Errorf("include[%d]: a path (no anchor or alias) in an included file of another folder", i)
				}
				if n.Value != "" && !path.IsAbs(n.Value) {
					n.Value, changed = path.Join(dir, n.Value), true
				}
			}
		}
	}
	services := value(top, "services")
	if services != nil && (services.Kind == yaml3.AliasNode || services.Anchor != "") {
		return false, errors.New("services: an anchor or alias here is not supported in an extended file of another folder")
	}
	services = mapping(services)
	for i := 0; services != nil && i+1 < len(services.Content); i += 2 {
		name := services.Content[i].Value
		svc := services.Content[i+1]
		ext := value(mapping(svc), "extends")
		if svc.Kind == yaml3.AliasNode || hasMergeKey(svc) || ext != nil && (ext.Kind == yaml3.AliasNode || ext.Anchor != "" || hasMergeKey(ext)) {
			return false, fmt.Errorf("services.%s: an alias or merge key around extends is not supported in an extended file of another folder", name)
		}
		f := value(mapping(ext), "file")
		if f == nil {
			continue
		}
		if f.Kind != yaml3.ScalarNode || f.Anchor != "" {
			return false, fmt.Errorf("services.%s.extends.file: an anchor or alias is not supported in an extended file of another folder", name)
		}
		if f.Value != "" && !path.IsAbs(f.Value) {
			f.Value, changed = path.Join(dir, f.Value), true
		}
	}
	return changed, nil
}

// hasMergeKey reports whether mapping n has a << key.
func hasMergeKey(n *yaml3.Node) bool {
	m := mapping(n)
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "<<" && m.Content[i].Tag != "!!str" {
			return true
		}
	}
	return false
}

// Dir is the folder of p in the project, relative: compose-go resolves the
// relative paths of an extended file against it, so they stay paths of
// the project.
func (b *bundleFiles) Dir(p string) string {
	dir := "."
	if name, err := projectPath(b.rel(p)); err == nil {
		dir = path.Dir(name)
	}
	if b.view != "" {
		// Absolute in the view: compose-go resolves an extended file's
		// paths against it, and an including file's again against its
		// own folder, which leaves an absolute path alone.
		return filepath.Join(b.view, filepath.FromSlash(dir))
	}
	return dir
}

// close closes the memory files and removes the view.
func (b *bundleFiles) close() {
	for _, f := range b.open {
		f.Close()
	}
	if b.view != "" {
		os.RemoveAll(b.view)
	}
}

// memoryFileRE is a memory file's path, its whole number.
var memoryFileRE = regexp.MustCompile(`/proc/self/fd/[0-9]+`)

// shown is msg with the view's and the memory files' paths as paths of
// the project.
func (b *bundleFiles) shown(msg string) string {
	msg = memoryFileRE.ReplaceAllStringFunc(msg, func(local string) string {
		if name, ok := b.names[local]; ok {
			return name
		}
		return local
	})
	if b.view == "" {
		return msg
	}
	return strings.ReplaceAll(msg, b.view+"/", "")
}

// strictSubstitute interpolates one value strictly: a variable with
// neither a value nor a default is an error naming it, never an empty
// string.
func strictSubstitute(s string, m template.Mapping) (string, error) {
	out, err := template.SubstituteWithOptions(s, m, template.WithoutLogging, template.WithReplacementFunction(strictReplace))
	var invalid *template.InvalidTemplateError
	if errors.As(err, &invalid) {
		// Its text quotes the whole value, which may be a secret.
		return "", errors.New("invalid interpolation: a $ not followed by a variable name (write $$ for a literal $)")
	}
	return out, err
}

func strictReplace(sub string, m template.Mapping, cfg *template.Config) (string, error) {
	v, applied, err := template.DefaultReplacementAppliedFunc(sub, m, cfg)
	if err != nil {
		return "", err
	}
	if !applied {
		return "", fmt.Errorf("variable %s is not set (set it in the project's .env or the host config's compose.env, or give a default: ${%s:-value})", varName(sub), varName(sub))
	}
	return v, nil
}

// varName is the variable of a $NAME or ${NAME...} reference.
func varName(sub string) string {
	s := strings.TrimPrefix(sub, "$")
	s = strings.TrimPrefix(s, "{")
	if i := strings.IndexAny(s, ":-?+}"); i >= 0 {
		s = s[:i]
	}
	return s
}
