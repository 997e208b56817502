package imagescmd_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/internal/imagescmd"
)

// The scheduled workflow of examples/fleet parses, and every flag it
// gives `hostlet images update` is one the command has.
func TestExampleWorkflowUsesFlagsThatExist(t *testing.T) {
	data, err := os.ReadFile("../../examples/fleet/ci/image-updates.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct{ Run string }
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var script string
	for _, s := range wf.Jobs["update"].Steps {
		if strings.Contains(s.Run, "hostlet images update") {
			script = s.Run
		}
	}
	if script == "" {
		t.Fatal("no step runs hostlet images update")
	}
	var update = imagescmd.NewCommand()
	cmd, _, err := update.Find([]string{"update"})
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?:^|\s|")--([a-z-]+)`).FindAllStringSubmatch(script, -1)
	if len(flags) < 4 {
		t.Fatalf("flags %q: want --commit, --branch, --source, --config, --status-url", flags)
	}
	for _, f := range flags {
		if cmd.Flags().Lookup(f[1]) == nil {
			t.Errorf("the workflow gives --%s, which images update does not have", f[1])
		}
	}
}
