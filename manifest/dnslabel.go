package manifest

import "regexp"

// dnsLabelRE is an RFC 1123 DNS label's shape (its length aside).
var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// IsDNSLabel reports whether s is an RFC 1123 DNS label: lowercase
// letters, digits and '-', starting and ending with a letter or digit, at
// most 63 characters (a pod's alias on a network, a hostname's label).
func IsDNSLabel(s string) bool {
	return len(s) <= 63 && dnsLabelRE.MatchString(s)
}
