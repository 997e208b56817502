#!/usr/bin/env bash
# The package test (`make test-package`, docs/install.md): builds the .deb
# and .rpm twice from this tree (a "previous" build with another version,
# and this one), checks the .rpm's listing, scripts and digests, then boots
# a fresh Debian root filesystem with systemd as PID 1 in a container on
# this machine's engine (the engine's socket mounted in it) and there:
#   0. runs a hostlet by hand, the binary of the previous .deb with its
#      default instance (the box's host name), on a pod of its own: a
#      hostlet that already manages this host;
#   1. installs the previous .deb: systemd-analyze verify accepts the unit,
#      the postinst enabled hostlet.service and did not start it; started
#      with the shipped config unchanged (same instance, an empty source,
#      prune off), hostlet syncs twice and the hand-run hostlet's
#      containers keep their IDs and StartedAt, with no container event;
#   2. points hostlet at a copy of the quickstart plus a Compose project
#      with include (an instance unique to the run) and starts it, as an
#      admin would: with a token file others can read the unit does not
#      start, and after chmod 600 it restarts by itself;
#   3. waits until the quickstart converges under the sandboxed unit; a
#      hostPath through a symlink in the host's /tmp is refused (the unit
#      shows hostlet the host's /tmp);
#   4. installs this build's .deb over it (its prerm and postinst do the
#      upgrade: try-restart), waits until the new hostlet has synced, and
#      checks that every container kept its ID and StartedAt and that the
#      engine saw no container created, started or stopped meanwhile;
#   5. removes the package: hostlet stops, the containers keep running,
#      the hand-run hostlet's too.
# Everything it made (container, pods, images, volumes, networks, files) is
# removed at the end. As root, with the engine and debootstrap; the Debian
# root filesystem is built once and cached (/var/cache/hostlet-engines,
# about 3 minutes); a run then takes about 3.5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

die() { echo "test-package: FAIL: $*" >&2; exit 1; }
step() { printf 'test-package: [%4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
T0=$(date +%s)

[ "$(id -u)" = 0 ] || die "run as root (it installs rpm if missing and runs debootstrap)"
docker info >/dev/null 2>&1 || die "no Docker engine (make deps starts one)"
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
command -v rpm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q rpm >/dev/null
command -v jq >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q jq >/dev/null

ID=$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
INSTANCE=test-pkg-$ID
# The box's host name, so the default instance of a hostlet in it: that
# of the hand-run hostlet (step 0) and of the shipped config.
HOSTINST=test-pkghost-$ID
# The work folder has the same path on the host and in the container: the
# engine mounts the files volumes hostlet writes under stateDir by their
# host path. Not under /tmp: the box's /tmp is a tmpfs of its own.
WORK=/var/lib/hostlet-pkgtest/$INSTANCE
BOX=hostlet-pkgtest-$ID
DEMO_MADE=no

cleanup() {
	local rc=$?
	set +e
	if [ "$rc" != 0 ] && docker inspect "$BOX" >/dev/null 2>&1; then
		echo "test-package: the box's last hostlet log lines:" >&2
		docker exec "$BOX" journalctl -u hostlet.service -u hostlet-hand.service --no-pager -n 40 >&2
		echo "test-package: its hostlet status:" >&2
		local st
		st=$(docker exec "$BOX" hostlet status --config /etc/hostlet/hostlet.yaml -o json 2>&1)
		jq -c 'del(.machine)' <<<"$st" >&2 2>/dev/null || echo "$st" >&2
	fi
	docker rm -f "$BOX" >/dev/null 2>&1
	local i inst left
	for i in "$INSTANCE" "$HOSTINST"; do
		docker ps -aq --filter "label=io.hostlet.instance=$i" | xargs -r docker rm -f >/dev/null
		docker volume ls -q --filter "label=io.hostlet.instance=$i" | xargs -r docker volume rm -f >/dev/null
		docker network ls -q --filter "label=io.hostlet.instance=$i" | xargs -r docker network rm >/dev/null
		docker images -q --filter "label=io.hostlet.instance=$i" | sort -u | xargs -r docker rmi -f >/dev/null
		# The pause images of both builds: hostlet-pause:<binary>-<instance>.
		inst=$(printf %s "$i" | sha256sum | cut -c1-8)
		docker images hostlet-pause --format '{{.Repository}}:{{.Tag}}' | grep -- "-$inst\$" | xargs -r docker rmi -f >/dev/null
	done
	[ "$DEMO_MADE" = no ] || docker rmi hostlet-demo:v1 >/dev/null
	rm -rf "$WORK"
	rmdir /var/lib/hostlet-pkgtest 2>/dev/null
	for i in "$INSTANCE" "$HOSTINST"; do
		left=$(docker ps -aq --filter "label=io.hostlet.instance=$i" | wc -l)
		[ "$left" = 0 ] || { echo "test-package: $left containers of $i left behind" >&2; rc=1; }
	done
	exit $rc
}
trap cleanup EXIT
mkdir -p "$WORK"

# box runs a command in the booted Debian.
box() { docker exec -i "$BOX" "$@"; }

# wait_for DESC SECONDS CMD...: runs CMD every second until it succeeds;
# fails the test after SECONDS.
wait_for() {
	local desc=$1 secs=$2
	shift 2
	local deadline=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || die "$desc: not within ${secs}s"
		sleep 1
	done
}

# --- packages -----------------------------------------------------------
VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
step "building the previous and the new packages ($VERSION)"
make -s package GO="$GO" BIN="$WORK/old/bin" DIST="$WORK/old" VERSION="$VERSION-prev" PKGVERSION="0.0.0~git0.prev" >/dev/null
make -s package GO="$GO" BIN="$WORK/new/bin" DIST="$WORK/new" VERSION="$VERSION" >/dev/null
OLD_DEB=$(ls "$WORK"/old/*.deb)
NEW_DEB=$(ls "$WORK"/new/*.deb)
NEW_RPM=$(ls "$WORK"/new/*.rpm)
rm -rf "$WORK/old/bin" "$WORK/new/bin"

step "checking the rpm: $(basename "$NEW_RPM")"
rpm -K --nosignature "$NEW_RPM" >/dev/null || die "rpm -K: digests do not match"
want='/etc/hostlet
/etc/hostlet/hostlet.yaml
/etc/hostlet/manifests
/usr/bin/hostlet
/usr/bin/hostlet-compose
/usr/bin/hostlet-images
/usr/bin/hostlet-notify
/usr/bin/hostlet-sops
/usr/lib/systemd/system/hostlet.service'
got=$(rpm -qpl "$NEW_RPM" | sort)
[ "$got" = "$want" ] || die "rpm -qpl lists:
$got
want:
$want"
[ "$(rpm -qp --configfiles "$NEW_RPM")" = /etc/hostlet/hostlet.yaml ] || die "the rpm's config files are not /etc/hostlet/hostlet.yaml alone"
rpm -qp --scripts "$NEW_RPM" | grep -q 'systemctl try-restart hostlet.service' || die "the rpm's %post does not try-restart hostlet"
! rpm -qp --scripts "$NEW_RPM" | grep -Eq '^[[:space:]]*systemctl (start|restart|enable --now)' || die "an rpm script starts hostlet"

# --- a fresh Debian with systemd ------------------------------------------
# bookworm: this machine's cgroups are v1, and systemd 256 and later (trixie
# has 257) no longer boot as PID 1 on v1.
SUITE=bookworm
INCLUDE=systemd,systemd-sysv
CACHE=/var/cache/hostlet-engines
KEY=$(printf '%s\n' "$SUITE" "$INCLUDE" minbase | sha256sum | cut -c1-12)
ROOTFS=hostlet-pkgtest-rootfs:$SUITE-$KEY
mkdir -p "$CACHE"
(
	flock 9
	docker image inspect "$ROOTFS" >/dev/null 2>&1 && exit 0
	tar=$CACHE/pkgtest-$SUITE-$KEY.tar
	if [ ! -f "$tar" ]; then
		step "debootstrap $SUITE (once; cached in $tar)"
		rm -rf "$tar.d"
		debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$tar.d" >"$CACHE/pkgtest-$SUITE-$KEY.log" 2>&1 ||
			die "debootstrap failed: $CACHE/pkgtest-$SUITE-$KEY.log"
		tar -C "$tar.d" -cf "$tar.part" . && mv "$tar.part" "$tar" && rm -rf "$tar.d"
	fi
	docker import "$tar" "$ROOTFS" >/dev/null
) 9>"$CACHE/pkgtest.lock"

if ! docker image inspect hostlet-demo:v1 >/dev/null 2>&1; then
	DEMO_MADE=yes
	"$GO" run ./internal/tools/demoimage -tag hostlet-demo:v1 2>/dev/null
fi
cp -a examples/quickstart/manifests "$WORK/manifests"
# A Compose project that includes a file: hostlet-compose loads it through
# a private folder of links under /tmp, the host's under the unit.
mkdir "$WORK/manifests/inc"
cat >"$WORK/manifests/inc/compose.yaml" <<'EOF'
name: pkgtest-include
include: [extra.yaml]
EOF
cat >"$WORK/manifests/inc/extra.yaml" <<'EOF'
services:
  echo:
    image: hostlet-demo:v1
    pull_policy: never
    restart: unless-stopped
EOF
# The hand-run hostlet's pod (step 0).
mkdir "$WORK/hand-manifests"
cat >"$WORK/hand-manifests/handmade.yaml" <<'EOF'
version: v1beta1
id: handmade
containers:
  - name: web
    image: hostlet-demo:v1
EOF

step "booting $SUITE with systemd ($BOX)"
# What runs an init system in a container on these machines (no
# --privileged: the bounding set lacks CAP_SYS_RESOURCE).
docker run -d --name "$BOX" --hostname "$HOSTINST" \
	--cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined \
	--security-opt apparmor=unconfined --security-opt systempaths=unconfined \
	--cgroupns=private --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
	-v /var/run/docker.sock:/run/docker.sock -v "$WORK:$WORK" \
	-e container=docker --stop-signal SIGRTMIN+3 "$ROOTFS" /sbin/init >/dev/null
wait_for "systemd up" 60 sh -c "docker exec $BOX systemctl is-system-running | grep -Eq '^(running|degraded)$'"

# containers_of INSTANCE: ID, name, StartedAt and restart count of every
# container of INSTANCE, sorted.
containers_of() {
	docker ps -aq --filter "label=io.hostlet.instance=$1" |
		xargs -r docker inspect -f '{{.Id}} {{.Name}} {{.State.StartedAt}} {{.RestartCount}} {{.State.Status}}' | sort
}
# no_events SINCE INSTANCE: fails naming them if the engine saw a container
# of INSTANCE created, started, stopped or removed since SINCE.
no_events() {
	local events
	events=$(docker events --since "$1" --until "$(date +%s.%N)" --filter "label=io.hostlet.instance=$2" \
		--filter event=create --filter event=start --filter event=die --filter event=destroy --format '{{.Action}} {{.Actor.Attributes.name}}')
	[ -z "$events" ] || die "$3: the engine saw containers of $2 change: $events"
}

# --- 0. a hostlet that already manages this host ------------------------------
step "a hostlet run by hand from $(basename "$OLD_DEB"), instance $HOSTINST (the host's name)"
box dpkg-deb -x "$OLD_DEB" /opt/hostlet-hand
mkdir -m 700 "$WORK/hand-state"
box sh -c 'cat >/etc/hostlet-hand.yaml' <<EOF
stateDir: $WORK/hand-state
listen: 127.0.0.1:10261
sync: {interval: 2s}
sources:
  - {name: hand, type: file, path: $WORK/hand-manifests, interval: 2s}
EOF
box sh -c 'cat >/etc/systemd/system/hostlet-hand.service' <<'EOF'
[Service]
ExecStart=/opt/hostlet-hand/usr/bin/hostlet run --config /etc/hostlet-hand.yaml
EOF
box systemctl daemon-reload
box systemctl start hostlet-hand.service
hand_status() { box /opt/hostlet-hand/usr/bin/hostlet status --config /etc/hostlet-hand.yaml -o json 2>/dev/null; }
hand_running() {
	hand_status | jq -e --arg h "$HOSTINST" '.hostname == $h and .lastSync.error == "" and (.pods | length) == 1
		and all(.pods[]; .phase == "Running" and all(.containers[]; .state == "running"))'
}
wait_for "the hand-run hostlet's pod running" 120 hand_running
hand_before=$(containers_of "$HOSTINST")
[ -n "$hand_before" ] || die "the hand-run hostlet made no container"

# --- 1. install --------------------------------------------------------------
step "dpkg -i $(basename "$OLD_DEB") next to it"
# To the nanosecond: the hand-run hostlet may have started its container
# in this same second.
since=$(date +%s.%N)
out=$(box dpkg -i "$OLD_DEB")
grep -q 'hostlet: enabled, not started. Edit /etc/hostlet/hostlet.yaml' <<<"$out" || die "the postinst did not say it left hostlet stopped: $out"
verify=$(box systemd-analyze verify /usr/lib/systemd/system/hostlet.service 2>&1) ||
	die "systemd-analyze verify: $verify"
[ -z "$verify" ] || die "systemd-analyze verify warns: $verify"
[ "$(box systemctl is-enabled hostlet.service)" = enabled ] || die "the postinst did not enable hostlet.service"
box systemctl is-active hostlet.service >/dev/null 2>&1 && die "the postinst started hostlet.service"
[ "$(box systemctl show -p ActiveEnterTimestampMonotonic --value hostlet.service)" = 0 ] ||
	die "hostlet.service was started and stopped again by the install"
[ "$(containers_of "$HOSTINST")" = "$hand_before" ] || die "installing changed the hand-run hostlet's containers"
# The pods of the quickstart, as the installed hostlet counts them.
PODS=$(box hostlet validate "$WORK/manifests" | sed -n 's/^OK: \([0-9]*\) manifests.*/\1/p')
[ -n "$PODS" ] || die "hostlet validate of the quickstart failed in the installed package"

step "systemctl start hostlet with the shipped config unchanged (instance $HOSTINST, prune off)"
box systemctl start hostlet.service
# shipped_synced [START]: the packaged hostlet, with the shipped config, has
# finished a sync without error (another than the one started at START).
shipped_synced() {
	box hostlet status --config /etc/hostlet/hostlet.yaml -o json 2>/dev/null | jq -e --arg h "$HOSTINST" --arg s "${1:-}" '
		.hostname == $h and .lastSync.start != "0001-01-01T00:00:00Z" and .lastSync.start != $s
		and .lastSync.error == ""'
}
wait_for "the shipped config's first sync" 60 shipped_synced
synced=$(box hostlet status --config /etc/hostlet/hostlet.yaml -o json | jq -r .lastSync.start)
wait_for "the shipped config's second sync" 60 shipped_synced "$synced"
pid=$(box systemctl show -p MainPID --value hostlet.service)
# LimitNOFILE=65536, soft and hard, or the box's own hard limit where that
# is lower (systemd cannot raise it without CAP_SYS_RESOURCE): not the
# soft 1024 the system call filter would leave.
nofile=$(box sh -c "grep '^Max open files' /proc/$pid/limits" | awk '{print $4, $5}')
box_max=$(box sh -c "grep '^Max open files' /proc/1/limits" | awk '{print $5}')
NOFILE=$((box_max < 65536 ? box_max : 65536))
[ "$nofile" = "$NOFILE $NOFILE" ] || die "hostlet's open files limit (soft, hard) is $nofile, want $NOFILE $NOFILE (LimitNOFILE)"
box systemctl stop hostlet.service
[ "$(containers_of "$HOSTINST")" = "$hand_before" ] || die "the shipped config changed the hand-run hostlet's containers:
before:
$hand_before
after:
$(containers_of "$HOSTINST")"
no_events "$since" "$HOSTINST" "install and the shipped config"
step "the hand-run hostlet's $(echo "$hand_before" | wc -l) container(s) untouched by the install and two syncs of the shipped config; open files $nofile"

# --- 2. the config; a token others can read -----------------------------------
step "configuring the quickstart (instance $INSTANCE); a token file others can read"
mkdir -m 700 "$WORK/state"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
chmod 644 "$WORK/token"
box sh -c 'cat >/etc/hostlet/hostlet.yaml' <<EOF
instance: $INSTANCE
hostname: $INSTANCE
stateDir: $WORK/state
tokenFile: $WORK/token
hostPathAllow: [/tmp/pkgtest-share]
sync: {interval: 2s}
sources:
  - {name: local, type: file, path: $WORK/manifests, interval: 2s}
EOF
# stateDir outside /var/lib/hostlet: the drop-in docs/install.md shows.
box mkdir -p /etc/systemd/system/hostlet.service.d
box sh -c "printf '[Service]\nReadWritePaths=$WORK/state\n' >/etc/systemd/system/hostlet.service.d/statedir.conf"
box systemctl daemon-reload
box systemctl start hostlet.service || true
wait_for "hostlet refusing the token file" 30 sh -c "docker exec $BOX journalctl -u hostlet.service --no-pager | grep -q 'refusing to start: tokenFile $WORK/token has mode 0644'"
chmod 600 "$WORK/token"
step "chmod 600: the unit restarts hostlet by itself"

# --- 3. converge -----------------------------------------------------------
status() { box hostlet status --config /etc/hostlet/hostlet.yaml -o json 2>/dev/null; }
# converged VERSION: hostlet VERSION answers, its last sync went through,
# and every manifest of the quickstart runs, all its containers running.
converged() {
	status | jq -e --arg v "$1" --argjson n "$PODS" '
		.version == $v and .lastSync.error == "" and (.pods | length) == $n and (.rejected | length) == 0
		and all(.pods[]; .phase == "Running" and (.containers | length) > 0 and all(.containers[]; .state == "running"))'
}
wait_for "the quickstart converged under hostlet $VERSION-prev" 300 converged "$VERSION-prev"
step "converged: $(status | jq -r '[.pods[].id] | join(", ")')"

# A hostPath through a symlink in the host's /tmp (the box's here) that
# leads out of hostPathAllow is refused: hostlet sees that /tmp as the
# engine does.
box sh -c 'mkdir -p /tmp/pkgtest-share && ln -s /run /tmp/pkgtest-share/link'
cat >"$WORK/manifests/tmplink.yaml" <<'EOF'
version: v1beta1
id: tmplink
volumes:
  - {name: share, hostPath: /tmp/pkgtest-share/link}
containers:
  - name: c
    image: hostlet-demo:v1
    volumeMounts:
      - {name: share, mountPath: /share}
EOF
tmplink_refused() {
	status | jq -e '.rejected | any(.id == "tmplink" and any(.reasons[];
		contains("\"/tmp/pkgtest-share/link\" resolves to \"/run\", which is not under any of hostPathAllow")))'
}
wait_for "the hostPath through /tmp/pkgtest-share/link refused" 30 tmplink_refused
rm "$WORK/manifests/tmplink.yaml"
wait_for "the refused manifest gone" 30 converged "$VERSION-prev"
[ -z "$(docker ps -aq --filter label=io.hostlet.pod=tmplink --filter "label=io.hostlet.instance=$INSTANCE")" ] || die "a container was made for the refused pod"
step "a hostPath through a symlink in /tmp, leading out of hostPathAllow, refused under the unit"

# containers: ID, name, StartedAt and restart count of every container of
# the instance, sorted.
containers() { containers_of "$INSTANCE"; }
before=$(containers)
[ "$(echo "$before" | wc -l)" -gt "$PODS" ] || die "only these containers run: $before"

# --- 4. upgrade --------------------------------------------------------------
pid_before=$(box systemctl show -p MainPID --value hostlet.service)
since=$(date +%s)
step "dpkg -i $(basename "$NEW_DEB") over it (the prerm and postinst upgrade)"
box dpkg -i "$NEW_DEB" >/dev/null
pid_after=$(box systemctl show -p MainPID --value hostlet.service)
[ "$pid_after" != "$pid_before" ] && [ "$pid_after" != 0 ] || die "hostlet was not restarted by the upgrade (MainPID $pid_before, then $pid_after)"
[ "$(box readlink "/proc/$pid_after/exe")" = /usr/bin/hostlet ] || die "the running hostlet is not the installed binary"
wait_for "the quickstart converged under hostlet $VERSION" 120 converged "$VERSION"
# One more full sync of the new hostlet after that: anything it would
# recreate, it has.
synced=$(status | jq -r .lastSync.start)
wait_for "another sync" 30 sh -c "docker exec $BOX hostlet status --config /etc/hostlet/hostlet.yaml -o json | jq -e --arg s '$synced' '.lastSync.start != \$s and .lastSync.error == \"\"'"
after=$(containers)
[ "$before" = "$after" ] || die "the upgrade changed containers:
before:
$before
after:
$after"
no_events "$since" "$INSTANCE" "the upgrade"
step "upgraded in $(($(date +%s) - since))s: $(echo "$after" | wc -l) containers, every ID and StartedAt the same, no container event"

# --- 5. remove -------------------------------------------------------------
box dpkg -r hostlet >/dev/null
box systemctl is-active hostlet.service >/dev/null 2>&1 && die "hostlet still runs after dpkg -r"
[ "$(containers)" = "$after" ] || die "dpkg -r changed containers"
[ "$(containers_of "$HOSTINST")" = "$hand_before" ] || die "the hand-run hostlet's containers changed during the test"
step "dpkg -r: hostlet stopped and disabled, its containers still run, the hand-run hostlet's too"
step "PASS"
