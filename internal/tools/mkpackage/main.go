// Command mkpackage builds hostlet's .deb and .rpm packages (`make
// package`) with nfpm as a library: the three binaries under /usr/bin, the
// systemd unit, the commented /etc/hostlet/hostlet.yaml (a config file the
// package never overwrites once changed), an empty /etc/hostlet/manifests
// and the maintainer scripts, all from packaging/. It is a module of its
// own so that nfpm's dependencies never move the versions hostlet's own
// binary is built with.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// options are the command's flags.
type options struct {
	version    string // git describe, as the Makefile's VERSION
	date       string // the commit's time, YYYYMMDDHHMMSS (UTC)
	pkgVersion string // the package's version; "" derives it
	bin        string // the folder holding the three binaries
	packaging  string // the folder holding the unit, config and scripts
	out        string // where the packages are written
	arch       string // GOARCH of the binaries
	formats    string // comma-separated nfpm packagers
}

func main() {
	var o options
	flag.StringVar(&o.version, "version", "dev", "hostlet's version (git describe --tags --always --dirty)")
	flag.StringVar(&o.date, "date", "", "the commit's time as YYYYMMDDHHMMSS in UTC (package version of an untagged tree; file times)")
	flag.StringVar(&o.pkgVersion, "pkgversion", "", "the packages' version (default: derived from -version and -date)")
	flag.StringVar(&o.bin, "bin", "bin", "folder holding hostlet, hostlet-compose, hostlet-notify, hostlet-images and hostlet-sops")
	flag.StringVar(&o.packaging, "packaging", "packaging", "folder holding hostlet.service, hostlet.yaml and scripts/")
	flag.StringVar(&o.out, "out", "dist", "folder the packages are written to")
	flag.StringVar(&o.arch, "arch", goruntime.GOARCH, "GOARCH of the binaries")
	flag.StringVar(&o.formats, "formats", "deb,rpm", "packages to build")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mkpackage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ver := o.pkgVersion
	if ver == "" {
		var err error
		if ver, err = packageVersion(o.version, o.date); err != nil {
			return err
		}
	}
	mtime, err := commitTime(o.date)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", o.out, err)
	}
	for _, format := range strings.Split(o.formats, ",") {
		info := packageInfo(o, format, ver, mtime)
		path, err := write(info, format, o.out)
		if err != nil {
			return fmt.Errorf("%s package: %w", format, err)
		}
		fmt.Println(path)
	}
	return nil
}

// commitTime parses -date; "" is the Unix epoch (file times then say
// nothing, and the same tree gives the same package).
func commitTime(date string) (time.Time, error) {
	if date == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	t, err := time.Parse("20060102150405", date)
	if err != nil {
		return time.Time{}, fmt.Errorf("-date %q: %w", date, err)
	}
	return t, nil
}

// packageVersion turns git describe's output into a version dpkg and rpm
// both order: v1.2.3 is 1.2.3; v1.2.3-4-gabc1234(-dirty) is
// 1.2.3+4.gabc1234(.dirty), after 1.2.3; an untagged tree (abc1234, with
// -dirty or not) is 0.0.0~git<date>.abc1234(.dirty), ordered by the
// commit's time and before any release.
func packageVersion(describe, date string) (string, error) {
	if describe == "" {
		return "", errors.New("no version given")
	}
	parts := strings.Split(strings.TrimPrefix(describe, "v"), "-")
	if isRelease(parts[0]) {
		if len(parts) == 1 {
			return parts[0], nil
		}
		return parts[0] + "+" + strings.Join(parts[1:], "."), nil
	}
	if date == "" {
		return "", fmt.Errorf("version %q is not a release (vX.Y.Z): -date is needed to order it", describe)
	}
	for _, p := range parts {
		if !versionWord(p) {
			return "", fmt.Errorf("version %q: %q is not letters and digits", describe, p)
		}
	}
	return "0.0.0~git" + date + "." + strings.Join(parts, "."), nil
}

// isRelease reports whether s is X.Y.Z, digits only.
func isRelease(s string) bool {
	nums := strings.Split(s, ".")
	if len(nums) != 3 {
		return false
	}
	for _, n := range nums {
		if n == "" || strings.Trim(n, "0123456789") != "" {
			return false
		}
	}
	return true
}

// versionWord reports whether s is a non-empty run of ASCII letters and
// digits.
func versionWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0
}
