package validate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// TestStopGraceCannotHoldTheSyncPass (issue 30, finding 1): a stop waits
// the pod's grace period for a container that ignores SIGTERM, inside the
// sync pass, so a grace of years froze every pod's updates. A grace over
// validate.MaxStopGraceSeconds (10 minutes) is refused, naming the file,
// the pod and the field; one at the limit is accepted.
func TestStopGraceCannotHoldTheSyncPass(t *testing.T) {
	if validate.MaxStopGraceSeconds != 600 {
		t.Fatalf("MaxStopGraceSeconds = %d, want 600", validate.MaxStopGraceSeconds)
	}
	for _, tc := range []struct {
		grace int64
		ok    bool
	}{{0, true}, {30, true}, {600, true}, {601, false}, {86400, false}, {manifest.MaxSeconds, false}} {
		t.Run(strconv.FormatInt(tc.grace, 10), func(t *testing.T) {
			y := "version: v1beta1\nid: slow\nterminationGracePeriodSeconds: " + strconv.FormatInt(tc.grace, 10) +
				"\ncontainers:\n  - name: app\n    image: example.org/app:1\n"
			ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "local", File: "slow.yaml"})
			if err != nil || len(ms) != 1 {
				t.Fatalf("decode: %v (%d manifests)", err, len(ms))
			}
			err = validate.Manifest(ms[0], validate.Options{})
			if tc.ok {
				if err != nil {
					t.Fatalf("grace %d refused: %v", tc.grace, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("grace %d accepted", tc.grace)
			}
			for _, want := range []string{"slow.yaml", `pod "slow"`, "terminationGracePeriodSeconds", "over the limit of 600 s: a stop waits that long for it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
