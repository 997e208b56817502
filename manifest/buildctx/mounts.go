package buildctx

import (
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// sentRecipe is the Dockerfile as hostlet sends it: recipe without its
// RUN steps' cache mounts (see sentText).
func sentRecipe(recipe string) (string, error) {
	res, err := parser.Parse(strings.NewReader(recipe))
	if err != nil {
		return "", fieldErr("dockerfile", "does not parse: %v", err)
	}
	return sentText(recipe, res)
}

// sentText is recipe (parsed as res) without its RUN steps' cache mounts,
// ONBUILD RUN's included. A cache mount only saves work (what RUN makes
// is the same without it), but BuildKit keeps its caches per engine, by
// id or target, shared by every build on it: one pod's build would read
// what another's left there. The classic builder knows no mounts at all.
//
// Each mount is removed from the text as written: the flag as the parser
// read it must be found whole on one line of its instruction (not
// quoted, not continued over lines). Then the text is read again, as
// both builders read it, and must have no RUN flag left. Either failing
// refuses the Dockerfile: hostlet never sends a mount.
func sentText(recipe string, res *parser.Result) (string, error) {
	lines := strings.SplitAfter(recipe, "\n")
	changed := false
	for _, n := range res.AST.Children {
		run := n
		if strings.EqualFold(n.Value, "onbuild") && n.Next != nil && len(n.Next.Children) > 0 {
			run = n.Next.Children[0]
		}
		if !strings.EqualFold(run.Value, "run") {
			continue
		}
		for _, f := range run.Flags {
			if !cacheMount(f) {
				continue // refused by CheckRecipe; in any case, found below
			}
			if !removeFlag(lines, n.StartLine, n.EndLine, f, res.EscapeToken) {
				return "", fieldErr("dockerfile", "line %d: RUN %s: hostlet drops cache mounts from the Dockerfile it sends, and cannot find this one as written; write it unquoted, whole on one line of the RUN instruction, between spaces (--mount=type=cache,target=/root/.cache)", n.StartLine, shortText(f))
			}
			changed = true
		}
	}
	sent := recipe
	if changed {
		sent = strings.Join(lines, "")
	}
	switch line, parsed := runFlagLine(sent); {
	case !parsed:
		return "", fieldErr("dockerfile", "does not parse once its cache mounts are dropped; write each cache mount unquoted, whole on one line of the RUN instruction")
	case line > 0:
		return "", fieldErr("dockerfile", "line %d: a RUN flag would be left in the Dockerfile hostlet sends once its cache mounts are dropped; write each cache mount unquoted, whole on one line of the RUN instruction", line)
	}
	return sent, nil
}

// removeFlag removes flag f, whole (between blanks, the line's start or
// end, or a line continuation), from the first line of lines start to
// end (1-based) that has it; false when none has.
func removeFlag(lines []string, start, end int, f string, escape rune) bool {
	if start < 1 || end > len(lines) || f == "" {
		return false
	}
	for i := start - 1; i < end; i++ {
		line := lines[i]
		for from := 0; ; {
			j := strings.Index(line[from:], f)
			if j < 0 {
				break
			}
			j += from
			before := j > 0 && (line[j-1] == ' ' || line[j-1] == '\t') || j == 0 && i > start-1
			if rest := line[j+len(f):]; before && flagEnds(rest, escape) {
				lines[i] = line[:j] + rest
				return true
			}
			from = j + 1
		}
	}
	return false
}

// flagEnds reports whether rest, what follows a flag on its line, starts
// with a blank, a line's end, or a line continuation.
func flagEnds(rest string, escape rune) bool {
	rest = strings.TrimSuffix(strings.TrimSuffix(rest, "\n"), "\r")
	if rest == "" || rest[0] == ' ' || rest[0] == '\t' {
		return true
	}
	return rune(rest[0]) == escape && strings.Trim(rest[1:], " \t") == ""
}

// runFlagLine is the line of the first RUN, or ONBUILD RUN, of text that
// has a flag, as either builder reads it (the classic builder reads a
// heredoc's body as instructions); 0 when none has. parsed is false
// when BuildKit's parser cannot read text (then only the classic
// reading is looked at).
func runFlagLine(text string) (line int, parsed bool) {
	var nodes []*parser.Node
	res, err := parser.Parse(strings.NewReader(text))
	if err == nil {
		nodes = res.AST.Children
	}
	if err != nil || hasHeredoc(nodes) {
		nodes = append(nodes, classicNodes(text)...)
	}
	for _, n := range nodes {
		run := n
		if strings.EqualFold(n.Value, "onbuild") && n.Next != nil && len(n.Next.Children) > 0 {
			run = n.Next.Children[0]
		}
		if strings.EqualFold(run.Value, "run") && len(run.Flags) > 0 {
			return n.StartLine, err == nil
		}
	}
	return 0, err == nil
}

// mountLeft reports whether a base image's trigger (checked by
// triggerProblem, so a cache mount is the only flag it may have) has a
// RUN flag in either reading.
func mountLeft(trigger string) bool {
	line, _ := runFlagLine(trigger)
	return line > 0
}

// CheckSent checks a Dockerfile as hostlet sends it (Build.Recipe):
// CheckRecipe's rules, and no RUN flag at all (its cache mounts were
// dropped when it was read from its source).
func CheckSent(recipe, target string) error {
	if err := CheckRecipe(recipe, target); err != nil {
		return err
	}
	if line, _ := runFlagLine(recipe); line > 0 {
		return fieldErr("dockerfile", "line %d: a RUN flag in the Dockerfile sent: hostlet drops cache mounts before it sends a Dockerfile, and refuses every other flag", line)
	}
	return nil
}
