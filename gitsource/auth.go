package gitsource

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/hostlet/hostlet/internal/config"
)

// authMethod builds the transport auth from the source's auth files:
// HTTPS basic auth with a password or token read from passwordFile; SSH
// with a private key file and known_hosts checking (knownHostsFile, or the
// user's known_hosts when unset: checking is never off).
func authMethod(src config.Source) (transport.AuthMethod, error) {
	a := src.Auth
	ep, err := transport.NewEndpoint(src.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	switch ep.Protocol {
	case "ssh":
		if a.SSHKeyFile == "" {
			return nil, errors.New("auth.sshKeyFile is required for an ssh:// url")
		}
		user := ep.User
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
		if a.PasswordFile == "" && a.Username == "" {
			return nil, nil
		}
		pw := ""
		if a.PasswordFile != "" {
			b, err := os.ReadFile(a.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("auth.passwordFile: %w", err)
			}
			pw = strings.TrimSpace(string(b))
		}
		user := a.Username
		if user == "" {
			// Token-only auth: most servers take any user name with a token.
			user = "hostlet"
		}
		return &githttp.BasicAuth{Username: user, Password: pw}, nil
	}
	return nil, nil
}

// redactURL removes credentials from a URL for logs and errors.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
