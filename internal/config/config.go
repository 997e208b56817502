package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	yaml "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/manifest"

	"github.com/hostlet/hostlet/internal/redact"
)

// Source types.
const (
	TypeFile = "file"
	TypeHTTP = "http"
	TypeEtcd = "etcd"
	TypeGit  = "git"
	TypePush = "push"
)

// ViaEtcd is the value of a git source's via that reads what `hostlet
// publish` wrote to etcd.
const ViaEtcd = "etcd"

// Config is one host's configuration.
type Config struct {
	Hostname      string   `mapstructure:"hostname"`
	StateDir      string   `mapstructure:"stateDir"`
	Listen        string   `mapstructure:"listen"`
	TokenFile     string   `mapstructure:"tokenFile"`
	Instance      string   `mapstructure:"instance"`
	HostPathAllow []string `mapstructure:"hostPathAllow"`
	Docker        Docker   `mapstructure:"docker"`
	// Engine is the container engine's address by its engine-neutral
	// name (engine.host, e.g. Podman's socket); complete folds it into
	// Docker.Host, which every user of the config reads.
	Engine  Engine     `mapstructure:"engine"`
	Sync    Sync       `mapstructure:"sync"`
	Etcd    Etcd       `mapstructure:"etcd"`
	Sources []Source   `mapstructure:"sources"`
	Log     LogOptions `mapstructure:"log"`
	Stats   Stats      `mapstructure:"stats"`
	Compose Compose    `mapstructure:"compose"`
	Secrets Secrets    `mapstructure:"secrets"`
	Policy  Policy     `mapstructure:"policy"`
	// Labels name what the host is (role, zone, ...), for fleet
	// selectors; the status document reports them.
	Labels map[string]string `mapstructure:"labels"`
	Notify []Notify          `mapstructure:"notify"`

	// File is the config file that was read, "" when none was found.
	File string `mapstructure:"-"`
}

// Policy lists what a manifest may use of the host beyond its own pods.
type Policy struct {
	// ExternalVolumes and ExternalNetworks are the Docker volumes and
	// networks made outside this hostlet that a pod may declare external
	// and mount or join ("*": any). Empty: none.
	ExternalVolumes  []string `mapstructure:"externalVolumes"`
	ExternalNetworks []string `mapstructure:"externalNetworks"`
	// Privileged allows privileged containers and security options that
	// lift confinement; Capabilities the capabilities a container may add
	// (ALL: any); HostNetwork the host's network, PID and IPC namespaces;
	// Devices the host devices a container may be given. Unset: none.
	Privileged   bool     `mapstructure:"privileged"`
	Capabilities []string `mapstructure:"capabilities"`
	HostNetwork  bool     `mapstructure:"hostNetwork"`
	Devices      []string `mapstructure:"devices"`
	// LogDrivers are the log drivers beyond json-file, local, journald
	// and none a container may use, with any option.
	LogDrivers []string `mapstructure:"logDrivers"`
	// Runtimes are the OCI runtimes beyond runc a container may name
	// (nvidia, runsc, kata, ...): each runs its containers its own way.
	Runtimes []string `mapstructure:"runtimes"`
}

// Compose holds the host's settings for Compose projects.
type Compose struct {
	// Env are per-host interpolation values; they win over a project's
	// .env. hostlet's own environment is never read.
	Env map[string]string `mapstructure:"env"`
	// Profiles are the active profiles.
	Profiles []string `mapstructure:"profiles"`
	// Helper is the hostlet-compose executable that renders projects;
	// "" finds it beside the hostlet executable, else on PATH.
	Helper string `mapstructure:"helper"`
	// DataDir holds the pods' data folders (a project's relative binds
	// the project does not hold), in the instance's folder; "" is
	// stateDir/data.
	DataDir string `mapstructure:"dataDir"`
	// Home is the folder a bind source's ~ stands for: "" is the home of
	// the user hostlet runs as, where hostlet runs (hostlet publish, which
	// renders for other hosts, needs it set).
	Home string `mapstructure:"home"`
}

// Docker configures the engine connection.
type Docker struct {
	Host       string `mapstructure:"host"`
	InfraImage string `mapstructure:"infraImage"`
}

// Engine names the container engine's API socket: engine.host is
// docker.host by another name (Docker's or Podman's Docker-compatible
// socket, docs/engines.md); set both only to the same value.
type Engine struct {
	Host string `mapstructure:"host"`
}

// Sync configures the reconciler.
type Sync struct {
	Interval    time.Duration `mapstructure:"interval"`
	Concurrency int           `mapstructure:"concurrency"`
	// PullTimeout bounds one image pull; pulls run outside the sync, so a
	// hanging registry holds only the pods that need its image.
	PullTimeout time.Duration `mapstructure:"pullTimeout"`
	// BuildConcurrency bounds the image builds that run at once (each
	// loads the engine, unlike a pull); BuildTimeout one build.
	BuildConcurrency int           `mapstructure:"buildConcurrency"`
	BuildTimeout     time.Duration `mapstructure:"buildTimeout"`
	Prune            bool          `mapstructure:"prune"`
	AllowEmpty       bool          `mapstructure:"allowEmpty"`
	// Windows are the maintenance windows ("Mon-Fri 02:00-04:00"), in
	// Timezone (an IANA name, default UTC): outside them, changes that
	// disrupt a running pod wait. Empty: no restriction. See
	// internal/window for the syntax.
	Windows  []string `mapstructure:"windows"`
	Timezone string   `mapstructure:"timezone"`
}

// Etcd configures etcd sources and status reporting.
type Etcd struct {
	Endpoints []string `mapstructure:"endpoints"`
	Prefix    string   `mapstructure:"prefix"`
}

// LogOptions configures logging.
type LogOptions struct {
	// Level is debug, info, warn or error.
	Level string `mapstructure:"level"`
	// Format is text or json.
	Format string `mapstructure:"format"`
}

// Source is one configured manifest source. Which fields apply depends on Type.
type Source struct {
	Name     string            `mapstructure:"name"`
	Type     string            `mapstructure:"type"`
	Path     string            `mapstructure:"path"`
	Paths    []string          `mapstructure:"paths"`
	URL      string            `mapstructure:"url"`
	Ref      string            `mapstructure:"ref"`
	Key      string            `mapstructure:"key"`
	Interval time.Duration     `mapstructure:"interval"`
	Timeout  time.Duration     `mapstructure:"timeout"`
	Headers  map[string]string `mapstructure:"headers"`
	Auth     Auth              `mapstructure:"auth"`
	Verify   Verify            `mapstructure:"verify"`
	// Via: etcd makes a git source read what `hostlet publish` wrote for
	// this host (<etcd.prefix>/desired/<hostname>/<name>) instead of
	// polling the repository; "" polls it.
	Via string `mapstructure:"via"`
}

// Auth holds git credentials, each read from a file.
type Auth struct {
	Username       string `mapstructure:"username"`
	PasswordFile   string `mapstructure:"passwordFile"`
	SSHKeyFile     string `mapstructure:"sshKeyFile"`
	KnownHostsFile string `mapstructure:"knownHostsFile"`
}

// Verify configures commit signature checks.
type Verify struct {
	KeyringFile string `mapstructure:"keyringFile"`
}

// AllPaths returns the source's paths: Paths, or Path alone.
func (s Source) AllPaths() []string {
	if len(s.Paths) > 0 {
		return s.Paths
	}
	if s.Path != "" {
		return []string{s.Path}
	}
	return nil
}

// Defaults are the values of every key not set.
func setDefaults(v *viper.Viper) {
	v.SetDefault("hostname", "")
	v.SetDefault("stateDir", "/var/lib/hostlet")
	v.SetDefault("listen", "127.0.0.1:10260")
	v.SetDefault("tokenFile", "")
	v.SetDefault("instance", "")
	v.SetDefault("hostPathAllow", []string{})
	v.SetDefault("docker.host", "")
	v.SetDefault("engine.host", "")
	v.SetDefault("docker.infraImage", "")
	v.SetDefault("sync.interval", "10s")
	v.SetDefault("sync.concurrency", 4)
	v.SetDefault("sync.pullTimeout", "10m")
	v.SetDefault("sync.buildConcurrency", 1)
	v.SetDefault("sync.buildTimeout", "30m")
	v.SetDefault("sync.prune", true)
	v.SetDefault("sync.allowEmpty", false)
	v.SetDefault("sync.windows", []string{})
	v.SetDefault("sync.timezone", "UTC")
	v.SetDefault("etcd.endpoints", []string{})
	v.SetDefault("etcd.prefix", "/hostlet")
	v.SetDefault("sources", []any{})
	v.SetDefault("log.level", "info")
	v.SetDefault("log.format", "text")
	v.SetDefault("stats.cadvisor", "")
	v.SetDefault("compose.helper", "")
	v.SetDefault("compose.dataDir", "")
	v.SetDefault("secrets.ageKeyFile", "")
	v.SetDefault("secrets.sshKeyFile", "")
	v.SetDefault("secrets.recipients", []string{})
	v.SetDefault("secrets.runtimeDir", "/run/hostlet/secrets")
	v.SetDefault("secrets.helper", "")
	v.SetDefault("policy.externalVolumes", []string{})
	v.SetDefault("policy.externalNetworks", []string{})
	v.SetDefault("policy.privileged", false)
	v.SetDefault("policy.capabilities", []string{})
	v.SetDefault("policy.hostNetwork", false)
	v.SetDefault("policy.devices", []string{})
	v.SetDefault("policy.logDrivers", []string{})
	v.SetDefault("policy.runtimes", []string{})
	v.SetDefault("compose.profiles", []string{})
	v.SetDefault("labels", map[string]string{})
	v.SetDefault("notify", []any{})
}

// DefaultSearchPaths are read in order when neither --config nor
// $HOSTLET_CONFIG names a file.
var defaultSearchPaths = []string{"./hostlet.yaml", "/etc/hostlet/hostlet.yaml"}

// Load reads the configuration: the file named by path, else
// $HOSTLET_CONFIG, else the first of ./hostlet.yaml and
// /etc/hostlet/hostlet.yaml that exists (none is fine: defaults apply).
// HOSTLET_<KEY> environment variables override keys (HOSTLET_SYNC_INTERVAL
// for sync.interval). Every error names the key.
func Load(path string) (*Config, error) {
	v := viper.New()
	setDefaults(v)
	v.SetEnvPrefix("HOSTLET")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	file := path
	if file == "" {
		file = os.Getenv("HOSTLET_CONFIG")
	}
	if file == "" {
		for _, p := range defaultSearchPaths {
			if _, err := os.Stat(p); err == nil {
				file = p
				break
			}
		}
	}
	if file != "" {
		if err := checkShape(file); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, redact.Error(err))
		}
	}
	c, err := decode(v)
	if err != nil {
		return nil, withFile(file, err)
	}
	c.File = file
	if err := c.composeEnvCase(file); err != nil {
		return nil, withFile(file, err)
	}
	if err := c.labelsCase(file); err != nil {
		return nil, withFile(file, err)
	}
	if err := c.complete(); err != nil {
		return nil, withFile(file, err)
	}
	return c, nil
}

// Bounds of a host config file, checked before viper reads it: its bytes,
// and how deep its mappings and lists nest (viper's work grows with the
// square of the depth; the deepest key of a config is 4 levels down).
const (
	MaxFileBytes = 4 << 20
	MaxDepth     = 32
)

// checkShape refuses a config file over MaxFileBytes or nested deeper
// than MaxDepth. A file that is not YAML is left to viper to report.
func checkShape(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return nil // viper says what is wrong
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("over %d bytes", MaxFileBytes)
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	if manifest.NodeDepth(&doc, MaxDepth+1) > MaxDepth {
		return fmt.Errorf("mappings and lists nested more than %d deep", MaxDepth)
	}
	return nil
}

// composeEnvCase reads compose.env from the file again: viper folds map
// keys to lower case, and variable names are case-sensitive (TAG and tag
// are two variables).
func (c *Config) composeEnvCase(file string) error {
	if file == "" || len(c.Compose.Env) == 0 {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var raw struct {
		Compose struct {
			Env map[string]string `yaml:"env"`
		} `yaml:"compose"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("compose.env: %w", err)
	}
	c.Compose.Env = raw.Compose.Env
	return nil
}

// withFile names the config file in err, and hides the userinfo of every
// URL the message quotes.
func withFile(file string, err error) error {
	err = redact.Error(err)
	if file == "" {
		return fmt.Errorf("config: %w", err)
	}
	return fmt.Errorf("config %s: %w", file, err)
}

func decode(v *viper.Viper) (*Config, error) {
	var c Config
	err := v.UnmarshalExact(&c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(strictDurationHook, mapstructure.StringToSliceHookFunc(","))
	})
	if err != nil {
		return nil, keyErrors(err)
	}
	return &c, nil
}

// strictDurationHook parses durations from strings ("30s") and refuses
// bare numbers, which would silently mean nanoseconds.
func strictDurationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	switch d := data.(type) {
	case string:
		dur, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (use e.g. 30s, 1m)", d)
		}
		return dur, nil
	case time.Duration:
		return d, nil
	default:
		return nil, fmt.Errorf("%v is not a duration (use a string with a unit, e.g. 30s)", data)
	}
}

// keyErrors rewrites mapstructure's errors into one line per key.
func keyErrors(err error) error {
	var lines []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			inner := errors.Unwrap(de)
			msg := inner.Error()
			if keys, ok := strings.CutPrefix(msg, "has invalid keys: "); ok {
				for _, k := range strings.Split(keys, ", ") {
					lines = append(lines, fmt.Sprintf("unknown key %q", joinKey(de.Name(), k)))
				}
				return
			}
			lines = append(lines, fmt.Sprintf("key %q: %s", de.Name(), stripDecodePrefix(msg)))
			return
		}
		lines = append(lines, e.Error())
	}
	walk(err)
	return errors.New(strings.Join(lines, "; "))
}

func stripDecodePrefix(msg string) string {
	if i := strings.Index(msg, "error decoding '"); i >= 0 {
		if j := strings.Index(msg[i:], "': "); j >= 0 {
			return msg[i+j+3:]
		}
	}
	return msg
}

func joinKey(parent, k string) string {
	if parent == "" || parent == reflect.TypeOf(Config{}).String() {
		return k
	}
	return parent + "." + k
}

var sourceNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// badFunc records that key breaks a rule.
type badFunc func(key, format string, args ...any)

// complete fills derived defaults and checks every rule a key must follow.
func (c *Config) complete() error {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("key %q: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("key \"hostname\": not set and os.Hostname failed: %w", err)
		}
		c.Hostname = h
	}
	if c.Instance == "" {
		c.Instance = c.Hostname
	}
	c.checkTopLevel(bad)
	switch {
	case c.Engine.Host != "" && c.Docker.Host != "" && c.Engine.Host != c.Docker.Host:
		bad("engine.host", "%q differs from docker.host %q (they name the same socket: set one)", c.Engine.Host, c.Docker.Host)
	case c.Engine.Host != "":
		c.Docker.Host = c.Engine.Host
	}
	c.Stats.check(bad)
	c.Secrets.check(bad)
	c.checkWindows(bad)
	c.checkNotify(bad)
	c.checkLabels(bad)
	seen := map[string]int{}
	pushes := 0
	for i := range c.Sources {
		s := &c.Sources[i]
		key := func(f string) string { return fmt.Sprintf("sources[%d].%s", i, f) }
		c.checkSource(s, key, seen, i, bad)
		if s.Type == TypePush {
			if pushes++; pushes > 1 {
				bad(key("type"), "only one push source is allowed")
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// pathElement reports whether h can be one element of a path or an etcd
// key: at most 253 bytes, not . or .., no '/', '\\', space or control
// character.
func pathElement(h string) bool {
	return len(h) <= 253 && h != "." && h != ".." && strings.IndexFunc(h, func(r rune) bool {
		return r == '/' || r == '\\' || r <= ' ' || r == 0x7f
	}) < 0
}

// checkTopLevel checks the keys outside sources and stats.
func (c *Config) checkTopLevel(bad badFunc) {
	// The hostname names the host's etcd keys (status, liveness, events,
	// its published set): a path element, never a path.
	if !pathElement(c.Hostname) {
		bad("hostname", "%q is not a host name (no '/', space or control character, not . or .., at most 253 bytes)", truncateKey(c.Hostname))
	}
	// The instance names the instance's folder of data folders, too.
	if !pathElement(c.Instance) {
		bad("instance", "%q is not an instance name (no '/', space or control character, not . or .., at most 253 bytes)", truncateKey(c.Instance))
	}
	// One spelling of the prefix for every key built from it: a leading
	// '/', no trailing one.
	if p := strings.Trim(c.Etcd.Prefix, "/"); p != "" {
		c.Etcd.Prefix = "/" + p
	}
	if c.Sync.Interval <= 0 {
		bad("sync.interval", "must be positive, got %s", c.Sync.Interval)
	}
	if c.Sync.Concurrency < 1 {
		bad("sync.concurrency", "must be at least 1, got %d", c.Sync.Concurrency)
	}
	if c.Sync.BuildConcurrency < 1 {
		bad("sync.buildConcurrency", "must be at least 1, got %d", c.Sync.BuildConcurrency)
	}
	if c.Sync.BuildTimeout <= 0 {
		bad("sync.buildTimeout", "must be positive, got %s", c.Sync.BuildTimeout)
	}
	if c.Sync.PullTimeout <= 0 {
		bad("sync.pullTimeout", "must be positive, got %s", c.Sync.PullTimeout)
	}
	if c.StateDir == "" {
		bad("stateDir", "required")
	} else if abs, err := filepath.Abs(c.StateDir); err != nil {
		bad("stateDir", "%q: %v", c.StateDir, err)
	} else {
		// Relative to where hostlet starts, once: every check of a host
		// path against it (and every later chdir) sees the same folder.
		c.StateDir = abs
	}
	if c.Compose.DataDir == "" && c.StateDir != "" {
		c.Compose.DataDir = filepath.Join(c.StateDir, "data")
	} else if abs, err := filepath.Abs(c.Compose.DataDir); err != nil {
		bad("compose.dataDir", "%q: %v", c.Compose.DataDir, err)
	} else {
		c.Compose.DataDir = abs
	}
	if c.Compose.Home != "" && (!filepath.IsAbs(c.Compose.Home) || filepath.Clean(c.Compose.Home) != c.Compose.Home) {
		bad("compose.home", "%q is not a clean absolute path", c.Compose.Home)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		bad("log.format", "%q is not one of text, json", c.Log.Format)
	}
}

// checkSource checks sources[i] (s), fills its defaults and renders its
// {{.Hostname}} templates; seen maps the names checked before to their
// index.
func (c *Config) checkSource(s *Source, key func(string) string, seen map[string]int, i int, bad badFunc) {
	if s.Name == "" {
		bad(key("name"), "required")
	} else if !sourceNameRE.MatchString(s.Name) {
		bad(key("name"), "%q must be lowercase letters, digits and '-'", s.Name)
	} else if j, dup := seen[s.Name]; dup {
		bad(key("name"), "duplicate source name %q (also sources[%d])", s.Name, j)
	}
	seen[s.Name] = i
	if s.Interval < 0 {
		bad(key("interval"), "must not be negative")
	}
	if s.Interval == 0 {
		s.Interval = c.Sync.Interval
	}
	if s.Timeout == 0 {
		s.Timeout = 30 * time.Second
	}
	c.renderSource(s, key, bad)
	if s.Path != "" && len(s.Paths) > 0 {
		bad(key("path"), "set path or paths, not both")
	}
	if s.Type == "" {
		bad(key("type"), "required (file, http, etcd, git or push)")
		return
	}
	rule, known := sourceRules[s.Type]
	if !known {
		bad(key("type"), "%q is not one of file, http, etcd, git, push", s.Type)
		return
	}
	rule(c, s, key, bad)
	switch {
	case s.Via == "":
	case s.Via != ViaEtcd:
		bad(key("via"), "%q is not etcd (or leave it out: the source polls its own)", s.Via)
	case s.Type != TypeGit:
		bad(key("via"), "only a git source is published through etcd")
	}
}

// renderSource expands {{.Hostname}} in s's path, paths, url and key; it
// stops at the first that does not render.
func (c *Config) renderSource(s *Source, key func(string) string, bad badFunc) {
	failed := false
	render := func(field string, p *string) {
		if failed || *p == "" {
			return
		}
		raw := *p
		var err error
		if *p, err = Expand(raw, c.Hostname); err != nil {
			failed = true
			bad(key(field), "%v", redact.Text(err.Error(), raw))
		}
	}
	render("path", &s.Path)
	render("url", &s.URL)
	render("key", &s.Key)
	for j := range s.Paths {
		render(fmt.Sprintf("paths[%d]", j), &s.Paths[j])
	}
}

// sourceRules holds, for each source type, the checks of the keys that
// type needs (and their defaults). Building a source of a type is
// sources/configured's job; this is only what the config file must say.
var sourceRules = map[string]func(c *Config, s *Source, key func(string) string, bad badFunc){
	TypeFile: func(_ *Config, s *Source, key func(string) string, bad badFunc) {
		if len(s.AllPaths()) == 0 {
			bad(key("path"), "required for a file source")
		}
	},
	TypeGit: func(c *Config, s *Source, key func(string) string, bad badFunc) {
		if s.URL == "" {
			bad(key("url"), "required for a git source")
		}
		if s.Via == ViaEtcd && len(c.Etcd.Endpoints) == 0 {
			bad("etcd.endpoints", "required by git source %q (via: etcd)", s.Name)
		}
		if s.Ref == "" {
			s.Ref = "main"
		}
	},
	TypeHTTP: func(_ *Config, s *Source, key func(string) string, bad badFunc) {
		if s.URL == "" {
			bad(key("url"), "required for an http source")
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			bad(key("url"), "%q is not an http(s) URL", redact.URL(s.URL))
		}
	},
	TypeEtcd: func(c *Config, s *Source, key func(string) string, bad badFunc) {
		if s.Key == "" {
			bad(key("key"), "required for an etcd source")
		}
		if len(c.Etcd.Endpoints) == 0 {
			bad("etcd.endpoints", "required by etcd source %q", s.Name)
		}
	},
	TypePush: func(*Config, *Source, func(string) string, badFunc) {},
}

// Expand replaces {{.Hostname}} in s. Any other template action is an error.
func Expand(s, hostname string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := template.New("").Option("missingkey=error").Parse(s)
	if err != nil {
		return "", fmt.Errorf("bad template %q: %w", s, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct{ Hostname string }{hostname}); err != nil {
		return "", fmt.Errorf("bad template %q: only {{.Hostname}} is known: %w", s, err)
	}
	return b.String(), nil
}

// Token reads the bearer token from TokenFile; "" when none is configured.
func (c *Config) Token() (string, error) {
	if c.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read tokenFile: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("tokenFile %s is empty", c.TokenFile)
	}
	return tok, nil
}
