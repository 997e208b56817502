package kube

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// TestFSGroupTranslation: a pod's fsGroup and fsGroupChangePolicy are the
// native pod's (its errors named by the Kubernetes path); a policy
// without fsGroup, which Kubernetes ignores, is noted and left out.
func TestFSGroupTranslation(t *testing.T) {
	tests := []struct {
		name       string
		sc         string
		wantGroup  int64 // -1: none
		wantPolicy string
		wantNote   string
	}{
		{name: "fsGroup alone", sc: "{fsGroup: 2000}", wantGroup: 2000},
		{name: "fsGroup 0", sc: "{fsGroup: 0}", wantGroup: 0},
		{name: "with a policy", sc: "{fsGroup: 2000, fsGroupChangePolicy: OnRootMismatch}", wantGroup: 2000, wantPolicy: "OnRootMismatch"},
		{name: "a policy alone", sc: "{fsGroupChangePolicy: Always}", wantGroup: -1,
			wantNote: "spec.securityContext.fsGroupChangePolicy: without fsGroup no volume's ownership is changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  securityContext: " + tt.sc +
				"\n  containers: [{name: app, image: example.org/app:1}]\n"
			ms, err := manifest.Decode([]byte(text), manifest.Origin{Source: "s", File: "f.yaml"})
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			pods, errs := Translate(ms)
			if len(errs) > 0 || len(pods) != 1 || len(pods[0].Errors) > 0 {
				t.Fatalf("translate: %v, %d pods %v", errs, len(pods), pods)
			}
			m := pods[0].Manifest
			switch {
			case tt.wantGroup < 0 && m.FSGroup != nil:
				t.Errorf("fsGroup %d, want none", *m.FSGroup)
			case tt.wantGroup >= 0 && (m.FSGroup == nil || *m.FSGroup != tt.wantGroup):
				t.Errorf("fsGroup %v, want %d", m.FSGroup, tt.wantGroup)
			}
			if m.FSGroupChangePolicy != tt.wantPolicy {
				t.Errorf("fsGroupChangePolicy %q, want %q", m.FSGroupChangePolicy, tt.wantPolicy)
			}
			if len(m.Containers[0].GroupAdd) > 0 {
				t.Errorf("groupAdd %v: the group is the pod's fsGroup, given at create", m.Containers[0].GroupAdd)
			}
			if tt.wantGroup >= 0 && pods[0].Field("fsGroup") != "spec.securityContext.fsGroup" {
				t.Errorf("fsGroup's errors are named %q", pods[0].Field("fsGroup"))
			}
			var notes []string
			for _, n := range pods[0].Notes {
				notes = append(notes, n.Error())
			}
			if got := strings.Join(notes, "\n"); tt.wantNote != "" && !strings.Contains(got, tt.wantNote) {
				t.Errorf("notes %q, want %q", got, tt.wantNote)
			}
		})
	}
}
