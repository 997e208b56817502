package manifest

// ImagePolicy says which newer tags of a container's image `hostlet
// images` may move it to (native `imagePolicy`, Compose
// `x-hostlet-image-policy`). It is read by the updater only: no part of
// any spec hash, so adding, changing or dropping a policy recreates
// nothing. The imagepolicy package checks and applies it.
type ImagePolicy struct {
	// Semver is a constraint on the version ("~1.4", "^1", ">=2.0 <3").
	Semver string `json:"semver,omitempty"`
	// Filter is a regular expression the whole tag must match; a named
	// group `version` is the part compared as a version.
	Filter string `json:"filter,omitempty"`
	// AllowPrerelease lets 2.0.0-rc.1 be chosen.
	AllowPrerelease bool `json:"allowPrerelease,omitempty"`
	// Pin is "tag" (default) or "digest": name:tag@sha256:... is written.
	Pin string `json:"pin,omitempty"`
}
