package gitsource

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
)

// remoteURL is a source's URL as the source uses and stores it: without
// its userinfo, whose credentials go into the auth (authMethod).
func remoteURL(raw string) string {
	bare, _, _, _ := redact.Split(raw)
	return bare
}

// authMethod builds the transport auth from the source's auth files:
// HTTPS basic auth with a password or token read from passwordFile; SSH
// with a private key file and known_hosts checking (knownHostsFile, or the
// user's known_hosts when unset: checking is never off). Credentials in the
// URL (https://TOKEN@host/repo.git, or user:password@) become basic auth
// too, so that the URL given to go-git, kept in the cache's config and
// shown in errors holds none; auth.username and auth.passwordFile, when
// set, take precedence over them.
func authMethod(src config.Source) (transport.AuthMethod, error) {
	a := src.Auth
	bare, urlUser, urlPassword, _ := redact.Split(src.URL)
	ep, err := transport.NewEndpoint(bare)
	if err != nil {
		return nil, fmt.Errorf("url %s: %s", redact.URL(src.URL), redact.Text(err.Error(), src.URL, bare))
	}
	switch ep.Protocol {
	case "ssh":
		if a.SSHKeyFile == "" {
			return nil, errors.New("auth.sshKeyFile is required for an ssh:// url")
		}
		user := urlUser
		if user == "" {
			user = ep.User
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("auth.sshKeyFile %s: %w", a.SSHKeyFile, err)
		}
		var files []string
		if a.KnownHostsFile != "" {
			files = append(files, a.KnownHostsFile)
		}
		cb, err := gitssh.NewKnownHostsCallback(files...)
		if err != nil {
			return nil, fmt.Errorf("known hosts (auth.knownHostsFile): %w", err)
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case "http", "https":
		user, pw := urlUser, urlPassword
		if a.Username != "" {
			user = a.Username
		}
		if a.PasswordFile != "" {
			b, err := os.ReadFile(a.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("auth.passwordFile: %w", err)
			}
			pw = strings.TrimSpace(string(b))
		}
		if user == "" && pw == "" {
			return nil, nil
		}
		if user == "" {
			// Token-only auth: most servers take any user name with a token.
			user = "hostlet"
		}
		return &basicAuth{BasicAuth: githttp.BasicAuth{Username: user, Password: pw}}, nil
	}
	return nil, nil
}

// basicAuth is go-git's HTTP basic auth with a String that names neither
// the user (a token, when the URL held it as its user name) nor the
// password.
type basicAuth struct{ githttp.BasicAuth }

func (a *basicAuth) String() string { return a.Name() + " - " + redact.Placeholder }
