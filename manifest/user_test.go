package manifest_test

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// RootUser says why a user may run as root the way the engine reads the
// user: by its number, whatever its spelling.
func TestRootUserReadsTheNumber(t *testing.T) {
	for user, root := range map[string]bool{
		"": true, "0": true, "00": true, "000:0": true, "0000000000": true, "root": true, "root:staff": true,
		"nginx": true, "4294967295": true, "-1": true, "+1": true, " 1": true,
		"1": false, "1000": false, "1000:0": false, "65534": false,
	} {
		if got := manifest.RootUser(user) != ""; got != root {
			t.Errorf("RootUser(%q) = %q, want root %v", user, manifest.RootUser(user), root)
		}
	}
}
