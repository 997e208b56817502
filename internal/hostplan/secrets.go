package hostplan

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/sopsfile"
	"github.com/hostlet/hostlet/secrets"
)

// SecretChecks are what validate and diff check of the encrypted files of
// a host's set (docs/secrets.md).
type SecretChecks struct {
	// Host is the host's name, in errors.
	Host string
	// Recipients are the public keys of the host's identities
	// (secrets.recipients): without Decrypter, a manifest with an
	// encrypted file none of them can open is an error.
	Recipients []string
	// Decrypter decrypts with the key --secrets-key names: every
	// encrypted file a manifest uses must decrypt, and the manifest is
	// readied as the host readies it (secrets.Tokenize, with MAC).
	Decrypter *secrets.Decrypter
	MAC       secrets.MAC
	// RequireEncrypted are globs (--require-encrypted): a file of a
	// source that one matches (by its path in the source, or by its name
	// when the glob has no '/') must be wholly encrypted with SOPS.
	RequireEncrypted []string
}

// CheckSecrets applies c to reads: a manifest whose encrypted files the
// host cannot open gets the error (the merge then rejects it, as the host
// would), and every file --require-encrypted names that is not wholly
// encrypted is an error of its source.
func CheckSecrets(ctx context.Context, reads []Read, c SecretChecks) []*manifest.Error {
	var errs []*manifest.Error
	for _, r := range reads {
		switch {
		case c.Decrypter != nil:
			secrets.Tokenize(ctx, c.Decrypter, r.Manifests, c.MAC)
		case len(c.Recipients) > 0:
			for i := range r.Manifests {
				checkRecipients(&r.Manifests[i], c)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(r.Plain)) {
			if glob := matchingGlob(c.RequireEncrypted, name); glob != "" {
				errs = append(errs, &manifest.Error{Origin: manifest.Origin{Source: r.Name, File: name},
					Detail: fmt.Sprintf("--require-encrypted %s: %s", glob, r.Plain[name])})
			}
		}
	}
	return errs
}

// matchingGlob is the first of globs that matches name, "" for none.
func matchingGlob(globs []string, name string) string {
	for _, g := range globs {
		target := name
		if !strings.Contains(g, "/") {
			target = path.Base(name)
		}
		if ok, _ := path.Match(g, target); ok {
			return g
		}
	}
	return ""
}

// checkRecipients adds to s an error for each of its encrypted files that
// none of the host's recipients can open.
func checkRecipients(s *manifest.Sourced, c SecretChecks) {
	for _, f := range s.Manifest.Sealed {
		info, ok, err := sopsfile.Detect(f.File, f.Data)
		if err != nil || !ok || slices.ContainsFunc(info.AgeRecipients, func(r string) bool { return slices.Contains(c.Recipients, r) }) {
			continue
		}
		s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID,
			Detail: fmt.Sprintf("secret: host %s cannot decrypt %s:%s: it is encrypted for %s, and the host's keys (secrets.recipients) are %s",
				c.Host, s.Origin.Source, f.File, shortList(info.AgeRecipients), shortList(c.Recipients))})
	}
}

// shortList is keys, at most three, for an error.
func shortList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	if len(keys) > 3 {
		return strings.Join(keys[:3], ", ") + fmt.Sprintf(" and %d more", len(keys)-3)
	}
	return strings.Join(keys, ", ")
}

// SecretKeys reads the key file --secrets-key names (an age identity
// file, or an SSH private key used as one, held to the host's rules:
// mode 0600 or stricter), for a Decrypter with the helper (""
// finds it beside hostlet).
func SecretKeys(ctx context.Context, file, helper string) (*secrets.Decrypter, error) {
	keys, err := secrets.LoadKeys(file, "")
	if err == nil && secrets.IsSSHKeyFile(file) {
		keys, err = secrets.LoadKeys("", file)
	}
	if err != nil {
		return nil, fmt.Errorf("--secrets-key: %w", err)
	}
	d := secrets.NewDecrypter(helper, keys)
	if err := d.CheckKeys(ctx); err != nil {
		return nil, fmt.Errorf("--secrets-key %s: %w", file, err)
	}
	return d, nil
}
