package validate

import (
	"fmt"
	"os"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func TestZZScratch(t *testing.T) {
	for _, f := range []string{"1", "2", "3", "4", "5", "6", "7", "8"} {
		data, err := os.ReadFile("/tmp/scratch/" + f + ".yaml")
		if err != nil {
			continue
		}
		ms, err := manifest.Decode(data, manifest.Origin{Source: "a", File: f + ".yaml"})
		fmt.Println("== ", f)
		for _, e := range Flatten(err) {
			fmt.Printf("DECODE %q\n", e.Error())
		}
		r := Set([]Source{{Name: "a", Manifests: ms}}, Options{HostPathAllow: []string{"/srv"}})
		for _, e := range Flatten(r.Err()) {
			fmt.Printf("SET %q\n", e.Error())
		}
		for _, a := range r.Accepted {
			fmt.Println("ACC", a.Manifest.ID, a.Origin.Index)
		}
	}
}
