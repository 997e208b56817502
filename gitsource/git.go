package gitsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
)

// Errors a git source reports, classified once here (see classify).
var (
	ErrAuth       = errors.New("authentication failed")
	ErrRefMissing = errors.New("ref not found on the remote")
	ErrSignature  = errors.New("commit signature not valid")
	ErrRepoAccess = errors.New("repository not reachable")
)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Source is a git manifest source.
type Source struct {
	cfg config.Source
	// remote is cfg.URL without its userinfo: what go-git is given and
	// the cache's config keeps (the credentials go in the auth).
	remote  string
	dir     string
	log     *slog.Logger
	baseLog *slog.Logger
	trigger chan struct{}
	clock   clock.Clock
	// compose renders the Compose projects the source holds.
	compose *project.Renderer
	// pace draws Run's waits between polls.
	pace *pacer

	lastCommit string
	lastErr    string
}

// New returns the git source for cfg, caching the repository under
// stateDir/git/<name>.
func New(cfg config.Source, stateDir string, log *slog.Logger) *Source {
	return &Source{
		cfg:     cfg,
		remote:  remoteURL(cfg.URL),
		dir:     filepath.Join(stateDir, "git", cfg.Name),
		log:     log.With("source", cfg.Name, "url", redact.URL(cfg.URL)),
		baseLog: log,
		trigger: make(chan struct{}, 1),
		clock:   clock.Real{},
		pace:    newPacer(cfg.Interval),
	}
}

// WithClock makes the source poll on c (nil: clock.Real) and returns it;
// call it before Run. A fetch's timeout (cfg.Timeout) stays a context
// deadline.
func (s *Source) WithClock(c clock.Clock) *Source {
	s.clock = clock.Or(c)
	return s
}

// WithCompose sets the renderer of the Compose projects the source holds
// (nil: a project is an error) and returns it; call it before Run.
func (s *Source) WithCompose(r *project.Renderer) *Source {
	s.compose = r
	return s
}

// Name implements sources.Source.
func (s *Source) Name() string { return s.cfg.Name }

// Type implements sources.Source.
func (s *Source) Type() string { return config.TypeGit }

// Trigger asks for a fetch now (POST /sync), backoff or not; calls
// coalesce.
func (s *Source) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Run implements sources.Source. It polls at once, then after each wait
// the pacer draws: the interval ±10%; after n failures to fetch in a row,
// interval × 2^(n-1) up to max(5 min, 10 × interval), ±10% too, until a
// poll succeeds. Trigger cuts any wait short. A failure of the commit
// itself (see commitError) is no reason to wait longer.
func (s *Source) Run(ctx context.Context, out chan<- sources.Update) {
	for {
		u, ok := s.Poll(ctx)
		if ok {
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
		failed := ok && u.Err != nil && !isCommitError(u.Err)
		if !s.wait(ctx, s.pace.next(failed)) {
			return
		}
	}
}

// wait waits d, or until Trigger is called; it reports false when ctx
// ended first.
func (s *Source) wait(ctx context.Context, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	case <-s.trigger:
	}
	return true
}

// Poll checks the remote once. It returns an update, and true, when the
// commit changed or the poll failed (every failure is sent, so that
// hostlet_source_errors_total counts failures; the merge and the events
// take a repeated error as one, and only a new error is logged); a poll
// that finds the same commit does no other work.
func (s *Source) Poll(ctx context.Context) (sources.Update, bool) {
	start := s.clock.Now()
	u, err := s.pollTimeout(ctx)
	if ctx.Err() != nil {
		return sources.Update{}, false
	}
	if err != nil {
		if msg := err.Error(); msg != s.lastErr {
			s.lastErr = msg
			s.log.Warn("git source error; keeping the last good set", "error", msg)
		}
		return sources.Update{Source: s.cfg.Name, Err: err, Took: s.clock.Since(start)}, true
	}
	hadErr := s.lastErr != ""
	s.lastErr = ""
	if u.Revision == s.lastCommit && !hadErr {
		return sources.Update{}, false
	}
	s.lastCommit = u.Revision
	u.Took = s.clock.Since(start)
	s.log.Info("git source at new commit", "commit", u.Revision, "manifests", len(u.Manifests), "took", u.Took.Round(time.Millisecond))
	return u, true
}

// pollTimeout is poll bounded by the source's timeout: a server that
// accepts the connection and never answers must not stop the source.
func (s *Source) pollTimeout(ctx context.Context) (sources.Update, error) {
	if s.cfg.Timeout <= 0 {
		return s.poll(ctx)
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	u, err := s.poll(pctx)
	if err != nil && ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("source %s: %w: %s: no answer within %s (the source's timeout)", s.cfg.Name, ErrRepoAccess, redact.URL(s.cfg.URL), s.cfg.Timeout)
	}
	return u, err
}

func (s *Source) poll(ctx context.Context) (sources.Update, error) {
	auth, err := authMethod(s.cfg)
	if err != nil {
		return sources.Update{}, fmt.Errorf("source %s: %w", s.cfg.Name, err)
	}
	target, refspec, err := s.resolveRemote(ctx, auth)
	if err != nil {
		return sources.Update{}, err
	}
	if target.String() == s.lastCommit && s.lastErr == "" {
		return sources.Update{Source: s.cfg.Name, Revision: s.lastCommit}, nil
	}
	u, err := s.load(ctx, auth, target, refspec)
	var ce *cacheError
	if !errors.As(err, &ce) || ctx.Err() != nil {
		return u, err
	}
	// Something a damaged cache explains (a truncated pack, a half-written
	// folder): start again from an empty cache, once. A fresh clone that
	// fails the same way reports the error.
	s.log.Warn("git cache unusable; cloning again", "dir", s.dir, "error", err)
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		return sources.Update{}, fmt.Errorf("source %s: remove damaged git cache %s: %w", s.cfg.Name, s.dir, rmErr)
	}
	return s.load(ctx, auth, target, refspec)
}

// cacheError is a failure a damaged cache may explain: the cache is removed
// and the commit loaded again from a fresh clone. Its message is what is
// reported when the fresh clone fails too.
type cacheError struct{ err error }

func (e *cacheError) Error() string { return e.err.Error() }
func (e *cacheError) Unwrap() error { return e.err }

// commitError is a failure of the commit itself (its signature, its
// manifests), met once the remote answered and the commit is in the
// cache: Flux's "stalling" class. Run does not back off for it: the same
// commit fails alike until a new one is pushed, and that one is seen
// within the interval. Its message is the error's.
type commitError struct{ err error }

func (e *commitError) Error() string { return e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

func isCommitError(err error) bool {
	var ce *commitError
	return errors.As(err, &ce)
}

// load makes the commit present in the cache, checks its signature and
// reads its manifests. Decode errors come back with everything that did
// decode (ReadOnce reports them all; Poll sends no partial set).
func (s *Source) load(ctx context.Context, auth transport.AuthMethod, target plumbing.Hash, refspec gitconfig.RefSpec) (sources.Update, error) {
	commit, err := s.fetchInto(ctx, auth, target, refspec)
	if err != nil {
		return sources.Update{}, err
	}
	if s.cfg.Verify.KeyringFile != "" {
		if err := verify(commit, s.cfg.Verify.KeyringFile); err != nil {
			return sources.Update{}, &commitError{err}
		}
	}
	ms, files, err := ReadCommit(ctx, commit, s.cfg.AllPaths(), s.cfg.Name, s.compose)
	if isObjectError(err) {
		return sources.Update{}, &cacheError{fmt.Errorf("source %s: %w", s.cfg.Name, err)}
	}
	if err != nil && ctx.Err() == nil {
		err = &commitError{err}
	}
	return sources.Update{Source: s.cfg.Name, Revision: commit.Hash.String(), Files: files, Manifests: ms}, err
}

// resolveRemote asks the remote (one ls-remote) which commit ref names now,
// and returns the refspec that fetches it.
func (s *Source) resolveRemote(ctx context.Context, auth transport.AuthMethod) (plumbing.Hash, gitconfig.RefSpec, error) {
	ref := s.cfg.Ref
	if shaRE.MatchString(ref) {
		return plumbing.NewHash(ref), gitconfig.RefSpec("+refs/heads/*:refs/remotes/origin/*"), nil
	}
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.remote}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return plumbing.ZeroHash, "", s.classify(err)
	}
	var branch, tag, peeled plumbing.Hash
	for _, r := range refs {
		switch r.Name().String() {
		case "refs/heads/" + ref:
			branch = r.Hash()
		case "refs/tags/" + ref:
			tag = r.Hash()
		case "refs/tags/" + ref + "^{}":
			peeled = r.Hash()
		}
	}
	switch {
	case !branch.IsZero():
		return branch, gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", ref, ref)), nil
	case !peeled.IsZero():
		return peeled, gitconfig.RefSpec(fmt.Sprintf("+refs/tags/%s:refs/tags/%s", ref, ref)), nil
	case !tag.IsZero():
		return tag, gitconfig.RefSpec(fmt.Sprintf("+refs/tags/%s:refs/tags/%s", ref, ref)), nil
	}
	return plumbing.ZeroHash, "", fmt.Errorf("source %s: %w: %q is neither a branch nor a tag of %s (deleted?)", s.cfg.Name, ErrRefMissing, ref, redact.URL(s.cfg.URL))
}

// fetchInto makes the commit present in the cache and returns it. Errors a
// damaged cache may explain are *cacheError.
func (s *Source) fetchInto(ctx context.Context, auth transport.AuthMethod, target plumbing.Hash, refspec gitconfig.RefSpec) (*object.Commit, error) {
	if err := checkPacks(s.dir); err != nil {
		return nil, &cacheError{fmt.Errorf("source %s: %w", s.cfg.Name, err)}
	}
	repo, created, err := s.open()
	if err != nil {
		return nil, &cacheError{fmt.Errorf("source %s: %w", s.cfg.Name, err)}
	}
	// The commit may be there already (a force-push back to an older commit).
	if c, err := repo.CommitObject(target); err == nil {
		if _, err := c.Tree(); err == nil {
			return c, nil
		}
	}
	depth := 1
	if shaRE.MatchString(s.cfg.Ref) {
		depth = 0 // a bare SHA can only be found in the full history
	}
	err = repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{refspec}, Auth: auth, Depth: depth, Force: true, Tags: git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if created || ctx.Err() != nil || remoteFailure(err) {
			return nil, s.classify(err)
		}
		// The remote answered ls-remote a moment ago; a fetch into an
		// existing cache that fails otherwise may be the cache's fault (a
		// damaged pack read to negotiate or to resolve deltas).
		return nil, &cacheError{s.classify(err)}
	}
	c, err := repo.CommitObject(target)
	if err != nil {
		if shaRE.MatchString(s.cfg.Ref) && errors.Is(err, plumbing.ErrObjectNotFound) {
			err = fmt.Errorf("source %s: %w: commit %s is not on any branch of %s", s.cfg.Name, ErrRefMissing, s.cfg.Ref, redact.URL(s.cfg.URL))
			if created {
				return nil, err
			}
			// A cache made by shallow fetches of a branch may lack it.
			return nil, &cacheError{err}
		}
		return nil, &cacheError{fmt.Errorf("source %s: read commit %s from the cache: %w", s.cfg.Name, target, err)}
	}
	if _, err := c.Tree(); err != nil {
		return nil, &cacheError{fmt.Errorf("source %s: read the tree of %s from the cache: %w", s.cfg.Name, target, err)}
	}
	return c, nil
}

// remoteFailure reports whether a fetch error is the remote's (or the
// network's) for sure, so that cloning again would not help.
// (Not net.Error: a local syscall.Errno, such as a cache folder that cannot
// be written, satisfies it too.)
func remoteFailure(err error) bool {
	var (
		urlErr *url.Error
		opErr  *net.OpError
		dnsErr *net.DNSError
	)
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrRepositoryNotFound) || errors.Is(err, transport.ErrEmptyRemoteRepository) ||
		errors.Is(err, transport.ErrInvalidAuthMethod) ||
		errors.As(err, &urlErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr)
}

// open opens the bare cache, creating it (empty, with the remote) when it
// does not exist; created reports that it did.
func (s *Source) open() (repo *git.Repository, created bool, err error) {
	repo, err = git.PlainOpen(s.dir)
	if err == nil {
		rem, rerr := repo.Remote("origin")
		if rerr == nil && len(rem.Config().URLs) == 1 {
			switch stored := rem.Config().URLs[0]; {
			case stored == s.remote:
				return repo, false, nil
			case remoteURL(stored) == s.remote && s.rewriteRemote(repo) == nil:
				// An earlier hostlet kept the URL with its credentials in
				// the cache's config: rewritten without them.
				s.log.Info("git cache: credentials removed from the stored remote URL", "dir", s.dir)
				return repo, false, nil
			}
		}
		// The URL changed in the config (or the remote is gone from a
		// damaged config): start over.
	} else if !errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, false, fmt.Errorf("open git cache %s: %w", s.dir, err)
	}
	// Not there, or a folder without HEAD (a first clone cut short): what
	// is in it is of no use.
	if err := os.RemoveAll(s.dir); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o700); err != nil {
		return nil, false, err
	}
	repo, err = git.PlainInit(s.dir, true)
	if err != nil {
		return nil, false, fmt.Errorf("create git cache %s: %w", s.dir, err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.remote}}); err != nil {
		return nil, false, fmt.Errorf("create git cache %s: %w", s.dir, err)
	}
	return repo, true, nil
}

// rewriteRemote sets the cache's remote URL to s.remote.
func (s *Source) rewriteRemote(repo *git.Repository) error {
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	rc, ok := cfg.Remotes["origin"]
	if !ok {
		return errors.New("no remote origin")
	}
	rc.URLs = []string{s.remote}
	return repo.SetConfig(cfg)
}

// classify turns go-git's transport errors into ours, in one place.
func (s *Source) classify(err error) error {
	u := redact.URL(s.cfg.URL)
	scrub := func(msg string) string { return strings.TrimSpace(redact.Text(msg, s.cfg.URL, s.remote)) }
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("source %s: %w for %s: %s", s.cfg.Name, ErrAuth, u, scrub(err.Error()))
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("source %s: %w: %s: repository not found", s.cfg.Name, ErrRepoAccess, u)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("source %s: %w: %s: the repository is empty", s.cfg.Name, ErrRefMissing, u)
	case strings.Contains(err.Error(), "knownhosts") || strings.Contains(err.Error(), "host key"):
		return fmt.Errorf("source %s: %w: %s: ssh host key check failed: %s", s.cfg.Name, ErrRepoAccess, u, scrub(err.Error()))
	}
	return fmt.Errorf("source %s: %w: %s: %s", s.cfg.Name, ErrRepoAccess, u, scrub(err.Error()))
}

// verify checks the commit's OpenPGP signature against the keyring.
func verify(c *object.Commit, keyringFile string) error {
	keyring, err := os.ReadFile(keyringFile)
	if err != nil {
		return fmt.Errorf("verify.keyringFile: %w", err)
	}
	if c.PGPSignature == "" {
		return fmt.Errorf("%w: commit %s is not signed", ErrSignature, c.Hash)
	}
	if _, err := c.Verify(string(keyring)); err != nil {
		return fmt.Errorf("%w: commit %s: %v", ErrSignature, c.Hash, err)
	}
	return nil
}

// Read implements sources.Source: it fetches the source's commit into a
// temporary cache, reads it and removes the cache (the cache under
// stateDir is left alone), for `hostlet validate` and `hostlet diff`
// without a local checkout. Decode errors come back with the manifests
// that did decode: validate reports every error.
func (s *Source) Read(ctx context.Context) (manifest.Snapshot, error) {
	snap := manifest.Snapshot{Name: s.cfg.Name, Type: config.TypeGit}
	tmp, err := os.MkdirTemp("", "hostlet-git-")
	if err != nil {
		return snap, fmt.Errorf("source %s: temporary git cache: %w", s.cfg.Name, err)
	}
	defer os.RemoveAll(tmp)
	once := New(s.cfg, tmp, s.baseLog).WithCompose(s.compose)
	u, err := once.pollTimeout(ctx)
	snap.Revision, snap.Files, snap.Manifests = u.Revision, u.Files, u.Manifests
	return snap, err
}

// ReadOnce reads the source of cfg once (see Source.Read).
func ReadOnce(ctx context.Context, cfg config.Source, log *slog.Logger) (manifest.Snapshot, error) {
	return New(cfg, "", log).Read(ctx)
}

// ReadAt implements reading at another revision for `hostlet diff
// --against ref:REV`: a source without a checkout cannot be read there,
// and says so before anything is fetched.
func (s *Source) ReadAt(_ context.Context, rev string) (manifest.Snapshot, error) {
	return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--against ref:%s: git source %s needs --source %s=DIR (a checkout of %s)", rev, s.cfg.Name, s.cfg.Name, redact.URL(s.cfg.URL))}
}
