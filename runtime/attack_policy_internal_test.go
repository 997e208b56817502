package runtime

// Attacks on the host-access settings' mapping onto Docker (outside
// review). A failing test is a finding.

import (
	"slices"
	"testing"
)

// systempaths=unconfined is a docker CLI option, not the engine's: the
// CLI turns it into empty MaskedPaths and ReadonlyPaths and never sends
// it; the daemon's parseSecurityOpt answers `invalid --security-opt 2:
// "systempaths=unconfined"`. Validation accepts it (with
// policy.privileged) and hostlet passes it through, so the pod fails to
// create every sync.
func TestAttackPolicySystemPathsUnconfined(t *testing.T) {
	_, hc, err := dockerConfig(ContainerSpec{Name: "x", Image: "example.org/app:1", SecurityOpt: []string{"systempaths=unconfined"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hc.SecurityOpt, "systempaths=unconfined") {
		t.Errorf("HostConfig.SecurityOpt %v sends systempaths=unconfined to the engine, which refuses it; want MaskedPaths and ReadonlyPaths empty (non-nil) instead", hc.SecurityOpt)
	}
	if hc.MaskedPaths == nil || hc.ReadonlyPaths == nil {
		t.Errorf("MaskedPaths %v, ReadonlyPaths %v: want empty, non-nil", hc.MaskedPaths, hc.ReadonlyPaths)
	}
}
