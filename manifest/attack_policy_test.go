package manifest_test

// Attacks on the host-access fields' hashing (outside review). A failing
// test is a finding.

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// Docker applies a container's security options in order, a later one of
// a key replacing an earlier (daemon parseSecurityOpt: AppArmorProfile,
// SeccompProfile, NoNewPrivileges are assigned per option). The spec
// hash sorts them, so swapping two of one key changes what runs but not
// the hash: the container is never recreated and keeps the old setting.
func TestAttackPolicySecurityOptOrderHashed(t *testing.T) {
	m := func(opts ...string) manifest.Manifest {
		return manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{
			Name: "app", Image: "example.org/app:1", SecurityOpt: opts}}}
	}
	on := m("no-new-privileges=false", "no-new-privileges=true")  // Docker: on
	off := m("no-new-privileges=true", "no-new-privileges=false") // Docker: off
	if manifest.ContainerHash(on, 0) == manifest.ContainerHash(off, 0) {
		t.Errorf("securityOpt %v and %v hash the same, but Docker runs one with no-new-privileges and the other without", on.Containers[0].SecurityOpt, off.Containers[0].SecurityOpt)
	}
}
