#!/bin/sh
# hostlet's post-removal script (deb postrm, rpm %postun): systemd forgets
# the removed unit. stateDir (/var/lib/hostlet) is kept, purge or not: the
# files volumes of containers that still run are mounted from it.
#
# deb: $1 is "remove" or "purge" on removal. rpm: $1 is 0 on removal.
set -e

case "$1" in
remove | purge | 0)
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	;;
esac
exit 0
