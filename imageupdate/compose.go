package imageupdate

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/compose-spec/compose-go/v2/loader"
	yaml "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

// tagVariable is an image whose whole tag is a variable: name:${VAR},
// name:${VAR:-default}, name:${VAR-default} or name:$VAR.
var tagVariable = regexp.MustCompile(`^(.+):(?:\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*))$`)

// scanCompose finds the services of a Compose file with a policy.
func scanCompose(root *os.Root, source, file string, data []byte) ([]Target, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil // validate says what is wrong
	}
	m := mapping(&doc)
	services := lookup(m, "services")
	if services == nil || services.Kind != yaml.MappingNode {
		return nil, nil
	}
	dir := path.Dir(file)
	env, envErr := readDotEnv(root, relJoin(dir, ".env"))
	project := loader.NormalizeProjectName(interpolate(scalar(lookup(m, "name")), env))
	if project == "" {
		// The folder's name, as hostlet names a project (compose.Load).
		project = path.Base(dir)
		if dir == "." {
			project = source
		}
		project = loader.NormalizeProjectName(project)
	}
	unpolicied := imagesWithoutPolicy(services)
	uses, err := variableUses(root, dir)
	if err != nil {
		return nil, err
	}
	var out []Target
	var problems []string
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, svc := services.Content[i].Value, services.Content[i+1]
		pol, img := lookup(svc, compose.ImagePolicyKey), lookup(svc, "image")
		if pol == nil || img == nil || img.Kind != yaml.ScalarNode {
			continue
		}
		var p manifest.ImagePolicy
		if err := pol.Decode(&p); err != nil {
			continue // validate says what is wrong
		}
		t := Target{Source: source, File: file, Pod: compose.PodID(project, name, 0), Container: name,
			Image: img.Value, Resolved: img.Value, Policy: p, Line: img.Line, Column: img.Column}
		if err := resolveTagVariable(&t, env, envErr, relJoin(dir, ".env")); err != nil {
			problems = append(problems, fmt.Sprintf("services.%s.image: %v", name, err))
			continue
		}
		if t.Var != "" {
			t.VarWithoutPolicy, t.VarUses = unpolicied[t.Var], uses[t.Var]
		}
		out = append(out, t)
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

// resolveTagVariable reads the variable that holds t's tag, if one does:
// from the project's .env, else from the expression's default.
func resolveTagVariable(t *Target, env map[string]string, envErr error, envFile string) error {
	m := tagVariable.FindStringSubmatch(t.Image)
	if m == nil {
		if strings.Contains(t.Image, "$") {
			return fmt.Errorf("%q: only a variable that is the whole tag (name:${VAR}) can be updated", t.Image)
		}
		return nil
	}
	name, op, def := m[2], m[3], m[4]
	if name == "" {
		name = m[5]
	}
	t.Var = name
	if v, ok := env[name]; ok && (v != "" || op != ":-") {
		t.VarAt = &VarSite{File: envFile, Value: v}
	} else if op != "" {
		t.VarAt = &VarSite{File: t.File, Default: true, Value: def}
	} else if envErr != nil {
		return fmt.Errorf("the tag's variable %s: %s: %v", name, envFile, envErr)
	} else {
		return fmt.Errorf("the tag's variable %s is set nowhere in the project (its .env, or a default in the expression)", name)
	}
	t.Resolved = m[1] + ":" + t.VarAt.Value
	return nil
}

// readDotEnv reads the simple assignments of a .env file (KEY=value,
// optionally exported or quoted); a missing file is an empty one.
func readDotEnv(root *os.Root, file string) (map[string]string, error) {
	data, err := readFile(root, file)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), manifest.MaxSize)
	for sc.Scan() {
		if a, ok := parseAssignment(sc.Text()); ok {
			out[a.key] = a.value
		}
	}
	return out, sc.Err()
}

// assignment is one KEY=value line of a .env file, with where its value
// is written in the line.
type assignment struct {
	key, value string
	// start and end are the value's bytes in the line, quotes
	// excluded.
	start, end int
}

var assignLine = regexp.MustCompile(`^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.]*)(\s*=\s*)`)

// parseAssignment reads a .env line; quoted values may hold no quote of
// their kind (an escaped one is not edited: ok false).
func parseAssignment(line string) (assignment, bool) {
	m := assignLine.FindStringSubmatchIndex(line)
	if m == nil {
		return assignment{}, false
	}
	a := assignment{key: line[m[4]:m[5]]}
	rest := line[m[1]:]
	switch {
	case strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, `'`):
		q := rest[:1]
		end := strings.Index(rest[1:], q)
		if end < 0 || strings.Contains(rest[1:1+end], `\`) {
			return assignment{}, false
		}
		a.start, a.end = m[1]+1, m[1]+1+end
	default:
		v := rest
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i]
		}
		v = strings.TrimRight(v, " \t\r")
		a.start, a.end = m[1], m[1]+len(v)
	}
	a.value = line[a.start:a.end]
	return a, true
}

// variableRef is a variable an image names: $VAR or ${VAR...}.
var variableRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// imagesWithoutPolicy maps each variable to the services whose image
// names it and that have no policy: moving the variable would move them.
func imagesWithoutPolicy(services *yaml.Node) map[string][]string {
	out := map[string][]string{}
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, svc := services.Content[i].Value, services.Content[i+1]
		img := lookup(svc, "image")
		if img == nil || img.Kind != yaml.ScalarNode || lookup(svc, compose.ImagePolicyKey) != nil {
			continue
		}
		for _, m := range variableRef.FindAllStringSubmatch(img.Value, -1) {
			out[m[1]] = append(out[m[1]], name)
		}
	}
	return out
}

// interpolate reads the variables of s from env (or their defaults), as
// Compose does for simple expressions: ${VAR}, ${VAR:-def}, ${VAR-def},
// $VAR; an unset one without a default reads empty.
func interpolate(s string, env map[string]string) string {
	return simpleVariable.ReplaceAllStringFunc(s, func(ref string) string {
		m := simpleVariable.FindStringSubmatch(ref)
		name, op, def := m[1], m[2], m[3]
		if name == "" {
			name = m[4]
		}
		v, ok := env[name]
		switch {
		case op == ":-" && v == "", op == "-" && !ok:
			return def
		}
		return v
	})
}

var simpleVariable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// variableUses counts, by variable, the places that name it in the
// project's Compose files (the main file and its overrides, any
// compose*.y*ml or docker-compose*.y*ml of the folder) and its .env:
// moving a variable moves every one of them.
func variableUses(root *os.Root, dir string) (map[string]int, error) {
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return nil, err
	}
	uses := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(name == ".env" || composeFileName.MatchString(name)) {
			continue
		}
		data, err := readFile(root, relJoin(dir, name))
		if err != nil {
			return nil, err
		}
		for _, m := range variableRef.FindAllSubmatch(data, -1) {
			uses[string(m[1])]++
		}
	}
	return uses, nil
}

// composeFileName is a Compose file or override of a project folder.
var composeFileName = regexp.MustCompile(`^(docker-)?compose([.-][^/]*)?\.ya?ml$`)
