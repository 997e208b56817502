package manifest

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// KubeObject is a Kubernetes object found in a source (a document with
// apiVersion and kind), as decoded: not a pod yet. The objects of one
// source are translated together (workloads into pods, ConfigMaps,
// Secrets and PersistentVolumeClaims looked up by them) once the whole
// source is read; see package manifest/kube.
type KubeObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name and Namespace are the object's metadata.name and
	// metadata.namespace as written ("" when missing or not a string).
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Raw is the object's JSON.
	Raw json.RawMessage `json:"raw"`
	// Sealed: the object was read from a SOPS file (set by a file or git
	// source's reader, never by decoding): only then may a Secret's values
	// be encrypted.
	Sealed bool `json:"sealed,omitempty"`
}

// String names the object as kubectl does: "Deployment web" (with its
// namespace when it has one: "Deployment shop/web").
func (o *KubeObject) String() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	return o.Kind + " " + name
}

// kubeHead is what decoding reads of a document first to tell a
// Kubernetes object from a hostlet manifest.
type kubeHead struct {
	APIVersion any `json:"apiVersion"`
	Kind       any `json:"kind"`
	Metadata   any `json:"metadata"`
}

// kubeObjectOf returns raw as a Kubernetes object when it has both
// apiVersion and kind (of any type: a wrong one is the translation's
// error to report), else nil. A "v1 List" is returned too; its items are
// the caller's to unpack (kubeListItems).
func kubeObjectOf(raw []byte) *KubeObject {
	var head kubeHead
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &head); err != nil {
		return nil
	}
	if head.APIVersion == nil || head.Kind == nil {
		return nil
	}
	o := &KubeObject{APIVersion: text(head.APIVersion), Kind: text(head.Kind), Raw: raw}
	if meta, ok := head.Metadata.(map[string]any); ok {
		o.Name, _ = meta["name"].(string)
		o.Namespace, _ = meta["namespace"].(string)
	}
	return o
}

// kubeListItems returns the items of a "v1 List" object (ok), or an
// error when they are not a list of mappings; o may be nil (no object).
func kubeListItems(o *KubeObject) (items [][]byte, ok bool, err error) {
	if o == nil || o.APIVersion != "v1" || o.Kind != "List" {
		return nil, false, nil
	}
	var list struct {
		Items []jsonRaw `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(o.Raw, &list); err != nil {
		return nil, true, fmt.Errorf("a List's items: %w", err)
	}
	for _, it := range list.Items {
		items = append(items, it)
	}
	return items, true, nil
}

// text is v as written when it is a string, else its JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
