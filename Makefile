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

.PHONY: all build deps deps-test run test test-short bench bench-smoke faults lint fuzz fuzz-smoke clean

all: build

# bin/hostlet-compose renders Compose projects for hostlet (docs/compose.md)
# and bin/hostlet-notify sends its chat notifications (docs/updates.md,
# "Notifications"); hostlet finds them beside itself.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o bin/hostlet ./cmd/hostlet
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/hostlet-compose ./cmd/hostlet-compose
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/hostlet-notify ./cmd/hostlet-notify

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

test: deps-test
	$(GO) test $(TESTFLAGS) ./...

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
faults: build deps
	$(GO) test -tags faults -v -count=1 -timeout 20m ./test/faults -args -hostlet $(CURDIR)/bin/hostlet $(FAULTSFLAGS)

lint:
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt: files above are not formatted" && exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

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
# 6 minutes on 2 cores, the instrumented builds included).
FUZZSMOKETIME ?= 6s
fuzz-smoke:
	@GO=$(GO) scripts/fuzz.sh $(FUZZSMOKETIME) '$(FUZZ)'

clean:
	rm -rf bin .hostlet-state
