# hostlet — see README.md. `make run` and `make test` do all the set-up on a
# fresh Debian machine with Go (as root they install docker.io and git and
# start dockerd; elsewhere they say what is missing).

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Build tags of the binary (docs/performance.md, "Memory"): grpcnotrace
# leaves out grpc's golang.org/x/net/trace (its /debug/requests pages,
# which hostlet never serves); nethttpomithttp2 leaves out net/http's
# HTTP/2 (hostlet's API is plain HTTP, and git and HTTP sources speak
# HTTP/1.1). Add pprof for a binary that serves net/http/pprof on
# $$HOSTLET_PPROF: make build TAGS=grpcnotrace,nethttpomithttp2,pprof.
TAGS    ?= grpcnotrace,nethttpomithttp2
GO      ?= go
# The race detector is on in `make test`; CI runs exactly this.
TESTFLAGS ?= -race -timeout 30m
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build deps deps-test run test test-short bench bench-smoke faults lint fuzz fuzz-smoke clean package image test-package test-engines sidebyside

all: build

# bin/hostlet-compose renders Compose projects for hostlet
# (docs/compose.md), bin/hostlet-notify sends its chat notifications (docs/updates.md,
# "Notifications"), bin/hostlet-images is `hostlet images`
# (docs/image-updates.md) and bin/hostlet-sops decrypts SOPS files
# (docs/secrets.md; a module of its own, as it links sops's cloud
# clients); hostlet finds them beside itself. BIN=DIR writes them
# elsewhere.
BIN ?= bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/hostlet ./cmd/hostlet
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/hostlet-compose ./cmd/hostlet-compose
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/hostlet-notify ./cmd/hostlet-notify
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/hostlet-images ./cmd/hostlet-images
	cd cmd/hostlet-sops && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(abspath $(BIN))/hostlet-sops .

# The .deb and .rpm packages (docs/install.md) in $(DIST): the binaries,
# the systemd unit, /etc/hostlet/hostlet.yaml and the maintainer scripts
# of packaging/, put together by internal/tools/mkpackage (nfpm, a module
# of its own). The package version comes from VERSION (a tag vX.Y.Z, else
# the commit's time and hash); PKGVERSION=V sets it.
DIST ?= dist
PKGVERSION ?=
COMMITDATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null)
package: build
	cd internal/tools/mkpackage && $(GO) run . -version '$(VERSION)' -date '$(COMMITDATE)' -pkgversion '$(PKGVERSION)' \
		-bin $(abspath $(BIN)) -packaging $(CURDIR)/packaging -out $(abspath $(DIST))

# hostlet's own image, hostlet:$(VERSION), loaded into the local engine
# (internal/tools/hostletimage): the three binaries and the CA bundle.
IMAGE ?= hostlet:$(VERSION)
image: build
	$(GO) run ./internal/tools/hostletimage -tag '$(IMAGE)' -bin $(BIN)

# The package test (scripts/test-package.sh): the .deb installed into a
# fresh Debian root filesystem booted with systemd, hostlet converging
# the quickstart under its unit, an upgrade that restarts no container;
# the .rpm checked. As root, with the engine: about 2.5 minutes (3 more
# the first time, to debootstrap the root filesystem).
test-package: deps
	@GO=$(GO) scripts/test-package.sh

# The engine matrix (scripts/test-engines.sh, docs/engines.md): the
# engine-facing integration tests against Docker 26, Docker 28, Docker 28
# with Docker 29's defaults and Podman 5, each engine in a container of its
# own built from Debian's packages (debootstrap, cached); one table,
# package x engine. ENGINES='docker29 podman5' runs some columns,
# ENGINE_PARALLEL=1 runs them at once. As root.
ENGINES ?=
ENGINE_PARALLEL ?= 0
test-engines: deps
	@ENGINE_PARALLEL=$(ENGINE_PARALLEL) scripts/test-engines.sh $(ENGINES)

deps:
	@scripts/ensure-deps.sh

# What the tests need besides: Chromium for the fleet page's browser test.
deps-test:
	@scripts/ensure-deps.sh --test

# The quickstart: builds hostlet and the demo image, starts dockerd if
# needed, runs hostlet on examples/quickstart. Offline.
run: build deps
	$(GO) run ./internal/tools/demoimage -tag hostlet-demo:v1
	./bin/hostlet run --config examples/quickstart/hostlet.yaml

# cmd/hostlet-sops is a module of its own: its tests run after the tree's.
test: deps-test
	$(GO) test $(TESTFLAGS) ./...
	cd cmd/hostlet-sops && $(GO) test $(TESTFLAGS) ./...

# Unit tests only (no Docker needed).
test-short:
	$(GO) test -short ./...

# The scenario driver (bench/, docs/performance.md): hostlet side by side
# with the Docker floor (measured at 1, 4 and 8 pods at once; ratios to the
# fastest) and a compose-on-cron loop, N = 1, 10, 50, 200, single and pair
# pods (two app containers and hostlet's infra container), three
# repetitions; waits for a quiet machine (then about 7 h on 2 vCPUs), writes
# bench/results/<date>.json. Then the Go benchmarks.
bench: build deps
	@bench/ensure-compose.sh
	$(GO) run ./bench -hostlet bin/hostlet
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The same scenario at N = 2 (both shapes), once, short idle windows (CI,
# < 3 min warm).
bench-smoke: build deps
	@bench/ensure-compose.sh
	$(GO) run ./bench -smoke -hostlet bin/hostlet

# The fleet simulation (internal/fleet/sim, docs/scale.md): 100, 300 and
# 1,000 in-process agents (each its own etcd client, published source,
# merger and Syncer on the fake engine) watching one etcd in a process of
# its own; a publish, in transactions of 128 then in one Put per host; a
# table of convergence times, etcd's CPU and RSS, bytes per host and per
# release; < 1 min. FLEETFLAGS='-fleet.n 1000 -fleet.share 50' and the
# like (-cpuprofile F, -fleet.etcdprofile F) pass on.
.PHONY: bench-fleet
bench-fleet:
	$(GO) test -tags fleetsim -run '^TestFleetSim$$' -count=1 -v -timeout 20m ./internal/fleet/sim/ $(FLEETFLAGS)

# The fault suite (test/faults, docs/reliability.md, "Fault suite"), as
# root: bin/hostlet as a subprocess against a dockerd of its own, etcd,
# git smart HTTP, HTTP, file and push sources; every fault class injected
# three times at random points; one line per class and a summary; < 15 min.
# Repeat a run with make faults FAULTSFLAGS='-seed N' (also -reps, -classes).
# The ten most used stacks of the real Compose corpus started with Debian's
# docker-compose and with hostlet, what docker inspect shows compared
# (docs/compose.md, "Side by side"); about 3 minutes.
sidebyside: build deps
	@bench/ensure-compose.sh
	$(GO) test -tags sidebyside -count=1 -timeout 20m -run TestComposeSideBySide ./cmd/hostlet

faults: build deps
	$(GO) test -tags faults -v -count=1 -timeout 20m ./test/faults -args -hostlet $(CURDIR)/bin/hostlet $(FAULTSFLAGS)

lint:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt: files above are not formatted" && exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd cmd/hostlet-sops && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

# Every fuzz target of the tree (every parser of outside input has one),
# one after the other, each for FUZZTIME; FUZZTIME=10m for the long runs
# of docs/reliability.md. Targets are found by scripts/fuzz.sh (each
# `func FuzzXxx(f *testing.F)` in a _test.go file), so a new one runs
# without a change here; FUZZ=REGEXP keeps the targets whose
# package.FuzzXxx name matches (FUZZ=validate.FuzzDecodeValidate).
# A failing input is written to the package's testdata/fuzz/FuzzXxx/.
FUZZTIME ?= 3m
FUZZ ?=
fuzz:
	@GO=$(GO) scripts/fuzz.sh $(FUZZTIME) '$(FUZZ)'

# The same targets for a short fixed budget each, as CI runs them (about
# 6 minutes on 2 cores, the instrumented builds included). A new
# interesting input is minimized for at most 1 s, not Go's 60 s: minimizing
# a large YAML input (a Kubernetes object) would take the whole budget.
FUZZSMOKETIME ?= 6s
fuzz-smoke:
	@GO=$(GO) FUZZMINIMIZETIME=1s scripts/fuzz.sh $(FUZZSMOKETIME) '$(FUZZ)'

clean:
	rm -rf bin dist .hostlet-state
