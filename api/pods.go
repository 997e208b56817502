package api

import (
	"context"
	"maps"
	"net/http"
	"strings"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/podspec"
)

// Inspector reads one container's details from the engine.
type Inspector interface {
	Inspect(ctx context.Context, id string) (hruntime.Details, error)
}

// PodDoc is GET /pods/{id}: the pod's status and its containers as the
// engine reports them, env values replaced by hashes.
type PodDoc struct {
	hsync.PodStatus
	Engine []hruntime.Details `json:"engine"`
}

// HandlePods serves GET /pods/{id} (one inspect per container of the pod,
// per request), env values hashed with Options.EnvHasher.
func (s *Server) HandlePods(in Inspector) {
	s.HandleRead("GET /pods/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		for _, p := range s.syncer.Report().Pods {
			if p.ID != id {
				continue
			}
			doc := PodDoc{PodStatus: p, Engine: []hruntime.Details{}}
			for _, c := range p.Containers {
				if c.ContainerID == "" {
					continue
				}
				d, err := in.Inspect(r.Context(), c.ContainerID)
				if err != nil {
					writeError(w, http.StatusBadGateway, err.Error())
					return
				}
				doc.Engine = append(doc.Engine, redactDetails(d, s.opts.EnvHasher))
			}
			writeJSON(w, http.StatusOK, doc)
			return
		}
		writeError(w, http.StatusNotFound, "no pod "+id)
	}))
}

// redactDetails replaces every env value, and the header values of the
// preStop hook its label records, with their keyed hashes.
func redactDetails(d hruntime.Details, h *hsync.EnvHasher) hruntime.Details {
	env := make([]string, len(d.Env))
	for i, e := range d.Env {
		name, value, _ := strings.Cut(e, "=")
		env[i] = name + "=" + h.Hash(name, value)
	}
	d.Env = env
	if v := d.Labels[podspec.LabelPreStop]; v != "" {
		d.Labels = maps.Clone(d.Labels)
		d.Labels[podspec.LabelPreStop] = podspec.RedactPreStopLabel(v, h)
	}
	return d
}
