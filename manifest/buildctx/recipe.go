package buildctx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/command"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// MaxTriggers bounds the ONBUILD triggers of a base image CheckTriggers
// reads (together bounded by MaxRecipe).
const MaxTriggers = 256

// MaxRecipeLines bounds the lines of a Dockerfile, or an ONBUILD
// trigger: each instruction costs buildkit's parser some 20 µs, and a
// Dockerfile is read at every read of its source (1 MiB of instructions
// took 12 s here).
const MaxRecipeLines = 5000

// Bounds of a Dockerfile, or an ONBUILD trigger, with heredocs: its lines
// and bytes. buildkit's parser reads a heredoc's body in time that grows
// with its lines times its bytes (1 MiB of short lines: many minutes of
// a CPU, at every read of the source).
const (
	MaxHeredocLines = 1000
	MaxHeredocBytes = 64 << 10
)

// checkSize refuses a text over MaxRecipe or MaxRecipeLines, or with
// heredocs and over their bounds, before buildkit's parser reads it.
func checkSize(text string) error {
	if len(text) > MaxRecipe {
		return fmt.Errorf("over %d bytes", MaxRecipe)
	}
	if n := strings.Count(text, "\n"); n >= MaxRecipeLines {
		return fmt.Errorf("%d lines, over the limit of %d", n, MaxRecipeLines)
	}
	if len(text) <= MaxHeredocBytes && strings.Count(text, "\n") < MaxHeredocLines || !mayHoldHeredocs(text) {
		return nil
	}
	return fmt.Errorf("with heredocs, over %d lines or %d bytes (buildkit's parser reads heredocs in time that grows with their lines times their bytes)", MaxHeredocLines, MaxHeredocBytes)
}

// mayHoldHeredocs reports whether buildkit's parser could read a heredoc
// in text: only where a line, its continuations joined, holds "<<", so
// where the text holds "<<", or a "<" ends a line continued by an escape
// character (either: a directive may change it). It scans the text
// once; it is true of some texts without heredocs (a shell's "<<" in a
// JSON RUN), whose bounds are then those of heredocs.
func mayHoldHeredocs(text string) bool {
	return strings.Contains(text, "<<") || continuedLess.MatchString(text)
}

// continuedLess matches a "<" that ends a line continued by an escape
// character.
var continuedLess = regexp.MustCompile(`<[ \t]*[\\` + "`" + `][ \t]*\r?\n`)

// classicNote says that a problem was found in the classic builder's
// reading only: a line BuildKit reads as part of a heredoc.
const classicNote = " (as the engine's classic builder reads it, without heredocs)"

// CheckRecipe parses a Dockerfile with buildkit's parser, checks that
// target, when given, is one of its stages, and refuses what would make
// the engine reach beyond the context on the host's behalf, or make what
// it builds look like hostlet's:
//
//   - parser directives Docker's parsers could read differently (see
//     directivesProblem): checked first, as they change how the rest is
//     read;
//   - ADD of anything but a plain path of the context: a URL or a git
//     repository (fetched by the engine from the host's network, whatever
//     the build's network), and any source with : @ quotes, escapes, $ or
//     characters other than ASCII, as written and as the builders expand
//     it (see addProblem);
//   - RUN flags but cache mounts (a bind, secret or ssh mount, --network,
//     --security; cache mounts are dropped from what is sent, and one
//     that cannot be dropped exactly is refused: see sentText);
//   - a LABEL key of hostlet's (io.hostlet.*, however quoted or escaped),
//     or made from a variable (it could expand to one): the classic
//     builder's step containers carry the image's labels; and a key the
//     engine's container events read as their own attribute (see
//     EventAttribute);
//   - the same in an ONBUILD (which runs in the builds FROM the image),
//     and an ONBUILD in an ONBUILD;
//   - a syntax directive naming another frontend than Docker's own (the
//     engine pulls and runs the frontend image it names).
//
// The rules are applied to the Dockerfile as each builder reads it:
// BuildKit's parser reads heredocs (`COPY <<EOF /x` and the lines up to
// EOF), the engine's classic builder does not, and reads each line of a
// heredoc's body as an instruction of its own.
func CheckRecipe(recipe, target string) error {
	if line, why := directivesProblem(recipe); line > 0 {
		return fieldErr("dockerfile", "line %d: %s", line, why)
	}
	if name, _, _, ok := parser.DetectSyntax([]byte(recipe)); ok && !officialFrontend(name) {
		return fieldErr("dockerfile", "the syntax directive (%q) is refused: the engine would pull and run that frontend image (docker/dockerfile is allowed); remove the line", name)
	}
	if err := checkSize(recipe); err != nil {
		return fieldErr("dockerfile", "%v", err)
	}
	res, err := parser.Parse(strings.NewReader(recipe))
	if err != nil {
		return fieldErr("dockerfile", "does not parse: %v", err)
	}
	if p := nodesProblem(res.AST.Children, 0); p != nil {
		return fieldErr("dockerfile", "line %d: %s", p.line, p.msg)
	}
	if p := unknownTrigger(res.AST.Children); p != nil {
		return fieldErr("dockerfile", "line %d: %s", p.line, p.msg)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return fieldErr("dockerfile", "does not parse: %v", err)
	}
	if len(stages) == 0 {
		return fieldErr("dockerfile", "has no FROM")
	}
	// Without heredocs, the classic builder reads what BuildKit does.
	if hasHeredoc(res.AST.Children) {
		if p := nodesProblem(classicNodes(recipe), 0); p != nil {
			return fieldErr("dockerfile", "line %d%s: %s", p.line, classicNote, p.msg)
		}
	}
	if _, err := sentText(recipe, res); err != nil {
		return err
	}
	if target == "" {
		return nil
	}
	var names []string
	for _, s := range stages {
		if strings.EqualFold(s.Name, target) {
			return nil
		}
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	return fieldErr("target", "%q is not a stage of the Dockerfile (stages: %s)", target, strings.Join(names, ", "))
}

// CheckTriggers checks the ONBUILD triggers of a base image (its
// config's OnBuild: each an instruction the builder runs at the start of
// a build FROM the image) with CheckRecipe's rules, as both builders read
// them.
func CheckTriggers(triggers []string) error {
	if len(triggers) > MaxTriggers {
		return fmt.Errorf("%d ONBUILD triggers, over the limit of %d", len(triggers), MaxTriggers)
	}
	size := 0
	for _, t := range triggers {
		if size += len(t); size > MaxRecipe {
			return fmt.Errorf("ONBUILD triggers of more than %d bytes", MaxRecipe)
		}
		if err := checkSize(t); err != nil {
			return fmt.Errorf("ONBUILD trigger %q: %w", shortText(t), err)
		}
		if line, why := directivesProblem(t); line > 0 {
			return fmt.Errorf("ONBUILD trigger %q is refused: line %d: %s", shortText(t), line, why)
		}
		if msg := triggerProblem(t, 1); msg != "" {
			return fmt.Errorf("ONBUILD trigger %q is refused: %s", shortText(t), msg)
		}
		if mountLeft(t) {
			return fmt.Errorf("ONBUILD trigger %q is refused: RUN --mount in a base image's trigger (hostlet cannot drop its cache mount from what the builder runs, and BuildKit's caches are shared by every build on the engine)", shortText(t))
		}
	}
	return nil
}

// HeredocLine is the line of the recipe's first instruction with a
// heredoc as BuildKit's parser reads it, 0 when it has none: the engine's
// classic builder reads the recipe differently.
func HeredocLine(recipe string) (int, error) {
	if err := checkSize(recipe); err != nil {
		return 0, fieldErr("dockerfile", "%v", err)
	}
	res, err := parser.Parse(strings.NewReader(recipe))
	if err != nil {
		return 0, fieldErr("dockerfile", "does not parse: %v", err)
	}
	if i := slices.IndexFunc(res.AST.Children, func(n *parser.Node) bool { return len(n.Heredocs) > 0 }); i >= 0 {
		return res.AST.Children[i].StartLine, nil
	}
	return 0, nil
}

// FrontendReadsHeredocs reports whether recipe names its frontend by a
// syntax directive (BuildKit pulls and runs it; the classic builder
// ignores it), and whether that frontend reads heredocs:
// docker/dockerfile 1.4 and later, 1.3 labs, and the moving tags 1,
// latest and labs. A frontend pinned by digest, or of another tag, is
// taken as one that does not.
func FrontendReadsHeredocs(recipe string) (named, reads bool) {
	if line, _ := directivesProblem(recipe); line > 0 {
		// Parsers could disagree on the frontend: take it as one
		// that does not (CheckRecipe refuses the file).
		return true, false
	}
	name, _, _, ok := parser.DetectSyntax([]byte(recipe))
	if !ok {
		return false, false
	}
	if !officialFrontend(name) || strings.Contains(name, "@") {
		return true, false
	}
	_, tag, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(name, "docker.io/"), "index.docker.io/"), ":")
	tag, labs := strings.CutSuffix(tag, "-labs")
	switch tag {
	case "", "latest", "labs":
		return true, true
	}
	parts := strings.Split(tag, ".")
	major, err := strconv.Atoi(parts[0])
	switch {
	case err != nil:
		return true, false
	case major != 1:
		return true, major > 1
	case len(parts) == 1:
		return true, true
	}
	minor, err := strconv.Atoi(parts[1])
	return true, err == nil && (minor >= 4 || labs && minor == 3)
}

// problem is a rule an instruction breaks, at a line of its text.
type problem struct {
	line int
	msg  string
}

// nodesProblem is the first problem of a reading's instructions; depth
// is 1 inside an ONBUILD.
func nodesProblem(nodes []*parser.Node, depth int) *problem {
	for _, n := range nodes {
		if msg := nodeProblem(n, depth); msg != "" {
			return &problem{line: n.StartLine, msg: msg}
		}
	}
	return nil
}

// classicText is text as the classic builder's parser reads it, for
// buildkit's parser: it reads a heredoc only where a line (its
// continuations joined) holds "<<", so every "<" becomes a character
// that means nothing to the parser, its shell lexer or the rules, and a
// heredoc's body is read line by line as instructions.
func classicText(text string) string {
	return strings.ReplaceAll(text, "<", "\u2039")
}

// classicNodes are the instructions of text as the classic builder reads
// it. When it does not parse as a whole (a heredoc's body line that is a
// malformed instruction: the classic builder refuses the file), each line
// is read alone, and lines that do not parse are left out.
func classicNodes(text string) []*parser.Node {
	t := classicText(text)
	if res, err := parser.Parse(strings.NewReader(t)); err == nil {
		return res.AST.Children
	}
	var nodes []*parser.Node
	for i, line := range strings.Split(t, "\n") {
		res, err := parser.Parse(strings.NewReader(line))
		if err != nil {
			continue
		}
		for _, n := range res.AST.Children {
			n.StartLine, n.EndLine = i+1, i+1
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// triggerProblem is the first problem of an ONBUILD's instruction (a
// Dockerfile's with a heredoc, or a base image's trigger) read as either
// builder reads it; depth is that of the instruction. The classic
// reading is needed only where BuildKit's reads a heredoc, or cannot read
// the text at all (BuildKit would refuse it; the classic builder may
// not).
func triggerProblem(text string, depth int) string {
	res, err := parser.Parse(strings.NewReader(text))
	if err == nil {
		if p := nodesProblem(res.AST.Children, depth); p != nil {
			return p.msg
		}
		if !hasHeredoc(res.AST.Children) {
			return ""
		}
	}
	if p := nodesProblem(classicNodes(text), depth); p != nil {
		return p.msg
	}
	return ""
}

// hasHeredoc reports whether an instruction of nodes has a heredoc.
func hasHeredoc(nodes []*parser.Node) bool {
	return slices.ContainsFunc(nodes, func(n *parser.Node) bool { return len(n.Heredocs) > 0 })
}

// nodeProblem is the rule instruction n breaks, "" when none. It reads
// the instruction's words as instructions.ParseCommand does (an ADD's
// sources are its words but the last, a LABEL's words are triples of
// key, value and separator),
// so an instruction that does not parse as a whole (a heredoc's body
// line in the classic reading) is checked too.
func nodeProblem(n *parser.Node, depth int) string {
	if msg := flagProblem(n); msg != "" {
		return msg
	}
	var words []string
	for w := n.Next; w != nil; w = w.Next {
		words = append(words, w.Value)
	}
	switch strings.ToLower(n.Value) {
	case "add":
		if len(words) > 1 {
			return addProblem(words[:len(words)-1])
		}
	case "label":
		for i := 0; i < len(words); i += 3 {
			if msg := labelProblem(words[i]); msg != "" {
				return msg
			}
		}
	case "onbuild":
		return onbuildProblem(n, depth)
	}
	return ""
}

// unknownTrigger is the first ONBUILD of nodes (BuildKit's reading: a
// heredoc's body is content) whose trigger is no Dockerfile instruction.
// Both builders take it as it is, and a build FROM the image fails on it:
// refused here, where its author sees it.
func unknownTrigger(nodes []*parser.Node) *problem {
	for _, n := range nodes {
		if !strings.EqualFold(n.Value, "onbuild") || n.Next == nil || len(n.Next.Children) == 0 {
			continue
		}
		if trigger := n.Next.Children[0]; !isInstruction(trigger.Value) {
			return &problem{line: n.StartLine, msg: fmt.Sprintf("ONBUILD %q is no Dockerfile instruction", shortText(trigger.Value))}
		}
	}
	return nil
}

func isInstruction(word string) bool {
	_, ok := command.Commands[strings.ToLower(word)]
	return ok
}

// onbuildProblem is the rule an ONBUILD breaks: one in an ONBUILD, or
// the rule its instruction breaks, read as a build FROM the image would
// (with its heredocs' bodies).
func onbuildProblem(n *parser.Node, depth int) string {
	if depth > 0 {
		return "ONBUILD inside an ONBUILD is refused"
	}
	msg := ""
	if n.Next != nil && len(n.Next.Children) > 0 {
		msg = nodeProblem(n.Next.Children[0], depth+1)
	}
	if msg == "" && len(n.Heredocs) > 0 {
		// The trigger as the image records it, heredocs' bodies
		// included: what a build FROM it reads.
		if cmd, err := instructions.ParseCommand(n); err == nil {
			if c, ok := cmd.(*instructions.OnbuildCommand); ok {
				msg = triggerProblem(c.Expression, depth+1)
			}
		}
	}
	if msg != "" {
		return "ONBUILD " + msg
	}
	return ""
}

// addSourceChars are the characters an ADD source may not hold: a URL
// needs ":", a git source ":" or "@" (`git@host:repo`, `user@host:repo#ref`,
// `host:repo.git`), and quotes, escapes and variables could make either
// when the builders expand the word (`http:""//host/x` is `http://host/x`
// to them).
const addSourceChars = ":@\"'\\$`"

// addProblem refuses an ADD source that is not a plain path of the
// context (see CheckRecipe): one with a character of addSourceChars, or
// not ASCII, as written and as the builders read it (quotes and escapes
// removed by their shell lexer, with either escape character). ADD is
// for the context's files and tar archives; COPY never fetches.
func addProblem(sources []string) string {
	for _, src := range sources {
		// The classic reading's stand-in for "<" (see classicText).
		src = strings.ReplaceAll(src, "\u2039", "<")
		readings := []string{src}
		var lexErr error
		for _, esc := range []rune{'\\', '`'} {
			w, _, err := shell.NewLex(esc).ProcessWord(src, shell.EnvsFromSlice(nil))
			if err != nil {
				lexErr = err
				continue
			}
			readings = append(readings, w)
		}
		for _, problem := range addSourceProblems {
			if slices.ContainsFunc(readings, problem.in) {
				return fmt.Sprintf("ADD %s: %s; ADD is for files and tar archives of the context: use COPY (COPY never fetches)", shortText(src), problem.msg)
			}
		}
		if lexErr != nil {
			return fmt.Sprintf("ADD %s: a source the builders' shell lexer cannot read is refused (%v); ADD is for files and tar archives of the context: use COPY (COPY never fetches)", shortText(src), lexErr)
		}
	}
	return ""
}

// addSourceProblems are what an ADD source may not be, as written or as
// a builder reads it, in the order an error names them.
var addSourceProblems = []struct {
	in  func(string) bool
	msg string
}{
	{func(w string) bool { return strings.Contains(w, "$") },
		"a source named by a variable is refused (it could be a URL)"},
	{func(w string) bool {
		return strings.Contains(w, "://") || strings.HasPrefix(w, "git@") || strings.HasSuffix(w, ".git")
	}, "a URL or git source is refused (the engine would fetch it from the host's network)"},
	{func(w string) bool {
		return strings.ContainsAny(w, addSourceChars) || strings.ContainsFunc(w, func(r rune) bool { return r >= utf8.RuneSelf })
	}, "a source with : @ quotes, escapes, $ or characters other than ASCII is refused (the builders could read it as a URL or a git repository, which the engine would fetch from the host's network)"},
}

// labelProblem refuses a LABEL key of hostlet's, or made from a
// variable. The key is as written: its quotes and escapes are dropped
// before it is compared (the builders drop them), in any case.
func labelProblem(key string) string {
	if strings.Contains(key, "$") {
		return fmt.Sprintf("LABEL %s: a label key made from a variable is refused (it could expand to one of hostlet's io.hostlet.* labels); write the key out", shortText(key))
	}
	bare := strings.Map(func(r rune) rune {
		if strings.ContainsRune("\"'\\`", r) || unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, key)
	if strings.HasPrefix(bare, "io.hostlet.") {
		return fmt.Sprintf("LABEL %s: io.hostlet.* labels are hostlet's own (they say which instance and pod a container belongs to); use a label of your own", shortText(key))
	}
	if EventAttribute(strings.Map(func(r rune) rune {
		if strings.ContainsRune("\"'\\`", r) || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, key)) {
		return fmt.Sprintf("LABEL %s: the engine's container events carry a container's labels among their attributes, and this one would overwrite the event's own %s (what hostlet reads of a container's end); use another key", shortText(key), shortText(key))
	}
	return ""
}

// eventAttributes are the attributes the engine gives a container's
// events besides its labels, which a label of the same key overwrites
// (moby copies the labels over them): the exit code and signal hostlet
// reads of a container's end among them. Case matters, as in the
// engine.
var eventAttributes = []string{"exitCode", "name", "image", "signal", "execDuration"}

// EventAttribute reports whether a label key is one of the attributes
// the engine gives a container's events, which the label would
// overwrite: refused in a Dockerfile's LABEL and a build's labels.
func EventAttribute(key string) bool {
	return slices.Contains(eventAttributes, key)
}

// flagProblem refuses a RUN flag other than a cache mount (see
// CheckRecipe).
func flagProblem(n *parser.Node) string {
	if !strings.EqualFold(n.Value, "run") {
		return ""
	}
	for _, f := range n.Flags {
		if !cacheMount(f) {
			name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			return fmt.Sprintf("RUN --%s is refused (a bind, secret or ssh mount reaches the engine's other builds and the host; network and security modes are the host's; a cache mount is allowed, written --mount=type=cache,... with one type= and no quotes)", shortText(name))
		}
	}
	return ""
}

// cacheMount reports whether a RUN flag is a cache mount
// (--mount=type=cache,...), read as buildkit reads a mount (comma
// separated key=value fields, keys in any case, the last type= wins);
// a mount with more than one type= field, or quotes, is not one.
func cacheMount(flag string) bool {
	v, ok := strings.CutPrefix(flag, "--mount=")
	if !ok || strings.ContainsAny(v, "\"'") {
		return false
	}
	types := 0
	cache := false
	for _, opt := range strings.Split(v, ",") {
		if k, val, _ := strings.Cut(opt, "="); strings.TrimSpace(strings.ToLower(k)) == "type" {
			types++
			cache = strings.ToLower(val) == "cache"
		}
	}
	return types == 1 && cache
}

// officialFrontend reports whether a syntax directive names Docker's own
// Dockerfile frontend (docker/dockerfile, any tag).
func officialFrontend(name string) bool {
	repo, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(name, "docker.io/"), "index.docker.io/"), "@")
	repo, _, _ = strings.Cut(repo, ":")
	return repo == "docker/dockerfile" || repo == "docker/dockerfile-upstream"
}

// maxShown bounds the text of a Dockerfile an error quotes.
const maxShown = 120

// shortText is s as an error shows it: control characters replaced, cut
// to maxShown bytes.
func shortText(s string) string {
	cut := len(s) > maxShown
	if cut {
		s = s[:maxShown]
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}

// builderArgs are the variables the builders give a FROM besides the
// ARGs before it (BuildKit's platform variables): hostlet does not know
// their values.
var builderArgs = []string{
	"BUILDPLATFORM", "BUILDOS", "BUILDOSVERSION", "BUILDARCH", "BUILDVARIANT",
	"TARGETPLATFORM", "TARGETOS", "TARGETOSVERSION", "TARGETARCH", "TARGETVARIANT", "TARGETSTAGE",
}

// sameImagePlatforms are the FROM --platform values that name the
// engine's own platform (hostlet never builds for another).
var sameImagePlatforms = []string{"", "$BUILDPLATFORM", "${BUILDPLATFORM}", "$TARGETPLATFORM", "${TARGETPLATFORM}"}

// BaseImages are the images the build of recipe starts stages FROM, in
// order, each once: those of the stages built for target (every stage
// when target is ""), not scratch, not an earlier stage. A FROM's name is
// expanded as the builders do, with the ARGs before the first FROM (args
// given a value, else their defaults). A FROM whose name uses a variable
// hostlet does not know the value of (BuildKit's platform variables
// among them), or a --platform other than the engine's, is refused: the
// builder would start from another image than the one hostlet checked.
func BaseImages(recipe, target string, args map[string]string) ([]string, error) {
	if err := checkSize(recipe); err != nil {
		return nil, fieldErr("dockerfile", "%v", err)
	}
	res, err := parser.Parse(strings.NewReader(recipe))
	if err != nil {
		return nil, fieldErr("dockerfile", "does not parse: %v", err)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fieldErr("dockerfile", "does not parse: %v", err)
	}
	lex := shell.NewLex(res.EscapeToken)
	env, declared, err := metaEnv(lex, metaArgs, args)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{} // stage names, lower case
	for _, st := range stages {
		name, err := baseName(lex, st, env, declared)
		if err != nil {
			return nil, err
		}
		switch {
		case strings.EqualFold(name, "scratch"), seen[strings.ToLower(name)], slices.Contains(out, name):
		default:
			if _, err := reference.ParseNormalizedNamed(name); err != nil {
				return nil, fieldErr("dockerfile", "FROM %s: not an image reference (%v) nor an earlier stage's name", shortText(name), err)
			}
			out = append(out, name)
		}
		if st.Name != "" {
			seen[strings.ToLower(st.Name)] = true
		}
		if target != "" && strings.EqualFold(st.Name, target) {
			break
		}
	}
	return out, nil
}

// baseName is the image or stage stage st starts FROM, expanded with env.
func baseName(lex *shell.Lex, st instructions.Stage, env shell.EnvGetter, declared map[string]bool) (string, error) {
	line := 0
	if len(st.Location) > 0 {
		line = st.Location[0].Start.Line
	}
	if !slices.Contains(sameImagePlatforms, st.Platform) {
		return "", fieldErr("dockerfile", "line %d: FROM --platform=%s is refused: the builder would start from another image than the one hostlet checked (hostlet builds for the engine's platform)", line, shortText(st.Platform))
	}
	r, err := lex.ProcessWordWithMatches(st.BaseName, env)
	if err != nil {
		return "", fieldErr("dockerfile", "line %d: FROM %s: %v", line, shortText(st.BaseName), err)
	}
	for v := range r.Unmatched {
		if !declared[v] || slices.Contains(builderArgs, v) {
			return "", fieldErr("dockerfile", "line %d: FROM %s: $%s has no value hostlet knows (give it one by an ARG before the first FROM, or by the build's args): refused, the builder could start from another image than the one hostlet checked", line, shortText(st.BaseName), shortText(v))
		}
	}
	if r.Result == "" {
		return "", fieldErr("dockerfile", "line %d: FROM %s: names no image", line, shortText(st.BaseName))
	}
	return r.Result, nil
}

// metaEnv is the variables a FROM is expanded with: the ARGs before the
// first FROM, each set from args, else its default (expanded with the
// ones before it), as buildkit does; declared holds every such ARG.
func metaEnv(lex *shell.Lex, metaArgs []instructions.ArgCommand, args map[string]string) (shell.EnvGetter, map[string]bool, error) {
	var env []string
	declared := map[string]bool{}
	for _, cmd := range metaArgs {
		for _, kv := range cmd.Args {
			declared[kv.Key] = true
			if v, ok := args[kv.Key]; ok {
				env = append(env, kv.Key+"="+v)
				continue
			}
			if kv.Value == nil {
				continue
			}
			v, _, err := lex.ProcessWord(*kv.Value, shell.EnvsFromSlice(env))
			if err != nil {
				return nil, nil, fieldErr("dockerfile", "ARG %s: %v", shortText(kv.Key), err)
			}
			env = append(env, kv.Key+"="+v)
		}
	}
	return shell.EnvsFromSlice(env), declared, nil
}
