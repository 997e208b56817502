#!/usr/bin/env bash
# Removes containers, volumes and networks that earlier test runs left on this engine
# (a killed test run cannot clean up, and restart policies keep its
# containers alive). Test runs use instances named "test-*"; nothing else is
# touched. Run it before a test run, never during one.
set -euo pipefail
docker ps -a --filter label=io.hostlet.managed=true --format '{{.ID}} {{.Label "io.hostlet.instance"}}' |
  awk '$2 ~ /^test-/ {print $1}' | xargs -r docker rm -f >/dev/null
docker volume ls --filter label=io.hostlet.managed=true --format '{{.Name}} {{.Label "io.hostlet.instance"}}' |
  awk '$2 ~ /^test-/ {print $1}' | xargs -r docker volume rm -f >/dev/null
docker network ls --filter label=io.hostlet.managed=true --format '{{.Name}} {{.Label "io.hostlet.instance"}}' |
  awk '$2 ~ /^test-/ {print $1}' | xargs -r docker network rm >/dev/null
docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^hostlet-test-' | xargs -r docker rmi -f >/dev/null 2>&1 || true
# Images test runs built (hostlet-build/..., labelled with their instance).
docker images --filter label=io.hostlet.managed=true --format '{{.ID}} {{.Label "io.hostlet.instance"}}' 2>/dev/null |
  awk '$2 ~ /^test-/ {print $1}' | sort -u | xargs -r docker rmi -f >/dev/null 2>&1 || true
