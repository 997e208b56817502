package buildctx

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// directiveLike matches a line that some Docker parser could read as a
// parser directive (`# key=value`), spelled more widely than any of them
// reads one (a key of letters, digits, - and _; `//` as well as `#`), so
// that every line one of them reads as a directive is looked at.
var directiveLike = regexp.MustCompile(`^(#|//)\s*([A-Za-z0-9_-]+)\s*=`)

// allowedDirectives are the parser directives every Docker parser reads
// alike (when they come first, each once): buildkit v0.8's (Docker 20.10's
// engine and classic builder) and v0.26's (hostlet's) know both.
var allowedDirectives = []string{"syntax", "escape"}

// utf8BOM is the byte-order mark a Dockerfile may start with.
const utf8BOM = "\xEF\xBB\xBF"

// directivesProblem refuses the parser directives of a Dockerfile (the
// `# key=value` lines that come first) that Docker's parsers could read
// differently: they do not agree on which keys they know (v0.26's parser
// knows `check`, v0.8's does not, and each stops reading directives at a
// key it does not know, so the escape character after it is one for
// hostlet and another for the engine), on where the directives end
// (v0.8's syntax detection reads on past an unknown key, the newer ones
// past a `#!` line or at `//` lines), or on a byte-order mark (v0.8's
// syntax detection does not skip one). So in the leading block of
// comment and blank lines, every line that looks like a directive must
// be `# syntax=` or `# escape=`, each at most once, written from the
// line's start with `#`, and all of them before any other comment or
// blank line; a syntax directive may not follow a byte-order mark.
// It returns the first problem's line and why, 0 when none.
func directivesProblem(text string) (int, string) {
	text, bom := strings.CutPrefix(text, utf8BOM)
	seen := map[string]bool{}
	directivesEnded := false
	for i := 0; text != ""; i++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
		m := directiveLike.FindStringSubmatch(trimmed)
		if m == nil {
			if trimmed == "" || trimmed[0] == '#' {
				directivesEnded = true
				continue
			}
			return 0, "" // the first instruction: the directives are over for every parser
		}
		key := strings.ToLower(m[2])
		var why string
		switch {
		case m[1] == "//":
			why = "a `//` directive (newer Docker parsers read it, older ones do not)"
		case trimmed != line:
			why = "an indented directive (Docker's parsers do not agree on whether it is one)"
		case directivesEnded:
			why = "a directive after a comment or blank line (Docker's parsers do not agree on where the directives end)"
		case !slices.Contains(allowedDirectives, key):
			why = fmt.Sprintf("the %s directive (Docker's parsers do not agree on which directives exist, and one stops reading directives at a key it does not know: the escape character could then differ)", shortText(key))
		case seen[key]:
			why = fmt.Sprintf("a second %s directive", key)
		case bom && key == "syntax":
			why = "a syntax directive after a byte-order mark (Docker 20.10's BuildKit does not see it, newer parsers do)"
		}
		if why != "" {
			return i + 1, "parser directives that Docker's parsers read differently are refused: " + why + "; only `# syntax=` and `# escape=`, each at most once, on the first lines of the file, before any other comment or blank line"
		}
		seen[key] = true
	}
	return 0, ""
}
