package sources

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
)

// Snapshot is one atomic read of a source: every manifest it holds now.
type Snapshot struct {
	Source    string
	Type      string
	Revision  string
	Files     int
	Manifests []manifest.Sourced
}

// ReadOnce reads source s once, for `hostlet validate` and `hostlet diff`.
// When dir is not "", the source is read from that local folder instead of
// its configured location: a git source's paths are resolved inside dir (a
// checkout of the repository); any other source reads dir as a tree.
// Decode errors come back alongside the manifests that did decode.
func ReadOnce(ctx context.Context, s config.Source, dir string, etcd EtcdKV) (Snapshot, error) {
	snap := Snapshot{Source: s.Name, Type: s.Type}
	var (
		res TreeResult
		err error
	)
	switch {
	case dir != "" && s.Type == config.TypeGit:
		paths := s.AllPaths()
		if len(paths) == 0 {
			paths = []string{"."}
		}
		res, err = ReadTree(dir, paths, s.Name)
	case dir != "":
		res, err = ReadTree(dir, []string{"."}, s.Name)
	case s.Type == config.TypeFile:
		res, err = ReadTree("", s.AllPaths(), s.Name)
	case s.Type == config.TypePush:
		// A push source holds only what is pushed to a running hostlet.
		return snap, nil
	case s.Type == config.TypeHTTP:
		h := NewHTTP(s, slog.New(slog.DiscardHandler))
		snap, _, err := h.fetch(ctx)
		return snap, err
	case s.Type == config.TypeEtcd:
		if etcd == nil {
			return snap, fmt.Errorf("source %s: no etcd client (etcd.endpoints)", s.Name)
		}
		snap, _, err := NewEtcd(s, etcd, slog.New(slog.DiscardHandler)).read(ctx)
		return snap, err
	default:
		return snap, fmt.Errorf("source %s: a %s source is read once by its own package (gitsource.ReadOnce), or pass --source %s=DIR", s.Name, s.Type, s.Name)
	}
	if err := ctx.Err(); err != nil {
		return snap, err
	}
	snap.Revision, snap.Files, snap.Manifests = res.Revision, res.Files, res.Manifests
	return snap, err
}
