package main

import "testing"

// TestPackageVersionOrdersBuilds: git describe's forms become versions dpkg
// and rpm accept, releases as they are, untagged trees by commit time.
func TestPackageVersionOrdersBuilds(t *testing.T) {
	for _, tc := range []struct {
		name, describe, date, want string
	}{
		{name: "release", describe: "v1.2.3", want: "1.2.3"},
		{name: "after a release", describe: "v1.2.3-4-gabc1234", want: "1.2.3+4.gabc1234"},
		{name: "after a release, dirty", describe: "v1.2.3-4-gabc1234-dirty", want: "1.2.3+4.gabc1234.dirty"},
		{name: "untagged", describe: "00e93e3", date: "20261205151721", want: "0.0.0~git20261205151721.00e93e3"},
		{name: "untagged, dirty", describe: "00e93e3-dirty", date: "20261205151721", want: "0.0.0~git20261205151721.00e93e3.dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := packageVersion(tc.describe, tc.date)
			if err != nil || got != tc.want {
				t.Errorf("packageVersion(%q, %q) = %q, %v; want %q", tc.describe, tc.date, got, err, tc.want)
			}
		})
	}
	for _, bad := range [][2]string{{"00e93e3", ""}, {"", "20261205151721"}, {"a_b", "20261205151721"}} {
		if got, err := packageVersion(bad[0], bad[1]); err == nil {
			t.Errorf("packageVersion(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}
