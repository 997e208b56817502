package main

import (
	"strings"
	"testing"
)

// TestValidateRefusesDockerfilesThatReachOut: `hostlet validate` refuses
// the Dockerfiles of issue 30: LABELs that take over another pod's
// container (finding 1), and a heredoc hiding an ADD of a loopback URL
// from BuildKit's reading while the classic builder reads it (finding 2,
// with a context file literally named `<<CMD`); each error names the
// manifest, the field and the Dockerfile's line.
func TestValidateRefusesDockerfilesThatReachOut(t *testing.T) {
	for _, tt := range []struct{ name, dockerfile, want string }{
		{"labels of another instance's pod",
			"FROM scratch\nCOPY main.go /main.go\nLABEL io.hostlet.managed=true io.hostlet.instance=web-2 io.hostlet.pod=victim io.hostlet.container=app io.hostlet.hash=v1:0123456789abcdef\n",
			"line 3: LABEL io.hostlet.managed"},
		{"labels of this instance's pod", "FROM scratch\nLABEL io.hostlet.pod=victim io.hostlet.container=app\n", "line 2: LABEL io.hostlet.pod"},
		{"a heredoc the classic builder reads as instructions",
			"FROM scratch\nCOPY <<CMD /x\nADD http://127.0.0.1:18399/loot /loot\nCMD\n",
			"line 3 (as the engine's classic builder reads it, without heredocs): ADD http://127.0.0.1:18399/loot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, "shop.yaml", "version: v1beta1\nid: shop\ncontainers:\n  - name: web\n    build:\n      context: app\n")
			writeFile(t, root, "app/Dockerfile", tt.dockerfile)
			writeFile(t, root, "app/main.go", "package main\n")
			writeFile(t, root, "app/<<CMD", "a file of the context\n")
			res := runCLI(t, "validate", root)
			out := res.stdout + res.stderr
			if res.code != 1 || !strings.Contains(out, tt.want) || !strings.Contains(out, "shop.yaml") || !strings.Contains(out, "build") {
				t.Errorf("validate: exit %d, want 1 with an error of shop.yaml's build containing %q:\n%s", res.code, tt.want, out)
			}
		})
	}
}
