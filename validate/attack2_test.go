package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

func attackDecode(t *testing.T, y string) manifest.Sourced {
	t.Helper()
	ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "test", File: "t.yaml"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return ms[0]
}

// Docker's local driver needs a volume name of at least two characters
// ([a-zA-Z0-9][a-zA-Z0-9_.-]+); validation accepts one, so the pod fails
// only at apply time ("includes invalid characters for a local volume
// name").
func TestAttack2DockerVolumeOneCharacter(t *testing.T) {
	m := attackDecode(t, `
version: v1beta1
id: web
volumes: [{name: data, dockerVolume: a}]
containers: [{name: app, image: example.org/app:1, volumeMounts: [{name: data, mountPath: /data}]}]
`)
	if err := validate.Manifest(m, validate.Options{}); err == nil {
		t.Error(`dockerVolume "a" accepted; Docker refuses a one-character volume name`)
	}
}

// With no hostPathAllow at all ("no hostPath volume is allowed"), a pod
// may still mount any existing Docker volume of the host read-write:
// another instance's or team's named volume, or a local volume that binds
// a host folder (driver opts type=none,o=bind,device=/etc).
func TestAttack2ExternalDockerVolumeBypassesHostPolicy(t *testing.T) {
	m := attackDecode(t, `
version: v1beta1
id: thief
volumes: [{name: loot, dockerVolume: teamb_db, external: true}]
containers: [{name: app, image: example.org/app:1, volumeMounts: [{name: loot, mountPath: /loot}]}]
`)
	if err := validate.Manifest(m, validate.Options{}); err == nil {
		t.Error("external dockerVolume teamb_db accepted with an empty hostPathAllow: no policy bounds which host volumes a manifest mounts")
	}
}

// A cycle across manifests (a waits for b, b waits for a) is accepted by
// Set: both pods then wait forever (see sync's
// TestAttack2DependsOnCycleDeadlocks).
func TestAttack2DependsOnCycleAccepted(t *testing.T) {
	a, b := pod("a"), pod("b")
	a.DependsOn = []manifest.Dependency{{Pod: "b"}}
	b.DependsOn = []manifest.Dependency{{Pod: "a"}}
	r := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}}, validate.Options{})
	if len(r.Rejected) == 0 {
		t.Error("dependsOn cycle a -> b -> a accepted")
	}
}

// Two pods may declare one hostlet network differently (internal in one,
// not in the other): whichever is created first decides, silently.
func TestAttack2ConflictingNetworkDeclarationsAccepted(t *testing.T) {
	a, b := pod("a"), pod("b")
	a.Networks = []manifest.Network{{Name: "db_net", Internal: true}}
	b.Networks = []manifest.Network{{Name: "db_net"}}
	r := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}}, validate.Options{})
	if len(r.Rejected) == 0 {
		t.Error("db_net declared internal by a and not internal by b: both accepted")
	}
}

// A pod may mount or join a volume or network made outside this hostlet
// (another instance's, another team's, a local volume binding a host
// folder) only when the host config's policy lists it.
func TestAttack2ExternalNeedsThePolicy(t *testing.T) {
	p := pod("web")
	p.Volumes = []manifest.Volume{{Name: "loot", DockerVolume: "teamb_db", External: true}}
	p.Networks = []manifest.Network{{Name: "teamb_default", External: true}}
	s := sourced("s", "web.yaml", 0, p)
	err := validate.Manifest(s, validate.Options{})
	for _, want := range []string{"policy.externalVolumes", "policy.externalNetworks"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("external volume and network with no policy: %v, want an error naming %s", err, want)
		}
	}
	if err := validate.Manifest(s, validate.Options{ExternalVolumes: []string{"teamb_db"}, ExternalNetworks: []string{"*"}}); err != nil {
		t.Errorf("with the policy listing them: %v", err)
	}
}
