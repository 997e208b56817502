package sources

import (
	"context"
	"path"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources/tree"
)

// decodeBody decodes one body (an HTTP response, an etcd value): a Compose
// file, recognised by its top-level services key, is a project without
// files beside it (named by its name key, else the etcd key's or the
// source's name), rendered by r; anything else is native manifests.
func decodeBody(ctx context.Context, body []byte, origin manifest.Origin, r *project.Renderer) ([]manifest.Sourced, error) {
	if !project.LooksLikeCompose(body) {
		return manifest.Decode(body, origin)
	}
	name := origin.Source
	if origin.File != "" {
		base := path.Base(origin.File)
		name = strings.TrimSuffix(base, path.Ext(base))
	}
	opts := project.Options{Source: origin.Source, Dir: origin.File, Name: name}
	if r == nil {
		return nil, &manifest.Error{Origin: origin, Detail: tree.ErrNoRenderer.Error(), Err: tree.ErrNoRenderer}
	}
	return r.Render(ctx, project.Bundle{Options: opts, Body: body})
}
