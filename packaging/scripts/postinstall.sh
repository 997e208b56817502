#!/bin/sh
# hostlet's post-install script (deb postinst, rpm %post). A first install
# enables hostlet but never starts it: the shipped config names this
# host's name as the instance, and a hostlet already managing this host
# under that instance (one installed by hand, the OCI image, a purged
# package's) must not meet a second one before the admin has set the
# sources. The admin starts it after editing /etc/hostlet/hostlet.yaml; it
# starts by itself at the next boot. An upgrade restarts hostlet only if it
# was running (try-restart). Neither stops a container: a stopped hostlet
# leaves them running and the next one adopts them.
#
# deb: $1 is "configure" and $2 the version upgraded from ("" on a first
# install). rpm: $1 is 1 on a first install, 2 or more on an upgrade.
set -e

upgrade=no
case "$1" in
configure) [ -z "$2" ] || upgrade=yes ;;
1) ;;
[0-9]*) upgrade=yes ;;
*) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	if [ "$upgrade" = yes ]; then
		systemctl try-restart hostlet.service ||
			echo "hostlet: restart failed: see journalctl -u hostlet" >&2
	else
		systemctl enable hostlet.service
	fi
elif [ "$upgrade" = no ] && command -v systemctl >/dev/null 2>&1; then
	# systemd installed but not running (a chroot, an image build):
	# enable only.
	systemctl enable hostlet.service >/dev/null 2>&1 || true
fi
if [ "$upgrade" = no ]; then
	echo "hostlet: enabled, not started. Edit /etc/hostlet/hostlet.yaml (sources, instance, sync.prune), then: systemctl start hostlet"
fi
exit 0
