package imagescmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/imageupdate"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sync/rollouts"
)

// statusTimeout bounds reading one host's status.
const statusTimeout = 15 * time.Second

// hostStates reads the status of each host API URL given, and of each
// host config given that names etcd endpoints (the status its host
// reports there), and keeps what the updater must not go against:
// rolled-back versions and holds.
func hostStates(ctx context.Context, urls, configs []string) ([]imageupdate.HostState, error) {
	var out []imageupdate.HostState
	for _, file := range configs {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
		if len(cfg.Etcd.Endpoints) == 0 {
			continue
		}
		doc, err := statusFromEtcd(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
		out = append(out, statesOf(doc)...)
	}
	for _, u := range urls {
		doc, err := readStatus(ctx, u)
		if err != nil {
			return nil, err
		}
		out = append(out, statesOf(doc)...)
	}
	return out, nil
}

func readStatus(ctx context.Context, base string) (api.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	parsed, err := url.Parse(strings.TrimSuffix(base, "/") + "/status")
	if err != nil || parsed.Host == "" || parsed.Scheme != "http" && parsed.Scheme != "https" {
		return api.Document{}, errors.New("--status-url: want http://HOST:PORT (or https)")
	}
	// Said without a password the URL may carry.
	u := parsed.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, parsed.String(), nil)
	if err != nil {
		return api.Document{}, fmt.Errorf("--status-url %s: %w", u, err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return api.Document{}, fmt.Errorf("read %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return api.Document{}, fmt.Errorf("read %s: %s", u, resp.Status)
	}
	data, err := manifest.ReadLimited(resp.Body, 64<<20)
	if err != nil {
		return api.Document{}, fmt.Errorf("read %s: %w", u, err)
	}
	var doc api.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return api.Document{}, fmt.Errorf("read %s: not a status document: %w", u, err)
	}
	return doc, nil
}

// statesOf keeps the rolled-back and held pods of a host's status (a
// rolled-back pod's rollout names the images of the version held back,
// and every rollout those of the pod's earlier rollbacks).
func statesOf(doc api.Document) []imageupdate.HostState {
	var out []imageupdate.HostState
	for _, p := range doc.Pods {
		r := p.Rollout
		if r == nil {
			continue
		}
		for _, b := range r.RolledBackBefore {
			out = append(out, imageupdate.HostState{Host: doc.Hostname, Pod: p.ID, Images: b.Images, Revision: b.Revision, Reason: b.Reason})
		}
		s := imageupdate.HostState{Host: doc.Hostname, Pod: p.ID, Revision: r.Revision, Reason: r.Reason}
		switch {
		case r.State == rollouts.RolloutRolledBack:
			s.Images = r.Images
		case r.State == rollouts.RolloutHeld && r.Hold != nil:
			s.HeldBy, s.Reason = r.Hold.By, r.Hold.Reason
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

// statusFromEtcd reads the status document cfg's host reports in etcd
// (none yet: an empty one).
func statusFromEtcd(ctx context.Context, cfg *config.Config) (api.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	cli, err := sources.DialEtcd(cfg.Etcd.Endpoints)
	if err != nil {
		return api.Document{}, redact.Error(err, cfg.Etcd.Endpoints...)
	}
	defer cli.Close()
	statusKey, _, _ := reporter.Keys(cfg.Etcd.Prefix, cfg.Hostname)
	resp, err := cli.Get(ctx, statusKey)
	if err != nil {
		return api.Document{}, redact.Error(fmt.Errorf("read the status of %s from etcd: %w", cfg.Hostname, err), cfg.Etcd.Endpoints...)
	}
	var doc api.Document
	if len(resp.Kvs) == 0 {
		return doc, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
		return api.Document{}, fmt.Errorf("the status of %s in etcd: %w", cfg.Hostname, err)
	}
	return doc, nil
}
