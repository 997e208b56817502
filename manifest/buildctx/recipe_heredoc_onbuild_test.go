package buildctx_test

import (
	"testing"

	"github.com/hostlet/hostlet/manifest/buildctx"
)

// A heredoc's body is a file's content to BuildKit: a line of it that
// starts with the word "onbuild" is no instruction, and the Dockerfile is
// taken as it was before ONBUILD triggers were checked against the
// instructions. Only the classic builder reads the line as an ONBUILD
// (with a trigger that is no instruction: harmless, a build FROM the
// image fails on it), and that builder refuses a file with a heredoc's
// terminator line anyway.
func TestHeredocBodyLineStartingWithOnbuildIsContent(t *testing.T) {
	for _, recipe := range []string{
		"FROM alpine\nCOPY <<EOF /README\nonbuild hooks are not used here\nEOF\n",
		"FROM alpine\nRUN <<EOF\nset -e\nonbuild whatever --fast\nEOF\n",
	} {
		if err := buildctx.CheckRecipe(recipe, ""); err != nil {
			t.Errorf("%q refused: %v", recipe, err)
		}
	}
}
