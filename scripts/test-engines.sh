#!/bin/sh
# test-engines.sh runs hostlet's engine-facing integration tests against
# each engine of the support matrix (docs/engines.md), each engine in a
# container of its own on this machine's engine, and prints one table:
# package × engine, pass or fail. Fails when any cell fails.
#
#   scripts/test-engines.sh [COLUMN...]     (default: every column)
#
# Columns:
#   docker26   Docker 26.1 (Debian 13), overlay2 image store
#   docker28   Docker 28.5 (Debian unstable), overlay2 image store
#   docker29   Docker 28.5 with Docker 29's defaults: the containerd image
#              store and DOCKER_MIN_API_VERSION=1.44
#   podman5    Podman 5.8 (Debian unstable) through its Docker-compatible
#              socket, runc, cgroupfs, no systemd
#
# Each engine's root filesystem is built once with debootstrap
# (--variant=minbase, from Debian's mirror: the only network it needs) and
# kept as a tar in $HOSTLET_ENGINE_CACHE (default /var/cache/hostlet-engines)
# and as the local image hostlet-engine-rootfs:<suite>-<hash>; a changed
# package list makes a new one. `scripts/test-engines.sh --clean` removes
# them. Everything else (the engine's container, its data root, the
# containers it ran) is removed when the column ends, passed or not.
#
# The tests run inside the engine's container with this machine's Go
# toolchain, module cache and build cache mounted (no network: GOPROXY=off),
# without the race detector (no C compiler in there), with the build tag
# enginematrix: it leaves out the image updater's end-to-end test, which
# needs Debian's docker-registry beside the engine and an engine that
# pushes to it over plain HTTP (Podman does not); it runs on the host's
# engine in `make test`. ENGINE_PKGS overrides
# the packages; ENGINE_TESTFLAGS adds go test flags (e.g. -run X);
# ENGINE_PARALLEL=1 runs the columns at once; ENGINE_COMMAND runs that
# shell command against each engine instead of the tests (its output in
# the column's log; e.g. the benchmarks of docs/performance.md). The
# Debian unstable columns have Debian's docker-compose (Compose v2, the
# bench's compose-up peer on Docker 28).
set -eu

REPO=${HOSTLET_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
CACHE=${HOSTLET_ENGINE_CACHE:-/var/cache/hostlet-engines}
PKGS=${ENGINE_PKGS:-"./runtime ./sync ./internal/agent ./internal/imagetar ./internal/cadvisor ./cmd/hostlet ./test/e2e/..."}
ALL_COLUMNS="docker26 docker28 docker29 podman5"
BASE_PKGS=ca-certificates,git,iptables,mount,procps,tzdata,runc,containerd,docker.io,docker-cli
RUN_ID=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
LOGS=${ENGINE_LOGS:-/tmp/hostlet-engines-$RUN_ID}

die() { echo "test-engines: $*" >&2; exit 1; }

if [ "${1:-}" = "--clean" ]; then
	docker images --format '{{.Repository}}:{{.Tag}}' hostlet-engine-rootfs | xargs -r docker rmi
	rm -rf "$CACHE"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "run as root: it runs engines in containers and debootstrap (missing: root)"
command -v docker >/dev/null || die "missing: docker (apt-get install docker.io)"
docker version >/dev/null 2>&1 || die "missing: a running dockerd (scripts/ensure-deps.sh starts one)"
if ! command -v debootstrap >/dev/null; then
	apt-get install -y debootstrap >/dev/null || die "missing: debootstrap (apt-get install debootstrap)"
fi
GOROOT=$(go env GOROOT) GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE)
# The secrets' tests make keys with age-keygen and encrypt with sops: the
# host's (scripts/ensure-deps.sh --test), both static binaries, are
# mounted into each column.
AGE_KEYGEN=$(command -v age-keygen) || die "missing: age-keygen (scripts/ensure-deps.sh --test)"
SOPS=$(command -v sops || echo "$(go env GOPATH)/bin/sops")
[ -x "$SOPS" ] || die "missing: sops (scripts/ensure-deps.sh --test)"

# suite_of and packages_of say what each column's root filesystem holds.
suite_of() {
	case $1 in
	docker26) echo trixie ;;
	docker28 | docker29 | podman5) echo sid ;;
	*) die "unknown column $1 (columns: $ALL_COLUMNS)" ;;
	esac
}
packages_of() {
	case $(suite_of "$1") in
	trixie) echo "$BASE_PKGS" ;;
	sid) echo "$BASE_PKGS,podman,netavark,aardvark-dns,conmon,catatonit,docker-compose" ;;
	esac
}

# rootfs_image prints the image holding the column's root filesystem,
# building the tar and importing it when they are missing.
rootfs_image() {
	suite=$(suite_of "$1") pkgs=$(packages_of "$1")
	hash=$(printf '%s %s' "$suite" "$pkgs" | sha256sum | cut -c1-12)
	image=hostlet-engine-rootfs:$suite-$hash tar=$CACHE/$suite-$hash.tar
	if docker image inspect "$image" >/dev/null 2>&1; then
		echo "$image"
		return
	fi
	mkdir -p "$CACHE"
	if [ ! -s "$tar" ]; then
		dir=$CACHE/$suite-$hash.tmp
		rm -rf "$dir"
		echo "test-engines: debootstrap $suite ($pkgs), a few minutes once" >&2
		debootstrap --variant=minbase --include="$pkgs" "$suite" "$dir" >"$CACHE/$suite-$hash.log" 2>&1 ||
			die "debootstrap $suite failed: see $CACHE/$suite-$hash.log"
		tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		rm -rf "$dir"
	fi
	docker import "$tar" "$image" >/dev/null || die "docker import $tar failed"
	echo "$image"
}

# engine_script prints the shell the engine's container runs: the engine's
# configuration, then the engine in the foreground.
engine_script() {
	case $1 in
	docker26 | docker28)
		echo "exec dockerd --data-root /var/lib/docker --cgroup-parent /$2 >/var/log/engine.log 2>&1" ;;
	docker29)
		echo "mkdir -p /etc/docker && echo '{\"features\":{\"containerd-snapshotter\":true}}' >/etc/docker/daemon.json &&
DOCKER_MIN_API_VERSION=1.44 exec dockerd --data-root /var/lib/docker --cgroup-parent /$2 >/var/log/engine.log 2>&1" ;;
	podman5)
		echo "mkdir -p /etc/containers /run/podman && printf '%s\n' '[engine]' 'cgroup_manager = \"cgroupfs\"' 'events_logger = \"file\"' 'runtime = \"runc\"' '[network]' 'network_backend = \"netavark\"' 'firewall_driver = \"iptables\"' >/etc/containers/containers.conf &&
printf '%s\n' '[[registry]]' 'location = \"127.0.0.1\"' 'insecure = true' >/etc/containers/registries.conf &&
printf '%s\n' '[storage]' 'driver = \"overlay\"' 'graphroot = \"/var/lib/docker/storage\"' 'runroot = \"/run/containers/storage\"' >/etc/containers/storage.conf &&
exec podman system service --time=0 unix:///run/podman/podman.sock >/var/log/engine.log 2>&1" ;;
	esac
}

docker_host_of() {
	case $1 in
	podman5) echo unix:///run/podman/podman.sock ;;
	*) echo unix:///var/run/docker.sock ;;
	esac
}

# run_column starts the column's engine, runs the tests against it, writes
# the go test output to $LOGS/<column>.log and removes the engine.
run_column() {
	col=$1 image=$(rootfs_image "$1")
	name=hostlet-engine-$col-$RUN_ID data=$CACHE/run/$col-$RUN_ID
	mkdir -p "$data" "$LOGS"
	# The cleanup runs whatever happens (dash runs no EXIT trap on a
	# signal: those exit, which runs it); the engine's data root is on
	# this machine's disk so overlay2 and the containerd snapshotter work.
	podman_cgroups_before=$(podman_cgroups)
	trap 'remove_engine "$name" "$data"' EXIT
	trap 'exit 130' INT TERM HUP
	# IPv6 on in the engine's namespace, as on a host: Docker disables it
	# in a container by default, and netavark cannot then give a
	# dual-stack network its addresses.
	docker run -d --name "$name" --hostname "$col" --init \
		--sysctl net.ipv6.conf.all.disable_ipv6=0 --sysctl net.ipv6.conf.default.disable_ipv6=0 \
		--cap-add ALL --cap-drop SYS_RESOURCE \
		--security-opt seccomp=unconfined --security-opt apparmor=unconfined \
		--security-opt systempaths=unconfined --device-cgroup-rule 'a *:* rwm' \
		-v /sys/fs/cgroup:/sys/fs/cgroup --tmpfs /run --tmpfs /tmp:exec \
		-v "$data:/var/lib/docker" -v "$REPO:$REPO" \
		-v "$GOROOT:$GOROOT:ro" -v "$GOMODCACHE:$GOMODCACHE:ro" -v "$GOCACHE:$GOCACHE" \
		-v "$AGE_KEYGEN:/usr/local/bin/age-keygen:ro" -v "$SOPS:/usr/local/bin/sops:ro" \
		"$image" sh -c "$(engine_script "$col" "$name")" >/dev/null
	host=$(docker_host_of "$col")
	deadline=$(($(date +%s) + 120))
	until docker exec "$name" docker -H "$host" version >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || {
			docker exec "$name" tail -n 30 /var/log/engine.log >&2
			die "$col: the engine did not answer within 120 s"
		}
		sleep 1
	done
	version=$(docker exec "$name" docker -H "$host" version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null)
	echo "test-engines: $col: engine $version; go test $PKGS" >&2
	# shellcheck disable=SC2086
	docker exec -w "$REPO" -e DOCKER_HOST="$host" -e PATH="$GOROOT/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		-e GOCACHE="$GOCACHE" -e GOMODCACHE="$GOMODCACHE" -e GOPROXY=off -e GOFLAGS=-mod=readonly \
		-e GOTOOLCHAIN=local -e CGO_ENABLED=0 -e HOME=/root -e TMPDIR=/tmp \
		"$name" sh -c "${ENGINE_COMMAND:-go test -count=1 -timeout 30m -tags enginematrix ${ENGINE_TESTFLAGS:-} $PKGS}" >"$LOGS/$col.log" 2>&1 || true
	echo "$version" >"$LOGS/$col.version"
	docker exec "$name" tail -n 200 /var/log/engine.log >"$LOGS/$col.engine.log" 2>&1 || true
	remove_engine "$name" "$data"
	trap - EXIT INT TERM HUP
}

# podman_cgroups lists the cgroups Podman's containers had (cgroupfs puts
# them under /libpod_parent whatever the engine's own cgroup).
podman_cgroups() {
	for d in /sys/fs/cgroup/*/libpod_parent/libpod-*; do [ -d "$d" ] && echo "$d"; done
	return 0
}

# remove_engine removes an engine's container, its data root and the
# cgroups its containers left (children first).
remove_engine() {
	docker rm -f "$1" >/dev/null 2>&1 || true
	rm -rf "$2"
	# (A cgroup still busy stays: under set -e a failed rmdir would end
	# the column before its time is written.)
	for d in /sys/fs/cgroup/*/"$1"; do
		[ -d "$d" ] && { find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
	done
	# The Podman containers' cgroups this column made (empty once the
	# engine is gone; those that were there before stay). Only a Podman
	# column: another column's list would hold a Podman column's running
	# at once.
	case $1 in hostlet-engine-podman*) ;; *) return 0 ;; esac
	for d in $(podman_cgroups); do
		case "
${podman_cgroups_before:-}
" in *"
$d
"*) ;; *) rmdir "$d" 2>/dev/null || true ;; esac
	done
	return 0
}

# cell prints a package's result in a column's log: ok, FAIL or "-".
cell() {
	pkg=github.com/hostlet/hostlet/${2#./}
	awk -v p="$pkg" '($1 == "ok" || $1 == "FAIL") && $2 == p { print $1; found = 1; exit } END { if (!found) print "-" }' "$LOGS/$1.log"
}

# timed_column runs a column and writes how long it took.
timed_column() {
	col_start=$(date +%s)
	(run_column "$1") || echo "test-engines: $1: the column's shell failed" >&2
	echo "$(($(date +%s) - col_start))" >"$LOGS/$1.seconds"
}

columns=${*:-$ALL_COLUMNS}
start=$(date +%s)
# A signal ends every column's subshell (each removes its engine) and
# then this shell.
trap 'trap - INT TERM HUP; kill 0 2>/dev/null; exit 130' INT TERM HUP
for col in $columns; do
	suite_of "$col" >/dev/null
	rootfs_image "$col" >/dev/null
done
# ENGINE_PARALLEL=1 runs the columns at once (each engine its own
# container), one go test package at a time in each: two packages at once
# per engine starve the engines on two cores.
if [ "${ENGINE_PARALLEL:-0}" = 1 ]; then
	ENGINE_TESTFLAGS="-p 1 ${ENGINE_TESTFLAGS:-}"
	for col in $columns; do timed_column "$col" & done
	wait
else
	for col in $columns; do timed_column "$col"; done
fi

# The table: one row per package go test reported, one column per engine.
# shellcheck disable=SC2046
pkgs=$(cat $(for c in $columns; do echo "$LOGS/$c.log"; done) 2>/dev/null |
	awk '($1 == "ok" || $1 == "FAIL") && $2 ~ /^github.com\/hostlet\/hostlet\// { sub("github.com/hostlet/hostlet/", "", $2); print $2 }' | sort -u)
failed=0
printf '%-24s' package
for col in $columns; do printf ' %-10s' "$col"; done
echo
for p in $pkgs; do
	printf '%-24s' "$p"
	for col in $columns; do
		c=$(cell "$col" "./$p")
		[ "$c" = ok ] || failed=1
		printf ' %-10s' "$c"
	done
	echo
done
printf '%-24s' seconds
for col in $columns; do printf ' %-10s' "$(cat "$LOGS/$col.seconds" 2>/dev/null || echo -)"; done
echo
for col in $columns; do
	echo "$col: $(cat "$LOGS/$col.version" 2>/dev/null); log $LOGS/$col.log"
	grep -q '^\(ok\|FAIL\)' "$LOGS/$col.log" || { echo "$col: no package ran" >&2; failed=1; }
	grep -E '^(--- FAIL|FAIL|panic:)' "$LOGS/$col.log" | head -40
done
echo "test-engines: $(($(date +%s) - start)) s in all"
exit $failed
