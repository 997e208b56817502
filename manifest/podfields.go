package manifest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The fields of the running pod that a container's env values, command
// and args may hold, as Kubernetes' downward API names them: each stands
// in a value as its token (FieldToken), which the host replaces when it
// creates the container.
const (
	// FieldPodIP is the pod's address: its infra container's (a pod
	// reading it in a network of its own always has one), the host's on
	// the host's network.
	FieldPodIP = "status.podIP"
	// FieldHostIP is the host's address: the source address of its
	// default route.
	FieldHostIP = "status.hostIP"
)

// FieldTokenPrefix starts the token of a field of the running pod:
// "{{hostlet-field:status.podIP}}".
const FieldTokenPrefix = "{{hostlet-field:"

// fieldToken matches a token; its group is the field's path.
var fieldToken = regexp.MustCompile(`\{\{hostlet-field:([^{}]*)\}\}`)

// FieldToken returns the token of field path.
func FieldToken(path string) string { return FieldTokenPrefix + path + "}}" }

// fieldTokenAt matches the paths of a manifest's string fields
// (StringFields) that may hold field tokens: containers' env values,
// commands and args.
var fieldTokenAt = regexp.MustCompile(`^(containers|initContainers)\[[0-9]+\]\.(env\[[0-9]+\]\.value|command\[[0-9]+\]|args\[[0-9]+\])$`)

// FieldTokenErrors returns, for each string field of m holding a field
// token, what is wrong with it (by field path): a token in another field,
// one that is not whole, or one naming a field hostlet does not give.
func FieldTokenErrors(m Manifest) map[string]string {
	var out map[string]string
	for field, value := range StringFields(m) {
		problem := FieldTokenProblem(value)
		if problem == "" && strings.Contains(value, FieldTokenPrefix) && !fieldTokenAt.MatchString(field) {
			problem = "holds a " + FieldTokenPrefix + " token, which only env values, command and args may"
		}
		if problem != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[field] = problem
		}
	}
	return out
}

// ReadsField reports whether container c reads field path (env values,
// command, args).
func ReadsField(c Container, path string) bool {
	token := FieldToken(path)
	has := func(s string) bool { return strings.Contains(s, token) }
	return slices.ContainsFunc(c.Env, func(e EnvVar) bool { return has(e.Value) }) ||
		slices.ContainsFunc(c.Command, has) || slices.ContainsFunc(c.Args, has)
}

// ExpandFields replaces each field token of s by value's answer for its
// path; the first error of value stops it.
func ExpandFields(s string, value func(path string) (string, error)) (string, error) {
	if !strings.Contains(s, FieldTokenPrefix) {
		return s, nil
	}
	var err error
	out := fieldToken.ReplaceAllStringFunc(s, func(tok string) string {
		if err != nil {
			return ""
		}
		v, verr := value(fieldToken.FindStringSubmatch(tok)[1])
		err = verr
		return v
	})
	return out, err
}

// FieldTokenProblem says what is wrong with the field tokens of s ("" for
// nothing): one that is not whole, or names a field hostlet does not give.
func FieldTokenProblem(s string) string {
	if !strings.Contains(s, FieldTokenPrefix) {
		return ""
	}
	if n := strings.Count(s, FieldTokenPrefix); n != len(fieldToken.FindAllStringIndex(s, -1)) {
		return fmt.Sprintf("holds %s without its closing }}", FieldTokenPrefix)
	}
	for _, m := range fieldToken.FindAllStringSubmatch(s, -1) {
		if m[1] != FieldPodIP && m[1] != FieldHostIP {
			return fmt.Sprintf("holds a %s token of a field hostlet does not give (%s and %s are)", FieldTokenPrefix, FieldPodIP, FieldHostIP)
		}
	}
	return ""
}
