#!/usr/bin/env bash
# Makes sure docker-compose (the compose-on-cron baseline of bench/) is
# here: as root with apt it installs Debian's docker-compose (1.29 on
# Debian 12; Compose v2 from Debian 13 on, as in scripts/test-engines.sh's
# Debian unstable columns, which have it), elsewhere it says how. Any
# docker-compose already here is kept, whatever its version. Idempotent;
# used by `make bench` and `make bench-smoke` after scripts/ensure-deps.sh
# (git, a running Docker engine).
set -euo pipefail
command -v docker-compose >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  printf 'bench: installing docker-compose\n' >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker-compose >/dev/null
  exit 0
fi
printf 'bench: docker-compose is missing (on Debian/Ubuntu: sudo apt-get install -y docker-compose)\n' >&2
exit 1
