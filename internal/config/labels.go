package config

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	yaml "go.yaml.in/yaml/v3"
)

// Host labels name what a host is (`labels: {role: canary, zone: a}`) for
// fleet selectors (`hostlet publish --wave 'canary: role=canary'`); the
// status document reports them.
var (
	labelKeyRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)
	labelValueRE = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// MaxLabels bounds a host's labels; keys and values are at most 63 bytes.
const MaxLabels = 64

// labelsCase reads labels from the file again: viper folds map keys to
// lower case, and a key written in capitals must be refused, not folded.
func (c *Config) labelsCase(file string) error {
	if file == "" || len(c.Labels) == 0 {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var raw struct {
		Labels map[string]any `yaml:"labels"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	if raw.Labels == nil {
		// Set from the environment only.
		return nil
	}
	labels := map[string]string{}
	if err := mapstructure.WeakDecode(raw.Labels, &labels); err != nil {
		return fmt.Errorf("key \"labels\": %w", err)
	}
	c.Labels = labels
	return nil
}

// checkLabels checks the host's labels.
func (c *Config) checkLabels(bad func(key, format string, args ...any)) {
	if len(c.Labels) > MaxLabels {
		bad("labels", "%d labels are over the limit of %d", len(c.Labels), MaxLabels)
		return
	}
	keys := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := c.Labels[k]
		switch {
		case len(k) > 63 || !labelKeyRE.MatchString(k):
			bad("labels", "%q is not a label key (lower case letters, digits, '-', '_' and '.', at most 63, starting and ending with a letter or digit)", truncateKey(k))
		case len(v) > 63 || !labelValueRE.MatchString(v):
			bad("labels."+k, "%q is not a label value (letters, digits, '-', '_' and '.', at most 63, starting and ending with a letter or digit)", truncateKey(v))
		}
	}
}

// truncateKey cuts what an error quotes to 80 bytes.
func truncateKey(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
