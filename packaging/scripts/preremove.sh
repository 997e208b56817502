#!/bin/sh
# hostlet's pre-removal script (deb prerm, rpm %preun). On removal it
# disables and stops hostlet; its containers keep running (remove them
# first with an empty source, or with docker rm). On an upgrade it does
# nothing: the new package's postinstall restarts hostlet.
#
# deb: $1 is "remove" on removal, "upgrade" on an upgrade. rpm: $1 is 0 on
# removal, 1 or more on an upgrade.
set -e

case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now hostlet.service || true
	elif command -v systemctl >/dev/null 2>&1; then
		systemctl disable hostlet.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
