// Package manifest defines hostlet's pod manifest format (v1beta1), decodes
// it from YAML or JSON strictly, fills in defaults and computes the versioned
// spec hash that decides when a container must be recreated.
package manifest
