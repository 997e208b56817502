package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// packageInfo is the package nfpm builds in format: the same files and
// scripts in every format.
func packageInfo(o options, format, version string, mtime time.Time) *nfpm.Info {
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: mtime}}
	}
	contents := files.Contents{
		file(filepath.Join(o.bin, "hostlet"), "/usr/bin/hostlet", 0o755),
		file(filepath.Join(o.bin, "hostlet-compose"), "/usr/bin/hostlet-compose", 0o755),
		file(filepath.Join(o.bin, "hostlet-notify"), "/usr/bin/hostlet-notify", 0o755),
		file(filepath.Join(o.bin, "hostlet-images"), "/usr/bin/hostlet-images", 0o755),
		file(filepath.Join(o.bin, "hostlet-sops"), "/usr/bin/hostlet-sops", 0o755),
		file(filepath.Join(o.packaging, "hostlet.service"), "/usr/lib/systemd/system/hostlet.service", 0o644),
		{
			Source: filepath.Join(o.packaging, "hostlet.yaml"), Destination: "/etc/hostlet/hostlet.yaml",
			Type:     files.TypeConfigNoReplace,
			FileInfo: &files.ContentFileInfo{Mode: 0o640, MTime: mtime},
		},
		{Destination: "/etc/hostlet", Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}},
		{Destination: "/etc/hostlet/manifests", Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}},
	}
	scripts := filepath.Join(o.packaging, "scripts")
	return nfpm.WithDefaults(&nfpm.Info{
		Name:          "hostlet",
		Arch:          o.arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Release:       "1",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    "hostlet developers <hostlet@users.noreply.github.com>",
		Description: "Declarative GitOps host agent for Docker and Podman\n" +
			"hostlet pulls pod manifests and Compose projects from git, files,\n" +
			"HTTP, etcd or pushes, validates them and makes the local engine\n" +
			"match them. Upgrading hostlet restarts no container.",
		Homepage: "https://github.com/hostlet/hostlet",
		License:  "Apache-2.0",
		MTime:    mtime,
		Overridables: nfpm.Overridables{
			Contents:   contents,
			Recommends: recommends(format),
			Suggests:   []string{"git"},
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(scripts, "postinstall.sh"),
				PreRemove:   filepath.Join(scripts, "preremove.sh"),
				PostRemove:  filepath.Join(scripts, "postremove.sh"),
			},
			RPM: nfpm.RPM{Group: "System Environment/Daemons", Summary: "Declarative GitOps host agent for Docker and Podman"},
		},
	})
}

// write builds info's package in format under dir, after nfpm's own
// checks of info, and returns its path.
func write(info *nfpm.Info, format, dir string) (string, error) {
	if err := nfpm.Validate(info); err != nil {
		return "", fmt.Errorf("check: %w", err)
	}
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	// PrepareForPackager fills the contents for this format (parent
	// folders, sizes); each format gets its own copy of info.
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", fmt.Errorf("prepare: %w", err)
	}
	path := filepath.Join(dir, pkgr.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("build %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// recommends are the packages hostlet works best with. The engine is the
// host's choice (Docker from Debian or from Docker, or Podman's socket):
// a deb names the alternatives; an rpm cannot (nfpm's rpm writer takes no
// rich dependency), so it names none.
func recommends(format string) []string {
	if format == "deb" {
		return []string{"docker.io | docker-ce | podman", "ca-certificates"}
	}
	return []string{"ca-certificates"}
}
