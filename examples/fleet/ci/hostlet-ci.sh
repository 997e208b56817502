#!/bin/sh
# CI for a fleet repo: validate every host's configuration and print the
# plan of this change for every host, against the base branch. No network:
# the git source is read from this checkout (--source fleet=REPO).
#
#   HOSTLET  the hostlet binary (default: hostlet on PATH)
#   REPO     the fleet checkout (default: the folder above this script)
#   BASE     the revision to compare with (default: origin/main)
#
# Exit: 0 when every host is valid (changes are fine: that is what a pull
# request is for), 1 when any host has an invalid or rejected manifest or an
# error.
set -eu
HOSTLET=${HOSTLET:-hostlet}
REPO=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
BASE=${BASE:-origin/main}

status=0
# The positional parameters collect "--config FILE" for every host (paths
# may hold spaces).
set --
for cfg in "$REPO"/hostlet/*.yaml; do
  host=$(basename "$cfg" .yaml)
  echo "== validate $host =="
  # Secrets are SOPS-encrypted (docs/secrets.md): a .env or a file under
  # a secrets/ folder left in plain text fails the check.
  "$HOSTLET" validate --config "$cfg" --source "fleet=$REPO" \
    --require-encrypted '*.env' --require-encrypted '*/secrets/*' || status=1
  set -- "$@" --config "$cfg"
done

echo
echo "== plan against $BASE =="
set +e
"$HOSTLET" diff "$@" --source "fleet=$REPO" --against "ref:$BASE"
rc=$?
set -e
# diff: 0 no changes, 2 changes, 1 errors
[ "$rc" -eq 1 ] && status=1
exit "$status"
