#!/usr/bin/env bash
# Makes sure what hostlet's quickstart and tests need is here: git and a
# running Docker engine, and with --test also Chromium (the fleet page is
# tested in a real headless browser), tzdata (time zones), age and
# ssh-keygen (keys for the secrets' tests), the sops CLI (go install),
# and docker-registry (the image updater's registries).
# On Debian as root it installs what
# is missing (docker.io, git, chromium) and starts dockerd; elsewhere it
# says exactly what is missing and how to get it. Idempotent.
set -euo pipefail

log() { printf 'ensure-deps: %s\n' "$*" >&2; }
is_root() { [ "$(id -u)" = 0 ]; }
have_apt() { command -v apt-get >/dev/null 2>&1; }

missing=()
command -v git >/dev/null 2>&1 || missing+=(git)
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
if [ "${1:-}" = --test ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
  # The maintenance windows' tests read time zones from the system.
  [ -e /usr/share/zoneinfo/Europe/Berlin ] || missing+=(tzdata)
  # The secrets' tests make age keys and SSH keys, and encrypt with sops.
  command -v age-keygen >/dev/null 2>&1 || missing+=(age)
  command -v ssh-keygen >/dev/null 2>&1 || missing+=(openssh-client)
  # The image updater's tests run a real registry (distribution 2.8).
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
fi

if [ ${#missing[@]} -gt 0 ]; then
  # unique
  pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  if is_root && have_apt; then
    log "installing: $pkgs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq $pkgs >/dev/null
  else
    log "missing: $pkgs"
    log "install them (on Debian/Ubuntu: sudo apt-get install -y $pkgs) and run this again"
    exit 1
  fi
fi

# sops has no Debian package: the tests use the CLI of the version the
# helper links, built from the Go module proxy into Go's bin folder.
if [ "${1:-}" = --test ]; then
  GO=${GO:-go}
  gobin=$("$GO" env GOPATH 2>/dev/null)/bin
  if ! command -v sops >/dev/null 2>&1 && [ ! -x "$gobin/sops" ]; then
    log "installing sops v3.13.3 into $gobin (go install)"
    if ! CGO_ENABLED=0 "$GO" install github.com/getsops/sops/v3/cmd/sops@v3.13.3; then
      log "go install github.com/getsops/sops/v3/cmd/sops@v3.13.3 failed: the secrets' tests need it"
      exit 1
    fi
  fi
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! is_root; then
  log "the Docker engine is not running, or you may not use it."
  log "start it (sudo systemctl start docker, or sudo dockerd &) and add yourself to the docker group, or run as root"
  exit 1
fi

log "starting dockerd (log: /var/log/hostlet-dockerd.log)"
if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
  systemctl start docker || true
fi
if ! docker info >/dev/null 2>&1; then
  nohup dockerd >/var/log/hostlet-dockerd.log 2>&1 &
fi
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "dockerd is up"
    exit 0
  fi
  sleep 1
done
log "dockerd did not come up within 60 s; see /var/log/hostlet-dockerd.log:"
tail -20 /var/log/hostlet-dockerd.log >&2 || true
exit 1
