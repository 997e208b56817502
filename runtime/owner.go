package runtime

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	gosync "sync"
)

// ContainerName is the Docker name hostlet gives the container of slot in
// pod with spec hash, made by hostlet instance: unique per instance, pod,
// slot and spec. The scheme is unchanged since hostlet's first version (a
// golden test pins it): every container an earlier hostlet made carries
// the name this gives for its labels, so an upgrade adopts them all.
func ContainerName(instance, pod, slot, hash string) string {
	return "hostlet_" + pod + "_" + slot + "_" + shortSum(instance, pod, slot, hash)
}

func shortSum(parts ...string) string {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(s[:])[:10]
}

// Proven reports whether a container of that name (with or without
// Docker's leading '/') and labels is one hostlet instance made, for a
// container hostlet names itself: Owner{Instance: instance}.Proves.
func Proven(instance, name string, labels map[string]string) bool {
	return Owner{Instance: instance}.Proves(name, "", labels)
}

// Owner is what proves a container one hostlet instance's: the instance,
// and the host's owner key that signs the names manifests choose.
type Owner struct {
	Instance string
	// Key signs and checks LabelNameProof; without it no container under
	// a name a manifest chose is proven.
	Key []byte
}

// Proves reports whether a container of that name (with or without
// Docker's leading '/'), made from the image of ID imageID, and labels is
// one the instance made: it carries
// io.hostlet.managed=true, the instance's io.hostlet.instance, a
// non-empty pod and slot, and either its name is exactly the name hostlet
// gives those labels at create (ContainerName), or its name is the one
// its manifest chose (LabelName) and LabelNameProof is that name's proof
// for that image under the owner's key (NameProof).
//
// Labels alone prove nothing: a Dockerfile's or a base image's labels end
// up on every container made from the image (the builder's own step
// containers too), and anyone who can run a container can set any label.
// The name hostlet gives is what they cannot choose: the classic
// builder's containers get names the engine picks, a container made from
// an image gets the name its creator gives, and another instance's
// hostlet derives its names from its own instance. A name a manifest
// chose (container_name: nextcloud) is one anybody may choose too, so it
// proves only with a MAC made with the host's key, which no other creator
// holds, over the image the container was made from: a `docker commit`
// of a named container copies its labels into an image of another ID, so
// a container made from that image by hand is not proven. A container that labels itself as a pod's without
// either is not hostlet's: it is reported, never adopted, started,
// stopped or removed.
func (o Owner) Proves(name, imageID string, labels map[string]string) bool {
	pod, slot := labels[LabelPod], labels[LabelContainer]
	if o.Instance == "" || pod == "" || slot == "" ||
		labels[LabelManaged] != "true" || labels[LabelInstance] != o.Instance {
		return false
	}
	name = strings.TrimPrefix(name, "/")
	if name == ContainerName(o.Instance, pod, slot, labels[LabelHash]) {
		return true
	}
	chosen := labels[LabelName]
	return chosen != "" && name == chosen && o.signed(chosen, imageID, labels)
}

// signed reports whether labels carry the proof of the chosen name for a
// container of image imageID (the labels' pod and slot), under the
// owner's key.
func (o Owner) signed(chosen, imageID string, labels map[string]string) bool {
	return len(o.Key) > 0 && imageID != "" &&
		hmac.Equal([]byte(labels[LabelNameProof]), []byte(NameProof(o.Key, o.Instance, labels[LabelPod], labels[LabelContainer], chosen, imageID)))
}

// NameProof is the LabelNameProof of the container of slot in pod that
// instance names name, made from the image of ID imageID (with or
// without its "sha256:"): an HMAC-SHA256 under the host's owner key, 128
// bits in hex.
func NameProof(key []byte, instance, pod, slot, name, imageID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join([]string{"hostlet container name", instance, pod, slot, name, strings.TrimPrefix(imageID, "sha256:")}, "\x00")))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// provenName returns the name among names (a list entry's: the
// container's own, and the "/linker/alias" names of legacy links to it)
// that proves the container of image imageID with labels the owner's,
// and whether there is one.
func (o Owner) provenName(names []string, imageID string, labels map[string]string) (string, bool) {
	for _, n := range names {
		if o.Proves(n, imageID, labels) {
			return strings.TrimPrefix(n, "/"), true
		}
	}
	return "", false
}

// maxReported bounds the container IDs an unprovenReport remembers having
// warned about.
const maxReported = 1024

// unprovenReport reports the containers that carry this instance's labels
// but are not proven to be hostlet's (see Proven): a warning once per
// container ID, the number the last list found, and the engine events
// dropped for them. Memory is bounded: it remembers the IDs of the last
// list's unproven containers, and at most maxReported IDs of events'. It
// is safe for concurrent use.
type unprovenReport struct {
	mu gosync.Mutex
	// listed are the unproven containers of the last list.
	listed map[string]bool
	// evented are the containers whose events were dropped, in the order
	// first seen (the oldest forgotten first past maxReported).
	evented map[string]bool
	order   []string
	events  uint64
}

// listedUnproven records the unproven containers one list found (ID to
// name and labels) and warns about those the previous list did not.
func (r *unprovenReport) listedUnproven(log *slog.Logger, found map[string]Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := make(map[string]bool, len(found))
	for id, c := range found {
		now[id] = true
		if !r.listed[id] {
			log.Warn("a container carries this instance's labels but is not one hostlet made (neither the name hostlet gives them nor a chosen name it signed); left alone",
				"id", id, "name", c.Name, "image", c.Image, "pod", c.Pod(), "container", c.Slot())
		}
	}
	r.listed = now
}

// droppedEvent counts an event of an unproven container and reports
// whether it is the first of that container (within the IDs remembered).
func (r *unprovenReport) droppedEvent(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if r.evented[id] {
		return false
	}
	if r.evented == nil {
		r.evented = map[string]bool{}
	}
	if len(r.order) >= maxReported {
		delete(r.evented, r.order[0])
		r.order = r.order[1:]
	}
	r.evented[id] = true
	r.order = append(r.order, id)
	return true
}

// counts returns the unproven containers of the last list and the events
// dropped so far.
func (r *unprovenReport) counts() (listed int, events uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.listed), r.events
}

// Unproven returns the number of containers the last List found carrying
// this instance's labels without being proven hostlet's (see Proven):
// left alone, never returned. hostlet_unproven_containers in /metrics.
func (d *Docker) Unproven() int {
	n, _ := d.unproven.counts()
	return n
}

// UnprovenEvents returns the number of engine events dropped because
// their container is not proven hostlet's (see Proven).
// hostlet_unproven_container_events_dropped_total in /metrics.
func (d *Docker) UnprovenEvents() uint64 {
	_, n := d.unproven.counts()
	return n
}
