package gitsource_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

const (
	benchFiles   = 1000
	benchCommits = 500
)

// BenchmarkNoChangeFetch measures the poll that finds the same commit (one
// ls-remote, nothing else) on a repository of 1,000 manifest files and 500
// commits served over smart HTTP with basic auth, and over file:// for
// comparison. The first full fetch (clone into an empty cache, read and
// decode every file) is measured once in the setup and reported as
// first-fetch-ms. http-info-refs-floor is one plain GET of the ref
// advertisement from the same server: the least a no-change poll can cost.
func BenchmarkNoChangeFetch(b *testing.B) {
	t0 := time.Now()
	r := gittest.NewRepo(b)
	commits := []gittest.ImportCommit{{Message: "1000 manifests", Write: map[string]string{}}}
	for i := range benchFiles {
		commits[0].Write[fmt.Sprintf("manifests/%02d/pod-%04d.yaml", i%50, i)] = podYAML(fmt.Sprintf("pod-%04d", i), "1")
	}
	for i := 1; i < benchCommits; i++ {
		n := (i * 7) % benchFiles
		commits = append(commits, gittest.ImportCommit{
			Message: fmt.Sprintf("edit %d", i),
			Write:   map[string]string{fmt.Sprintf("manifests/%02d/pod-%04d.yaml", n%50, n): podYAML(fmt.Sprintf("pod-%04d", n), fmt.Sprint(i))},
		})
	}
	head := r.Import(commits)
	if got := r.GitBare("rev-list", "--count", "main"); got != fmt.Sprint(benchCommits) {
		b.Fatalf("%s commits, want %d", got, benchCommits)
	}
	srv := gittest.Serve(b, r.Root, httpUser, httpPassword)
	pw := filepath.Join(b.TempDir(), "password")
	testkit.WriteFile(b, pw, httpPassword)
	b.Logf("setup: %d files, %d commits in %s", benchFiles, benchCommits, time.Since(t0).Round(time.Millisecond))

	// The floor: one plain GET of info/refs (what a no-change poll must
	// ask), most of it the server starting git http-backend.
	b.Run("http-info-refs-floor", func(b *testing.B) {
		url := srv.RepoURL(r) + "/info/refs?service=git-upload-pack"
		for b.Loop() {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				b.Fatal(err)
			}
			req.SetBasicAuth(httpUser, httpPassword)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET info/refs: %d %v", resp.StatusCode, err)
			}
		}
	})

	for _, tr := range []struct {
		name string
		cfg  config.Source
	}{
		{"http", func() config.Source {
			c := gitConfig(srv.RepoURL(r))
			c.Auth = config.Auth{Username: httpUser, PasswordFile: pw}
			return c
		}()},
		{"file", gitConfig(r.FileURL())},
	} {
		b.Run(tr.name, func(b *testing.B) {
			ctx := context.Background()
			src := gitsource.New(tr.cfg, b.TempDir(), slog.New(slog.DiscardHandler))
			start := time.Now()
			u, ok := src.Poll(ctx)
			first := time.Since(start)
			if !ok || u.Err != nil || u.Revision != head || len(u.Manifests) != benchFiles {
				b.Fatalf("first poll: ok %v err %v revision %s, %d manifests", ok, u.Err, u.Revision, len(u.Manifests))
			}
			srv.ResetCounts()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if u, ok := src.Poll(ctx); ok {
					b.Fatalf("no-change poll sent an update: %v %s", u.Err, u.Revision)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(first.Microseconds())/1000, "first-fetch-ms")
			if tr.name == "http" {
				c := srv.Counts()
				if c.UploadPack != 0 || c.Other != 0 || c.Unauthorized != 0 || c.InfoRefs != int64(b.N) {
					b.Fatalf("%d no-change polls made %+v, want one info/refs GET each and nothing else", b.N, c)
				}
				b.ReportMetric(float64(c.InfoRefs)/float64(b.N), "info-refs/op")
				b.ReportMetric(float64(c.UploadPack)/float64(b.N), "upload-packs/op")
			}
		})
	}
}
