package sync

import (
	"log/slog"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// The pod -> container-spec translation and its keyed env hash live in
// sync/podspec; these names keep the ones sync has always offered.

// Pod is one desired pod (podspec.Pod).
type Pod = podspec.Pod

// EnvHasher hides env values behind a per-host key (podspec.EnvHasher).
type EnvHasher = podspec.EnvHasher

// Labels hostlet reads back from a container, and the env hash key file.
const (
	LabelNetworks = podspec.LabelNetworks
	LabelFiles    = podspec.LabelFiles
	LabelSpec     = podspec.LabelSpec
	EnvKeyFile    = podspec.EnvKeyFile
)

// NewPod returns the desired pod for an accepted manifest (podspec.NewPod).
func NewPod(m manifest.Manifest, source, revision string) Pod {
	return podspec.NewPod(m, source, revision)
}

// NewSourcedPod returns the desired pod for an accepted manifest with what
// interpolation put into it (podspec.NewSourcedPod).
func NewSourcedPod(s manifest.Sourced, revision string) Pod {
	return podspec.NewSourcedPod(s, revision)
}

// NewEnvHasher returns the hasher for key (podspec.NewEnvHasher).
func NewEnvHasher(key []byte) *EnvHasher { return podspec.NewEnvHasher(key) }

// RandomEnvHasher returns a hasher with a fresh random key
// (podspec.RandomEnvHasher).
func RandomEnvHasher() *EnvHasher { return podspec.RandomEnvHasher() }

// LoadEnvHasher returns the hasher of the host's key in stateDir, creating
// it on first use (podspec.LoadEnvHasher).
func LoadEnvHasher(stateDir string, log *slog.Logger) (*EnvHasher, error) {
	return podspec.LoadEnvHasher(stateDir, log)
}

// ReadEnvHasher returns the hasher of the key in stateDir, never creating
// or changing it (podspec.ReadEnvHasher).
func ReadEnvHasher(stateDir string) (*EnvHasher, error) { return podspec.ReadEnvHasher(stateDir) }
