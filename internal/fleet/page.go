package fleet

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

//go:embed page.html.tmpl
var pageFS embed.FS

var pageTmpl = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"short": shortRevision,
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return now.Sub(t).Round(time.Second).String() + " ago"
	},
	"rfc3339": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
}).ParseFS(pageFS, "page.html.tmpl"))

// Bounds of the page.
const (
	// MaxDetailHosts is how many hosts the page shows expanded details
	// (pods, events) for; past it a host's row links to its own page.
	MaxDetailHosts = 200
	// MaxEvents is how many of a host's recent events are shown.
	MaxEvents = 20
	// RefreshSeconds is how often the page reloads itself.
	RefreshSeconds = 10
)

// HostDetail is what a host's expanded row shows.
type HostDetail struct {
	Pods   []PodLine
	Events []EventLine
	Error  string
}

// PodLine is one pod of a host's last report.
type PodLine struct {
	ID, Phase, Reason, Rollout, RolloutReason string
}

// EventLine is one recent event of a host.
type EventLine struct {
	Time                                  time.Time
	Type, Pod, Container, Reason, Message string
}

// pageData is what the template renders.
type pageData struct {
	View     View
	Now      time.Time
	Refresh  int
	Selector string
	Details  map[string]HostDetail
	Error    string
	// Open is the host shown expanded (?open=NAME); "" for none.
	Open string
}

// Details reads host's pods (from its status) and recent events.
func Details(ctx context.Context, kv KV, prefix, host string) HostDetail {
	var d HostDetail
	// The keys as the reporter writes them (no path cleaning: a host
	// name read from a key stays under its prefix).
	base := strings.TrimSuffix(prefix, "/")
	resp, err := kv.Get(ctx, base+"/status/"+host)
	switch {
	case err != nil:
		d.Error = cut(err.Error(), maxErrorBytes)
	case len(resp.Kvs) == 1 && len(resp.Kvs[0].Value) <= MaxStatusBytes:
		var doc struct {
			Pods []struct {
				ID      string `json:"id"`
				Phase   string `json:"phase"`
				Reason  string `json:"reason"`
				Rollout *struct {
					State  string `json:"state"`
					Reason string `json:"reason"`
				} `json:"rollout"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
			d.Error = "status does not decode: " + cut(err.Error(), maxErrorBytes)
		}
		for _, p := range doc.Pods {
			l := PodLine{ID: p.ID, Phase: p.Phase, Reason: p.Reason}
			if p.Rollout != nil {
				l.Rollout, l.RolloutReason = p.Rollout.State, cut(p.Rollout.Reason, 300)
			}
			d.Pods = append(d.Pods, l)
		}
	}
	evs, err := kv.Get(ctx, base+"/events/"+host+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(MaxEvents))
	if err == nil {
		for _, kv := range evs.Kvs {
			var e struct {
				Time                                  time.Time
				Type, Pod, Container, Reason, Message string
			}
			if len(kv.Value) > 64<<10 || json.Unmarshal(kv.Value, &e) != nil {
				continue
			}
			d.Events = append(d.Events, EventLine{Time: e.Time, Type: e.Type, Pod: e.Pod, Container: e.Container,
				Reason: cut(e.Reason, 300), Message: cut(e.Message, 300)})
		}
	}
	return d
}

// Handler serves the fleet page: GET / (the table, each host expandable
// to its pods and recent events; ?selector=k=v filters) and GET
// /hosts/{name} (one host's details). Read-only, server-rendered, no
// external assets; it reloads itself every RefreshSeconds.
func Handler(kv KV, prefix string, now func() time.Time, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	render := func(w http.ResponseWriter, r *http.Request, data pageData) {
		var b bytes.Buffer
		if err := pageTmpl.Execute(&b, data); err != nil {
			log.Warn("render the fleet page", "error", err)
			http.Error(w, "render the page failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b.Bytes())
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		data := pageData{Now: now(), Refresh: RefreshSeconds, Details: map[string]HostDetail{}, Open: r.URL.Query().Get("open")}
		sel := Selector{}
		if s := r.URL.Query().Get("selector"); s != "" {
			var err error
			if sel, err = ParseSelector(s); err != nil {
				data.Error = err.Error()
			}
			data.Selector = sel.String()
		}
		v, err := Rows(ctx, kv, prefix, sel)
		if err != nil {
			data.Error = fmt.Sprintf("read the fleet from etcd: %v", err)
		}
		data.View = v
		for i, h := range v.Hosts {
			if i == MaxDetailHosts {
				break
			}
			data.Details[h.Host] = Details(ctx, kv, prefix, h.Host)
		}
		render(w, r, data)
	})
	mux.HandleFunc("GET /hosts/{name}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		name := r.PathValue("name")
		v, err := Rows(ctx, kv, prefix, Selector{})
		data := pageData{Now: now(), Refresh: RefreshSeconds, Details: map[string]HostDetail{}, Open: name}
		if err != nil {
			data.Error = fmt.Sprintf("read the fleet from etcd: %v", err)
		}
		i := slices.IndexFunc(v.Hosts, func(h HostRow) bool { return h.Host == name })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		data.View = View{LatestRelease: v.LatestRelease, ReleaseTime: v.ReleaseTime, ReleaseState: v.ReleaseState, ReleaseReason: v.ReleaseReason, Hosts: v.Hosts[i : i+1]}
		data.Details[name] = Details(ctx, kv, prefix, name)
		render(w, r, data)
	})
	return mux
}

// shortRevision is a revision as the page shows it: 12 characters, a
// "sha256:"-like prefix left out.
func shortRevision(rev string) string {
	if i := strings.IndexByte(rev, ':'); i >= 0 {
		rev = rev[i+1:]
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev
}
