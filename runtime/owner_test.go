package runtime_test

import (
	"strings"
	"testing"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// TestContainerNamesAreUnchanged pins the names hostlet gives containers:
// they are the proof of ownership (hruntime.Proven), so a container an
// earlier hostlet made is adopted only while the scheme stays byte for
// byte the same.
func TestContainerNamesAreUnchanged(t *testing.T) {
	for _, tc := range []struct{ instance, pod, slot, hash, want string }{
		{"host-a", "web", "app", "v1:0123456789abcdef", "hostlet_web_app_0f94c7b0e8"},
		{"host-a", "web", hruntime.InfraName, "v1:fedcba", "hostlet_web_POD_bca2c16d84"},
		{"node1", "my-pod", "sidecar", "v1:aa", "hostlet_my-pod_sidecar_fda0b89438"},
	} {
		if got := hruntime.ContainerName(tc.instance, tc.pod, tc.slot, tc.hash); got != tc.want {
			t.Errorf("ContainerName(%q, %q, %q, %q) = %q, want %q", tc.instance, tc.pod, tc.slot, tc.hash, got, tc.want)
		}
	}
}

func ownLabels(instance, pod, slot, hash string) map[string]string {
	return map[string]string{
		hruntime.LabelManaged: "true", hruntime.LabelInstance: instance,
		hruntime.LabelPod: pod, hruntime.LabelContainer: slot, hruntime.LabelHash: hash,
	}
}

// TestOnlyTheNameHostletGivesProvesAContainerHostlets: labels alone (a
// Dockerfile's, a base image's, a forger's) never make a container
// hostlet's; the name hostlet gives those labels at create does.
func TestOnlyTheNameHostletGivesProvesAContainerHostlets(t *testing.T) {
	const inst, hash = "host-a", "v1:0123456789abcdef"
	right := hruntime.ContainerName(inst, "web", "app", hash)
	with := func(k, v string) map[string]string {
		l := ownLabels(inst, "web", "app", hash)
		if v == "<none>" {
			delete(l, k)
		} else {
			l[k] = v
		}
		return l
	}
	for _, tc := range []struct {
		what     string
		instance string
		name     string
		labels   map[string]string
		want     bool
	}{
		{"the name hostlet gives", inst, right, ownLabels(inst, "web", "app", hash), true},
		{"as the engine lists it, with a leading slash", inst, "/" + right, ownLabels(inst, "web", "app", hash), true},
		{"an engine-chosen name (a builder's step container)", inst, "eager_turing", ownLabels(inst, "web", "app", hash), false},
		{"no name", inst, "", ownLabels(inst, "web", "app", hash), false},
		{"a name with two leading slashes", inst, "//" + right, ownLabels(inst, "web", "app", hash), false},
		{"a legacy link alias", inst, "/other/" + right, ownLabels(inst, "web", "app", hash), false},
		{"the name for another spec hash", inst, hruntime.ContainerName(inst, "web", "app", "v1:other"), ownLabels(inst, "web", "app", hash), false},
		{"the name another instance gives", inst, hruntime.ContainerName("host-b", "web", "app", hash), ownLabels(inst, "web", "app", hash), false},
		{"another instance's container", inst, hruntime.ContainerName("host-b", "web", "app", hash), ownLabels("host-b", "web", "app", hash), false},
		{"another instance's labels under our name", inst, right, with(hruntime.LabelInstance, "host-b"), false},
		{"an empty pod", inst, hruntime.ContainerName(inst, "", "app", hash), ownLabels(inst, "", "app", hash), false},
		{"no pod label", inst, hruntime.ContainerName(inst, "", "app", hash), with(hruntime.LabelPod, "<none>"), false},
		{"an empty slot", inst, hruntime.ContainerName(inst, "web", "", hash), ownLabels(inst, "web", "", hash), false},
		{"not managed", inst, right, with(hruntime.LabelManaged, "<none>"), false},
		{"managed=false", inst, right, with(hruntime.LabelManaged, "false"), false},
		{"a pod label not the name's", inst, right, with(hruntime.LabelPod, "victim"), false},
		{"a slot label not the name's", inst, right, with(hruntime.LabelContainer, "db"), false},
		{"a hash label not the name's", inst, right, with(hruntime.LabelHash, "v1:forged"), false},
		{"no labels", inst, right, nil, false},
		{"an empty instance asked", "", hruntime.ContainerName("", "web", "app", hash), ownLabels("", "web", "app", hash), false},
	} {
		if got := hruntime.Proven(tc.instance, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s: Proven(%q, %q, %v) = %v, want %v", tc.what, tc.instance, tc.name, tc.labels, got, tc.want)
		}
	}
}

// FuzzProven: whatever the engine reports (names and labels are anyone's
// input), Proven never panics and holds only for a name that is exactly
// the one hostlet gives the labels, of a pod and slot, managed, of the
// instance asked about.
func FuzzProven(f *testing.F) {
	const hash = "v1:0123456789abcdef"
	f.Add("host-a", hruntime.ContainerName("host-a", "web", "app", hash), "true", "host-a", "web", "app", hash)
	f.Add("host-a", "/"+hruntime.ContainerName("host-a", "web", "app", hash), "true", "host-a", "web", "app", hash)
	f.Add("host-a", "eager_turing", "true", "host-a", "web", "app", hash)
	f.Add("host-a", hruntime.ContainerName("host-a", "", "", ""), "true", "host-a", "", "", "")
	f.Add("", hruntime.ContainerName("", "", "", ""), "true", "", "", "", "")
	f.Add("host-a", "/other/alias", "true", "host-a", "web", "app", hash)
	f.Add("host-a", "hostlet_web_app_\x00", "true", "host-a", "web\x00app", "", "")
	f.Add("host-a", "/", "TRUE", "host-a", "..", "/", "\x1b[2J")
	f.Add("h", strings.Repeat("/", 300), "true", "h", strings.Repeat("p", 1<<12), "s", "")
	f.Fuzz(func(t *testing.T, instance, name, managed, labelInstance, pod, slot, hash string) {
		labels := map[string]string{
			hruntime.LabelManaged: managed, hruntime.LabelInstance: labelInstance,
			hruntime.LabelPod: pod, hruntime.LabelContainer: slot, hruntime.LabelHash: hash,
		}
		if !hruntime.Proven(instance, name, labels) {
			return
		}
		if instance == "" || pod == "" || slot == "" || managed != "true" || labelInstance != instance ||
			strings.TrimPrefix(name, "/") != hruntime.ContainerName(instance, pod, slot, hash) {
			t.Errorf("Proven(%q, %q, %v) holds", instance, name, labels)
		}
	})
}

// TestAChosenNameProvesOnlyWithTheOwnersKey: a container under the name
// its manifest chose (container_name) is hostlet's only when it carries
// that name's proof, for the image it was made from, under the host's
// owner key; labels that claim the name, a proof for another name, pod,
// slot, instance or image, or another host's key prove nothing.
func TestAChosenNameProvesOnlyWithTheOwnersKey(t *testing.T) {
	const inst, hash, img = "host-a", "v1:0123456789abcdef", "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	key, otherKey := []byte("owner key of host a"), []byte("owner key of host b")
	owner := hruntime.Owner{Instance: inst, Key: key}
	signed := func(name string, edits ...func(map[string]string)) map[string]string {
		l := ownLabels(inst, "web", "app", hash)
		l[hruntime.LabelName] = name
		l[hruntime.LabelNameProof] = hruntime.NameProof(key, inst, "web", "app", name, img)
		for _, e := range edits {
			e(l)
		}
		return l
	}
	set := func(k, v string) func(map[string]string) { return func(l map[string]string) { l[k] = v } }
	for _, tc := range []struct {
		what   string
		owner  hruntime.Owner
		name   string
		image  string
		labels map[string]string
		want   bool
	}{
		{"the chosen name, signed", owner, "nextcloud", img, signed("nextcloud"), true},
		{"as the engine lists it", owner, "/nextcloud", img, signed("nextcloud"), true},
		{"under its temporary name (the one hostlet gives)", owner, hruntime.ContainerName(inst, "web", "app", hash), img, signed("nextcloud"), true},
		{"another name than the one chosen", owner, "nextcloud2", img, signed("nextcloud"), false},
		{"the chosen name without a proof", owner, "nextcloud", img, signed("nextcloud", set(hruntime.LabelNameProof, "")), false},
		{"a proof made with another host's key", owner, "nextcloud", img, signed("nextcloud", set(hruntime.LabelNameProof, hruntime.NameProof(otherKey, inst, "web", "app", "nextcloud", img))), false},
		{"a proof for another name", owner, "db", img, signed("db", set(hruntime.LabelNameProof, hruntime.NameProof(key, inst, "web", "app", "nextcloud", img))), false},
		{"a proof for another pod", owner, "nextcloud", img, signed("nextcloud", set(hruntime.LabelPod, "victim")), false},
		{"a proof for another slot", owner, "nextcloud", img, signed("nextcloud", set(hruntime.LabelContainer, "db")), false},
		{"another instance asking with the same key", hruntime.Owner{Instance: "host-b", Key: key}, "nextcloud", img, signed("nextcloud", set(hruntime.LabelInstance, "host-b")), false},
		{"no owner key", hruntime.Owner{Instance: inst}, "nextcloud", img, signed("nextcloud"), false},
		{"not managed", owner, "nextcloud", img, signed("nextcloud", set(hruntime.LabelManaged, "false")), false},
		{"an empty chosen name", owner, "", img, signed(""), false},
		{"made from another image (a docker commit of it)", owner, "nextcloud", "sha256:2222222222222222222222222222222222222222222222222222222222222222", signed("nextcloud"), false},
		{"the image ID without its sha256:", owner, "nextcloud", strings.TrimPrefix(img, "sha256:"), signed("nextcloud"), true},
		{"no image ID (an event's)", owner, "nextcloud", "", signed("nextcloud"), false},
	} {
		if got := tc.owner.Proves(tc.name, tc.image, tc.labels); got != tc.want {
			t.Errorf("%s: Proves(%q) = %v, want %v", tc.what, tc.name, got, tc.want)
		}
	}
}

// FuzzOwnerProves: whatever the engine reports, a container under a name
// that is not the one hostlet gives is proven only with its chosen name,
// exactly, an image ID, and that name's proof for that image under the
// owner's key.
func FuzzOwnerProves(f *testing.F) {
	key := []byte("owner key")
	f.Add("host-a", "nextcloud", "nextcloud", hruntime.NameProof(key, "host-a", "web", "app", "nextcloud", "sha256:11"), "web", "app", "sha256:11")
	f.Add("host-a", "/nextcloud", "nextcloud", "", "web", "app", "")
	f.Add("host-a", "x", "y", "00", "", "", "11")
	f.Fuzz(func(t *testing.T, instance, name, chosen, proof, pod, slot, image string) {
		labels := ownLabels(instance, pod, slot, "v1:aa")
		labels[hruntime.LabelName], labels[hruntime.LabelNameProof] = chosen, proof
		if !(hruntime.Owner{Instance: instance, Key: key}).Proves(name, image, labels) {
			return
		}
		if strings.TrimPrefix(name, "/") == hruntime.ContainerName(instance, pod, slot, "v1:aa") {
			return
		}
		if chosen == "" || image == "" || strings.TrimPrefix(name, "/") != chosen || proof != hruntime.NameProof(key, instance, pod, slot, chosen, image) {
			t.Errorf("Proves(%q, %v) holds", name, labels)
		}
	})
}
