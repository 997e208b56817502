package validate_test

// A pod's Docker volumes: named as Docker's local driver allows, and one
// made outside this hostlet only as the host config's policy lists.

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// decodeSourced decodes y, which holds one manifest.
func decodeSourced(t *testing.T, y string) manifest.Sourced {
	t.Helper()
	ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "test", File: "t.yaml"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return ms[0]
}

// TestDockerVolumeNameOfOneCharacterRefused: Docker's local driver needs
// a volume name of at least two characters ([a-zA-Z0-9][a-zA-Z0-9_.-]+);
// accepted by validation, a pod with one would fail only at apply time
// ("includes invalid characters for a local volume name").
func TestDockerVolumeNameOfOneCharacterRefused(t *testing.T) {
	m := decodeSourced(t, `
version: v1beta1
id: web
volumes: [{name: data, dockerVolume: a}]
containers: [{name: app, image: example.org/app:1, volumeMounts: [{name: data, mountPath: /data}]}]
`)
	if err := validate.Manifest(m, validate.Options{}); err == nil {
		t.Error(`dockerVolume "a" accepted; Docker refuses a one-character volume name`)
	}
}

// TestExternalDockerVolumeRefusedWithoutPolicy: with no hostPathAllow at
// all ("no hostPath volume is allowed") and no policy for external
// volumes, a pod may not mount an existing Docker volume of the host
// read-write: another instance's or team's named volume, or a local
// volume that binds a host folder (driver opts type=none,o=bind,device=/etc).
func TestExternalDockerVolumeRefusedWithoutPolicy(t *testing.T) {
	m := decodeSourced(t, `
version: v1beta1
id: thief
volumes: [{name: loot, dockerVolume: teamb_db, external: true}]
containers: [{name: app, image: example.org/app:1, volumeMounts: [{name: loot, mountPath: /loot}]}]
`)
	if err := validate.Manifest(m, validate.Options{}); err == nil {
		t.Error("external dockerVolume teamb_db accepted with an empty hostPathAllow: no policy bounds which host volumes a manifest mounts")
	}
}
