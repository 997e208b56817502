package buildctx_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// refusedRecipes are Dockerfiles CheckRecipe refuses: the issue's own
// (issue 30, findings 1 and 2) and the forms around them, each with what
// the error must say (the line first).
var refusedRecipes = []struct{ name, recipe, want string }{
	// Finding 1: a Dockerfile's LABELs take over another pod's slot.
	{"LABEL of another instance's pod (issue 30)",
		"FROM scratch\nLABEL io.hostlet.managed=true io.hostlet.instance=other-host io.hostlet.pod=victim io.hostlet.container=app io.hostlet.hash=v1:0123456789abcdef\n",
		"line 2: LABEL io.hostlet.managed"},
	{"LABEL of this instance's pod (issue 30)",
		"FROM scratch\nLABEL io.hostlet.pod=victim io.hostlet.container=app\n", "line 2: LABEL io.hostlet.pod"},
	{"LABEL in a later stage", "FROM scratch AS a\nCOPY x /x\nFROM a\nLABEL org.example=1 io.hostlet.pod=victim\n", "line 4: LABEL io.hostlet.pod"},
	{"LABEL of the old form (key value)", "FROM scratch\nLABEL io.hostlet.pod victim\n", "line 2: LABEL io.hostlet.pod"},
	{"LABEL with a quoted key", "FROM scratch\nLABEL \"io.hostlet.pod\"=victim\n", "line 2: LABEL"},
	{"LABEL with a key quoted in part", "FROM scratch\nLABEL io.host\"let\".pod=victim\n", "line 2: LABEL"},
	{"LABEL with an escaped key", "FROM scratch\nLABEL io\\.hostlet.pod=victim\n", "line 2: LABEL"},
	{"LABEL in capitals", "FROM scratch\nLABEL IO.HOSTLET.POD=victim\n", "line 2: LABEL"},
	{"ONBUILD of no instruction, with a flag", "FROM scratch\nONBUILD 0 --0\n", `line 2: ONBUILD "0" is no Dockerfile instruction`},
	{"LABEL with a key from a variable", "FROM scratch\nARG K=io.hostlet.pod\nLABEL $K=victim\n", "line 3: LABEL $K: a label key made from a variable"},
	{"LABEL with a key from ${}", "FROM scratch\nARG P=io.hostlet\nLABEL ${P}.pod=victim\n", "line 3: LABEL ${P}.pod: a label key made from a variable"},
	{"ONBUILD LABEL", "FROM scratch\nONBUILD LABEL io.hostlet.pod=victim\n", "line 2: ONBUILD"},
	{"LABEL over continued lines", "FROM scratch\nLABEL a=1 \\\n  io.hostlet.container=app\n", "line 2: LABEL io.hostlet.container"},

	// Finding 2: what the classic builder reads where BuildKit reads a
	// heredoc's body.
	{"a heredoc hiding an ADD of a URL (issue 30)",
		"FROM scratch\nCOPY <<CMD /x\nADD http://127.0.0.1:18399/loot /loot\nCMD\n",
		"line 3 (as the engine's classic builder reads it, without heredocs): ADD http://127.0.0.1:18399/loot"},
	{"a heredoc opened over a continued line",
		"FROM scratch\nCOPY <\\\n<CMD /x\nADD http://127.0.0.1:18399/loot /loot\nCMD\n", "ADD http://127.0.0.1:18399/loot"},
	{"a RUN heredoc hiding a LABEL", "FROM scratch\nRUN <<EOF\nLABEL io.hostlet.pod=victim\nEOF\n", "line 3 (as the engine's classic builder reads it, without heredocs): LABEL io.hostlet.pod"},
	{"a heredoc hiding a RUN flag", "FROM scratch\nRUN <<EOF\nRUN --mount=type=bind,target=/h true\nEOF\n", "RUN --mount is refused"},
	{"a heredoc hiding an ONBUILD ADD", "FROM scratch\nCOPY <<X /x\nONBUILD ADD http://169.254.169.254/latest /m\nX\n", "line 3 (as the engine's classic builder reads it, without heredocs): ONBUILD"},
	{"a heredoc hiding an ADD of a variable", "FROM scratch\nARG U=http://127.0.0.1/\nCOPY <<-X /x\n\tADD $U /loot\n\tX\n", "a source named by a variable"},
	{"a heredoc of several files", "FROM scratch\nCOPY <<A <<B /x/\nADD git@example.org:o/r.git /r\nA\nB\n", "a URL or git source"},
	{"an ADD whose heredoc source the classic builder reads as a file and the URL as a source",
		"FROM scratch\nONBUILD ADD <<EOF http://127.0.0.1:18399/loot /loot\nEOF\n", "ADD http://127.0.0.1:18399/loot"},

	// ADD sources the builders' shell lexer makes a URL of (quotes and
	// escapes removed), and git sources of the ssh form: both builders
	// fetched the first three from the host's loopback.
	{"ADD of a URL with quotes in it", "FROM scratch\nADD http:\"\"//127.0.0.1:18411/loot /loot\n", "line 2: ADD http:\"\"//127.0.0.1:18411/loot: a URL or git source is refused"},
	{"ADD of a URL with single quotes in it", "FROM scratch\nADD http:''//127.0.0.1:18411/q3 /loot\n", "line 2: ADD http:''//127.0.0.1:18411/q3: a URL or git source is refused"},
	{"ADD of a URL with escaped slashes", "FROM scratch\nADD http:\\/\\/127.0.0.1:18411/q1 /loot\n", "use COPY (COPY never fetches)"},
	{"ADD of a URL with backtick escapes", "# escape=`\nFROM scratch\nADD http:`/`/127.0.0.1:18411/q1 /loot\n", "line 3: ADD http:`/`/127.0.0.1:18411/q1: a URL or git source is refused"},
	{"ADD of a quoted URL in an ONBUILD", "FROM scratch\nONBUILD ADD http:\"\"//127.0.0.1:18411/loot /loot\n", "line 2: ONBUILD ADD http:"},
	{"ADD of a URL in JSON with escapes", "FROM scratch\nADD [\"http:\\u002f\\u002f127.0.0.1:18411/j\", \"/loot\"]\n", "a URL or git source is refused"},
	{"ADD of an ssh git source", "FROM scratch\nADD foo@127.0.0.1:repo#main /x\n", "line 2: ADD foo@127.0.0.1:repo#main: a source with : @ quotes"},
	{"ADD of a git source without a user", "FROM scratch\nADD --keep-git-dir=true 127.0.0.1:repo.git#main /x\n", "line 2: ADD 127.0.0.1:repo.git#main"},
	{"ADD of a source with a non-ASCII character", "FROM scratch\nADD http\uff1a//127.0.0.1/x /x\n", "characters other than ASCII"},
	{"ADD of a source with a quote", "FROM scratch\nADD \"a b\" /x\n", "use COPY"},

	{"ADD of a URL with CRLF line ends", "FROM scratch\r\nADD http://127.0.0.1:18411/x /x\r\n", "line 2: ADD http://127.0.0.1:18411/x: a URL or git source is refused"},

	// Parser directives Docker's parsers read differently: v0.26
	// (hostlet's) knows check= and stops at an unknown key; v0.8
	// (Docker 20.10's) does not know check= and its syntax detection
	// reads on past an unknown key. Both builders fetched the first
	// one's ADD; BuildKit pulled the second one's frontend from the
	// host's loopback.
	{"a check directive before escape (hostlet read a continuation, the engine an ADD)",
		"# check=skip=all\n# escape=`\nFROM scratch\nCOPY a `\nADD http://127.0.0.1:18411/loot /loot\nCOPY a `\nLABEL io.hostlet.pod=victim io.hostlet.container=app\n",
		"line 1: parser directives that Docker's parsers read differently are refused: the check directive"},
	{"an unknown directive before syntax (the engine pulls the frontend, hostlet sees none)",
		"# foo=bar\n# syntax=127.0.0.1:18411/evil/frontend:1\nFROM scratch\nCOPY a /a\n",
		"line 1: parser directives that Docker's parsers read differently are refused: the foo directive"},
	{"a check directive after syntax", "# syntax=docker/dockerfile:1\n# check=skip=all\nFROM scratch\n", "line 2: parser directives"},
	{"a directive in capitals", "# Check = skip=all\n# escape=`\nFROM scratch\n", "line 1: parser directives"},
	{"a directive key with - and _", "# my_key-1=x\nFROM scratch\n", "line 1: parser directives"},
	{"a directive after a blank line", "# escape=\\\n\n# syntax=127.0.0.1:18411/evil\nFROM scratch\n", "line 3: parser directives that Docker's parsers read differently are refused: a directive after a comment or blank line"},
	{"a directive after a comment", "# a comment\n# escape=`\nFROM scratch\n", "line 2: parser directives"},
	{"a directive after a shebang", "#!/usr/bin/env buildctl\n# syntax=127.0.0.1:18411/evil\nFROM scratch\n", "line 2: parser directives"},
	{"an indented directive", " # escape=`\nFROM scratch\nCOPY a `\n  /a\n", "line 1: parser directives that Docker's parsers read differently are refused: an indented directive"},
	{"a second escape directive", "# escape=`\n# ESCAPE=`\nFROM scratch\n", "line 2: parser directives that Docker's parsers read differently are refused: a second escape directive"},
	{"a syntax directive after a byte-order mark", "\ufeff# syntax=docker/dockerfile:1\nFROM scratch\n", "line 1: parser directives that Docker's parsers read differently are refused: a syntax directive after a byte-order mark"},
	{"a // directive", "# escape=\\\n//syntax=127.0.0.1:18411/evil\nFROM scratch\n", "line 2: parser directives that Docker's parsers read differently are refused: a `//` directive"},
	{"directives with CRLF", "# check=x\r\n# escape=`\r\nFROM scratch\r\n", "line 1: parser directives"},

	// Cache mounts hostlet could not drop from what it sends, or that
	// buildkit reads as another type (the last type= wins).
	{"a quoted cache mount", "FROM scratch\nRUN --mount=\"type=cache,target=/x,id=shared\" true\n", "line 2: RUN --mount=type=cache,target=/x,id=shared: hostlet drops cache mounts from the Dockerfile it sends, and cannot find this one as written"},
	{"a cache mount over a continued line", "FROM scratch\nRUN --mount=type=cache,target=/x\\\n,id=shared true\n", "cannot find this one as written; write it unquoted"},
	{"a quoted cache mount and a mount of two types", "FROM scratch\nRUN --mount='type=cache,target=/x' --mount=type=cache,type=secret,id=x true\n", "line 2: RUN --mount is refused"},
	{"a cache mount that is a bind (the last type wins)", "FROM scratch\nRUN --mount=type=cache,type=bind,source=/,target=/h true\n", "line 2: RUN --mount is refused"},
	{"a bind mount that is a cache (two types)", "FROM scratch\nRUN --mount=type=bind,TYPE=cache,target=/h true\n", "line 2: RUN --mount is refused"},
	{"a cache mount with a quoted field", "FROM scratch\nRUN --mount=type=cache,\"target=/x,id=y\" true\n", "cannot find this one as written"},
	{"a quoted cache mount in an ONBUILD", "FROM scratch\nONBUILD RUN --mount=\"type=cache,target=/x\" true\n", "line 2: RUN --mount=type=cache,target=/x: hostlet drops cache mounts"},
	{"a cache mount glued to the next word", "FROM scratch\nRUN --mount=type=cache,target=/x\\\nmake\n", "cannot find this one as written"},
	{"a cache mount hidden in a heredoc from BuildKit's reading", "FROM scratch\nCOPY <<EOF /x\nRUN --mount=type=cache,target=/x true\nEOF\n", "a RUN flag would be left"},

	// Labels the engine's container events read as their own
	// attributes (a container's labels overwrite them).
	{"LABEL exitCode", "FROM scratch\nLABEL exitCode=0\n", "line 2: LABEL exitCode: the engine's container events carry"},
	{"LABEL signal, old form", "FROM scratch\nLABEL signal 9\n", "line 2: LABEL signal"},
	{"LABEL name quoted", "FROM scratch\nLABEL \"name\"=victim\n", "line 2: LABEL \"name\""},
	{"LABEL image escaped", "FROM scratch\nLABEL a=1 im\\age=x\n", "line 2: LABEL im\\age"},
	{"ONBUILD LABEL execDuration", "FROM scratch\nONBUILD LABEL execDuration=0\n", "line 2: ONBUILD LABEL execDuration"},

	// ONBUILD: the same rules as the instruction it holds.
	{"ONBUILD RUN --mount of a bind", "FROM scratch\nONBUILD RUN --mount=type=bind,from=other,target=/o [\"/h\"]\n", "line 2: ONBUILD RUN --mount is refused"},
	{"ONBUILD RUN --network", "FROM scratch\nONBUILD RUN --network=host true\n", "RUN --network is refused"},
	{"ONBUILD ADD of a variable", "FROM scratch\nONBUILD ADD ${U} /x\n", "a source named by a variable"},
}

// TestCheckRecipeRefusesHostletLabelsAndOtherReadings: a Dockerfile's
// LABEL may not set hostlet's labels (io.hostlet.*, also a key made from
// a variable), in any stage or ONBUILD, and a Dockerfile is checked as
// both builders read it: what a heredoc's body hides from BuildKit's
// reading is an instruction of its own for the engine's classic builder.
func TestCheckRecipeRefusesHostletLabelsAndOtherReadings(t *testing.T) {
	for _, tt := range refusedRecipes {
		t.Run(tt.name, func(t *testing.T) {
			err := buildctx.CheckRecipe(tt.recipe, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckRecipe:\n%s\n= %v, want an error containing %q", tt.recipe, err, tt.want)
			}
		})
	}
}

// TestCheckRecipeAcceptsHeredocsAndLabels: what the rules refuse is only
// that: heredocs whose bodies are harmless in either reading, the
// author's own labels, a label value naming hostlet.
func TestCheckRecipeAcceptsHeredocsAndLabels(t *testing.T) {
	for _, ok := range []string{
		"FROM scratch\nLABEL org.example.team=shop \"org.example.note\"=\"io.hostlet.pod=x\" maintainer=me\n",
		"FROM scratch\nLABEL description \"built by io.hostlet.build\"\n",
		"FROM scratch\nCOPY <<EOF /etc/app.conf\nlisten 8080\nroot /srv\nEOF\n",
		"FROM scratch\nRUN <<EOF\nset -e\nmake\nenv | sort\nEOF\n",
		"FROM scratch\nONBUILD COPY . /app\nONBUILD RUN make\n",
		"FROM scratch\nRUN echo '<<' > /x\n",
		"FROM scratch\nLABEL exitcode=0 org.example.name=x Image=y\n",
		"# syntax=docker/dockerfile:1\n# escape=\\\n# a comment\n\n# another comment\nFROM scratch\n",
		"\ufeff# escape=`\nFROM scratch\nCOPY a `\n  /a\n",
		"FROM scratch\n# check=skip=all\nCOPY a /a\n",
		"#!/usr/bin/env buildctl\nFROM scratch\n",
		"FROM scratch\nADD app.tar.gz /srv/\nADD [\"a b.tar\", \"./c-d_e.tgz\", \"/x/\"]\n",
		"FROM scratch\nRUN --mount=type=cache,target=/root/.cache \\\n    --mount=type=cache,target=/go/pkg,id=gomod make\nONBUILD RUN --mount=type=cache,target=/c make\n",
	} {
		if err := buildctx.CheckRecipe(ok, ""); err != nil {
			t.Errorf("CheckRecipe:\n%s\n= %v, want nil", ok, err)
		}
	}
}

// TestCheckTriggersRefusesReachingOut: a base image's ONBUILD triggers
// run at the start of a build FROM it: they are checked with the
// Dockerfile's rules, as both builders read them (issue 30, finding 2).
func TestCheckTriggersRefusesReachingOut(t *testing.T) {
	for _, tt := range []struct {
		name     string
		triggers []string
		want     string
	}{
		{"ADD of a loopback URL (issue 30)", []string{"ENV A=1", "ADD http://127.0.0.1:18399/loot /loot"}, `ONBUILD trigger "ADD http://127.0.0.1:18399/loot /loot" is refused: ADD http://127.0.0.1:18399/loot: a URL or git source is refused`},
		{"add in lower case", []string{"add http://169.254.169.254/latest/meta-data/ /m"}, "a URL or git source is refused"},
		{"ADD of a git repository", []string{"ADD https://example.org/r.git /r"}, "a URL or git source is refused"},
		{"ADD of a variable", []string{"ADD ${U} /x"}, "a source named by a variable"},
		{"ADD behind a heredoc BuildKit cannot end", []string{"ADD <<EOF http://127.0.0.1:18399/loot /loot"}, "ADD http://127.0.0.1:18399/loot"},
		{"ADD with an unknown flag", []string{"ADD --nope http://127.0.0.1:18399/loot /loot"}, "a URL or git source is refused"},
		{"RUN --mount of a bind", []string{"RUN --mount=type=bind,source=/,target=/h true"}, "RUN --mount is refused"},
		{"RUN --network", []string{"RUN --network=host true"}, "RUN --network is refused"},
		{"LABEL of hostlet's", []string{"LABEL io.hostlet.pod=victim io.hostlet.container=app"}, "LABEL io.hostlet.pod"},
		{"LABEL from a variable", []string{"LABEL $K=v"}, "a label key made from a variable"},
		{"ONBUILD in a trigger", []string{"ONBUILD ADD http://127.0.0.1/x /x"}, "ONBUILD inside an ONBUILD is refused"},
		{"a heredoc's body as the classic builder reads it", []string{"COPY <<EOF /x\nADD http://127.0.0.1/x /x\nEOF"}, "ADD http://127.0.0.1/x"},
		{"ADD of a quoted URL", []string{`ADD http:""//127.0.0.1:18399/loot /loot`}, "a URL or git source is refused"},
		{"ADD of an ssh git source", []string{"ADD foo@127.0.0.1:repo#main /x"}, "use COPY"},
		{"directives before the instruction (read differently by the parsers)", []string{"# check=x\n# escape=`\nCOPY a `\nADD http://127.0.0.1:18411/loot-onbuild /loot"}, "line 1: parser directives that Docker's parsers read differently"},
		{"a cache mount (hostlet cannot drop it)", []string{"RUN --mount=type=cache,target=/c make"}, "RUN --mount in a base image's trigger"},
		{"a cache mount in a heredoc's body", []string{"COPY <<EOF /x\nRUN --mount=type=cache,target=/c make\nEOF"}, "RUN --mount in a base image's trigger"},
		{"LABEL exitCode", []string{"LABEL exitCode=0"}, "LABEL exitCode"},
		{"too many", make([]string, buildctx.MaxTriggers+1), "over the limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := buildctx.CheckTriggers(tt.triggers)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckTriggers(%q) = %v, want an error containing %q", tt.triggers, err, tt.want)
			}
		})
	}
	ok := []string{"ENV A=1", "COPY . /app", "RUN make", "LABEL org.example=1", "ADD app.tar.gz /", "RUN <<EOF\nmake\nEOF"}
	if err := buildctx.CheckTriggers(ok); err != nil {
		t.Errorf("CheckTriggers(%q) = %v, want nil", ok, err)
	}
}

// TestBaseImagesExpandsArgsAsTheBuilders: the images a build starts
// from, its FROMs expanded with the ARGs before the first FROM (the
// build's args first); stages and scratch are not images; a name hostlet
// cannot know is refused.
func TestBaseImagesExpandsArgsAsTheBuilders(t *testing.T) {
	for _, tt := range []struct {
		name, recipe, target string
		args                 map[string]string
		want                 []string
		err                  string
	}{
		{name: "scratch", recipe: "FROM scratch\nCOPY x /x\n"},
		{name: "stages and images", recipe: "FROM golang:1.26 AS build\nRUN go build\nFROM build AS test\nFROM Build AS again\nFROM busybox\nCOPY --from=build /app /app\nFROM golang:1.26\n", want: []string{"golang:1.26", "busybox"}},
		{name: "a default", recipe: "ARG BASE=alpine:3.20\nFROM ${BASE}\n", want: []string{"alpine:3.20"}},
		{name: "an arg given", recipe: "ARG BASE=alpine:3.20\nFROM $BASE\n", args: map[string]string{"BASE": "debian:12"}, want: []string{"debian:12"}},
		{name: "a default from another", recipe: "ARG REPO=library/alpine\nARG BASE=${REPO}:3\nFROM $BASE\n", want: []string{"library/alpine:3"}},
		{name: "a declared arg without a value falls to the default", recipe: "ARG TAG\nFROM alpine:${TAG:-3}\n", want: []string{"alpine:3"}},
		{name: "an arg given after FROM is not FROM's", recipe: "FROM alpine:${TAG}\nARG TAG=3\n", args: map[string]string{"TAG": "3"}, err: "$TAG has no value hostlet knows"},
		{name: "a platform variable", recipe: "FROM example.org/base-${TARGETARCH}\n", err: "$TARGETARCH has no value hostlet knows"},
		{name: "a declared platform variable", recipe: "ARG TARGETARCH\nFROM example.org/base-${TARGETARCH:-amd64}\n", err: "$TARGETARCH has no value"},
		{name: "another platform", recipe: "FROM --platform=linux/s390x alpine\n", err: "FROM --platform=linux/s390x is refused"},
		{name: "the build platform", recipe: "FROM --platform=$BUILDPLATFORM golang AS b\nFROM scratch\nCOPY --from=b /x /x\n", want: []string{"golang"}},
		{name: "up to the target", recipe: "FROM a AS one\nFROM b AS two\nFROM c AS three\n", target: "TWO", want: []string{"a", "b"}},
		{name: "a later stage's name is an image", recipe: "FROM later\nFROM scratch AS later\n", want: []string{"later"}},
		{name: "not a reference", recipe: "FROM Not_A_Ref\n", err: "not an image reference"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildctx.BaseImages(tt.recipe, tt.target, tt.args)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("BaseImages = %q, %v, want an error containing %q", got, err, tt.err)
				}
			case err != nil || !slices.Equal(got, tt.want):
				t.Errorf("BaseImages = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

// TestHeredocLine: the line of the first heredoc as BuildKit reads it
// (what the classic builder reads differently).
func TestHeredocLine(t *testing.T) {
	for recipe, want := range map[string]int{
		"FROM scratch\nCOPY <<CMD /x\nADD http://127.0.0.1:18399/loot /loot\nCMD\n": 2,
		"FROM scratch\nRUN echo '<<' > /x\n":                                        0,
		"FROM scratch\nCOPY a /a\nONBUILD RUN <<EOF\nmake\nEOF\n":                   3,
		"FROM scratch\nRUN [\"/bin/sh\", \"-c\", \"cat <<EOF\"]\n":                  0,
	} {
		if got, err := buildctx.HeredocLine(recipe); err != nil || got != want {
			t.Errorf("HeredocLine(%q) = %d, %v, want %d", recipe, got, err, want)
		}
	}
}

// FuzzCheckRecipe: no Dockerfile makes CheckRecipe, CheckTriggers,
// BaseImages or HeredocLine panic, and a Dockerfile CheckRecipe accepts
// has no line that is an ADD of a URL, whatever heredoc holds it (the
// issue's hostile Dockerfiles are the seeds).
func FuzzCheckRecipe(f *testing.F) {
	for _, tt := range refusedRecipes {
		f.Add(tt.recipe)
	}
	f.Add("FROM scratch\nCOPY <<EOF /etc/app.conf\nlisten 8080\nEOF\n")
	f.Add("ARG BASE=alpine\nFROM ${BASE} AS a\nONBUILD RUN <<EOF\nmake\nEOF\nFROM a\n")
	f.Add("# escape=`\nFROM scratch\nLABEL a=1 `\n  io.hostlet.pod=x\n")
	f.Fuzz(func(t *testing.T, recipe string) {
		err := buildctx.CheckRecipe(recipe, "")
		_ = buildctx.CheckTriggers([]string{recipe})
		_, _ = buildctx.BaseImages(recipe, "", map[string]string{"BASE": "busybox"})
		_, _ = buildctx.HeredocLine(recipe)
		if err != nil {
			return
		}
		acceptedHasNoFetchOrMount(t, recipe)
		if strings.ContainsAny(recipe, "\\`#") {
			// A line could be continued.
			return
		}
		for line := range strings.Lines(recipe) {
			if strings.Trim(line, " \t\r\n") == "ADD http://127.0.0.1:18399/loot /loot" {
				t.Fatalf("CheckRecipe accepted a Dockerfile with a loopback ADD:\n%s", recipe)
			}
		}
	})
}

// TestEveryCacheMountIsDroppedFromWhatIsSent: the cache mounts a
// Dockerfile may have (written whole on a line of the RUN, ONBUILD RUN's
// too) are all dropped from the Dockerfile sent, and the rest of it is
// kept as written.
func TestEveryCacheMountIsDroppedFromWhatIsSent(t *testing.T) {
	for _, tt := range []struct{ recipe, sent string }{
		{"FROM scratch\nRUN --mount=type=cache,target=/x make\n", "FROM scratch\nRUN  make\n"},
		{"FROM scratch\nRUN\t--mount=type=cache,target=/x\t--mount=type=cache,target=/x make\n", "FROM scratch\nRUN\t\t make\n"},
		{"FROM scratch\nRUN --mount=type=cache,target=/x,id=a --mount=type=cache,target=/x make --mount=type=cache,target=/x\n",
			"FROM scratch\nRUN   make --mount=type=cache,target=/x\n"},
		{"FROM scratch\nRUN --mount=type=cache,target=/a \\\n    --mount=type=CACHE,target=/b\\\n    make\n", "FROM scratch\nRUN  \\\n    \\\n    make\n"},
		{"# escape=`\nFROM scratch\nRUN --mount=type=cache,target=/a `\n  make\n", "# escape=`\nFROM scratch\nRUN  `\n  make\n"},
		{"FROM scratch\nONBUILD RUN --mount=type=cache,target=/c make\n", "FROM scratch\nONBUILD RUN  make\n"},
		{"FROM scratch\r\nRUN --mount=type=cache,target=/c make\r\n", "FROM scratch\r\nRUN  make\r\n"},
	} {
		c := manifest.Container{Name: "app", Build: &manifest.Build{Context: ".", DockerfileInline: tt.recipe}}
		if err := buildctx.Resolve("p", &c, ".", buildctx.NewListFolder(nil, "", nil, nil)); err != nil || c.Build.Recipe != tt.sent {
			t.Errorf("Resolve:\n%s\n= %v, sent:\n%q\nwant:\n%q", tt.recipe, err, c.Build.Recipe, tt.sent)
			continue
		}
		acceptedHasNoFetchOrMount(t, tt.recipe)
		if err := buildctx.CheckSent(c.Build.Recipe, ""); err != nil {
			t.Errorf("CheckSent of what is sent: %v", err)
		}
		if err := buildctx.CheckSent(tt.recipe, ""); err == nil || !strings.Contains(err.Error(), "a RUN flag in the Dockerfile sent") {
			t.Errorf("CheckSent of a Dockerfile with a cache mount: %v, want it refused", err)
		}
	}
}

// acceptedHasNoFetchOrMount fails t when recipe, which CheckRecipe
// accepted, has an ADD source with ":" or "@" (a URL or git source) as
// BuildKit's parser reads it, or is sent (Resolve) with a RUN flag left.
func acceptedHasNoFetchOrMount(t *testing.T, recipe string) {
	t.Helper()
	if res, err := parser.Parse(strings.NewReader(recipe)); err == nil {
		for _, n := range res.AST.Children {
			if !strings.EqualFold(n.Value, "add") {
				continue
			}
			for w := n.Next; w != nil && w.Next != nil; w = w.Next {
				if strings.ContainsAny(w.Value, ":@") {
					t.Fatalf("CheckRecipe accepted an ADD of %q:\n%s", w.Value, recipe)
				}
			}
		}
	}
	c := manifest.Container{Name: "app", Build: &manifest.Build{Context: ".", DockerfileInline: recipe}}
	if err := buildctx.Resolve("p", &c, ".", buildctx.NewListFolder(nil, "", nil, nil)); err != nil {
		t.Fatalf("CheckRecipe accepted, Resolve refused (%v):\n%s", err, recipe)
	}
	res, err := parser.Parse(strings.NewReader(c.Build.Recipe))
	if err != nil {
		t.Fatalf("the Dockerfile sent does not parse (%v):\n%s", err, c.Build.Recipe)
	}
	for _, n := range res.AST.Children {
		run := n
		if strings.EqualFold(n.Value, "onbuild") && n.Next != nil && len(n.Next.Children) > 0 {
			run = n.Next.Children[0]
		}
		if strings.EqualFold(run.Value, "run") && len(run.Flags) > 0 {
			t.Fatalf("the Dockerfile sent keeps %q at line %d:\n%s\nfrom:\n%s", run.Flags, n.StartLine, c.Build.Recipe, recipe)
		}
	}
}

// TestFrontendReadsHeredocs: which syntax directives name a Dockerfile
// frontend that reads heredocs (1.4 and later, 1.3 labs, the moving
// tags); a digest or an unknown tag counts as one that does not.
func TestFrontendReadsHeredocs(t *testing.T) {
	for directive, want := range map[string][2]bool{
		"":                               {false, false},
		"# syntax=docker/dockerfile:1\n": {true, true},
		"# syntax=docker/dockerfile\n":   {true, true},
		"# syntax=docker.io/docker/dockerfile:1.7.1\n":  {true, true},
		"# syntax=docker/dockerfile:1.4\n":              {true, true},
		"# syntax=docker/dockerfile:1.3-labs\n":         {true, true},
		"# syntax=docker/dockerfile:labs\n":             {true, true},
		"# syntax=docker/dockerfile:1.3\n":              {true, false},
		"# syntax=docker/dockerfile:1.2\n":              {true, false},
		"# syntax=docker/dockerfile:1.0-experimental\n": {true, false},
		"# syntax=docker/dockerfile@sha256:0123\n":      {true, false},
		"# syntax=example.org/frontend:9\n":             {true, false},
		// Directives the parsers read differently: not a frontend
		// hostlet can say reads heredocs.
		"# foo=bar\n# syntax=docker/dockerfile:1\n": {true, false},
		"\ufeff# syntax=docker/dockerfile:1\n":      {true, false},
	} {
		named, reads := buildctx.FrontendReadsHeredocs(directive + "FROM scratch\n")
		if [2]bool{named, reads} != want {
			t.Errorf("FrontendReadsHeredocs(%q) = %v %v, want %v", directive, named, reads, want)
		}
	}
}

// TestRecipeWorkIsBounded: buildkit's parser reads a heredoc's body in
// time that grows with its lines times its bytes (a 1 MiB Dockerfile of
// one heredoc of short lines: many minutes of a CPU, at every read of
// its source), and every instruction costs it some µs: a Dockerfile or
// trigger past MaxRecipeLines, or with heredocs past MaxHeredocLines or
// MaxHeredocBytes, is refused before it parses, in milliseconds.
func TestRecipeWorkIsBounded(t *testing.T) {
	for _, tt := range []struct{ name, recipe, want string }{
		{"a heredoc of 1 MiB of lines", "FROM scratch\nRUN <<EOF\n" + strings.Repeat("x\n", buildctx.MaxRecipe/2-20) + "EOF\n", "lines, over the limit of"},
		{"a heredoc of 4000 long lines", "FROM scratch\nRUN <<EOF\n" + strings.Repeat(strings.Repeat("x", 200)+"\n", 4000) + "EOF\n", "with heredocs, over"},
		{"a heredoc opened over a continued line", "FROM scratch\nCOPY <\\\n<EOF /x\n" + strings.Repeat("x\n", 3*buildctx.MaxHeredocLines) + "EOF\n", "with heredocs, over"},
		{"an ONBUILD heredoc", "FROM scratch\nONBUILD RUN <<EOF\n" + strings.Repeat("y", 2*buildctx.MaxHeredocBytes) + "\nEOF\n", "with heredocs, over"},
		{"too many lines", "FROM scratch\n" + strings.Repeat("ENV A=1\n", buildctx.MaxRecipeLines), "over the limit of"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan [4]error, 1)
			start := time.Now()
			go func() {
				_, baseErr := buildctx.BaseImages(tt.recipe, "", nil)
				_, lineErr := buildctx.HeredocLine(tt.recipe)
				done <- [4]error{buildctx.CheckRecipe(tt.recipe, ""), buildctx.CheckTriggers([]string{tt.recipe}), baseErr, lineErr}
			}()
			select {
			case errs := <-done:
				for i, err := range errs {
					if err == nil || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("check %d: %v, want an error containing %q", i, err, tt.want)
					}
				}
				t.Logf("refused in %s", time.Since(start))
			case <-time.After(20 * time.Second):
				t.Fatalf("a %d KiB Dockerfile is still being read after 20 s", len(tt.recipe)>>10)
			}
		})
	}
	// Within the bounds, a Dockerfile with heredocs is read.
	ok := "FROM scratch\nRUN <<EOF\n" + strings.Repeat("make\n", buildctx.MaxHeredocLines-10) + "EOF\n"
	if err := buildctx.CheckRecipe(ok, ""); err != nil {
		t.Errorf("a heredoc of %d lines: %v", buildctx.MaxHeredocLines-10, err)
	}
}
