package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/project"
)

func TestRunRendersABundle(t *testing.T) {
	b := project.Bundle{Options: project.Options{Source: "apps", Dir: "shop", Host: project.Host{Env: map[string]string{"TAG": "1.36"}}}}
	_ = b.Add("compose.yaml", []byte("services:\n  web: {image: 'busybox:${TAG}', cgroup_parent: /custom}\n"), nil)
	in, _ := json.Marshal(b)
	var out bytes.Buffer
	if err := run(context.Background(), bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var resp project.Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Manifests) != 1 || resp.Manifests[0].Manifest.Containers[0].Image != "busybox:1.36" {
		t.Fatalf("manifests %+v", resp.Manifests)
	}
	if errs := resp.Manifests[0].Errors; len(errs) != 1 || errs[0].Error() != "apps:shop/compose.yaml: services.web.cgroup_parent: not supported by hostlet yet" {
		t.Errorf("errors %v", errs)
	}
}

func TestRunRefusesWhatIsNoBundle(t *testing.T) {
	for _, in := range []string{"", "{", "[]", strings.Repeat("x", maxInput+1)} {
		if err := run(context.Background(), strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("input of %d bytes: no error", len(in))
		}
	}
}
