package buildctx_test

import (
	"testing"

	"github.com/hostlet/hostlet/manifest/buildctx"
)

// Every ONBUILD whose trigger is a Dockerfile instruction is taken, in
// any case, with its flags, over a line continuation, with either escape
// character; one that is no instruction is refused in any case.
func TestOnbuildTriggersThatAreInstructions(t *testing.T) {
	for _, recipe := range []string{
		"FROM alpine\nONBUILD RUN echo hi\n",
		"FROM alpine\nonbuild run echo hi\n",
		"FROM alpine\nOnBuild Run echo hi\n",
		"FROM alpine\nONBUILD COPY --from=x /a /b\n",
		"FROM alpine\nonbuild add a.tar /x\n",
		"FROM alpine\nONBUILD HEALTHCHECK CMD true\n",
		"FROM alpine\nONBUILD SHELL [\"/bin/sh\", \"-c\"]\n",
		"FROM alpine\nONBUILD STOPSIGNAL SIGTERM\n",
		"FROM alpine\nONBUILD \\\n RUN echo hi\n",
		"# escape=`\nFROM alpine\nONBUILD `\n RUN echo hi\n",
		"FROM alpine\nONBUILD RUN <<EOF\necho hi\nEOF\n",
		"FROM alpine\nONBUILD ENV A=1\nONBUILD ARG X\nONBUILD WORKDIR /x\nONBUILD USER nobody\nONBUILD VOLUME /v\nONBUILD EXPOSE 80\nONBUILD CMD x\nONBUILD ENTRYPOINT x\nONBUILD LABEL a=b\n",
	} {
		if err := buildctx.CheckRecipe(recipe, ""); err != nil {
			t.Errorf("%q refused: %v", recipe, err)
		}
	}
	for _, recipe := range []string{
		"FROM alpine\nONBUILD FOO bar\n",
		"FROM alpine\nonbuild foo bar\n",
		"FROM alpine\nONBUILD \\\n Foo bar\n",
	} {
		if err := buildctx.CheckRecipe(recipe, ""); err == nil {
			t.Errorf("%q taken", recipe)
		}
	}
	for _, triggers := range [][]string{{"RUN echo hi"}, {"run echo"}, {"COPY --from=x /a /b"}, {"HEALTHCHECK CMD true"}, {"STOPSIGNAL 9"}} {
		if err := buildctx.CheckTriggers(triggers); err != nil {
			t.Errorf("base image triggers %q refused: %v", triggers, err)
		}
	}
}
