#!/usr/bin/env bash
# Host setup for building and running the image with podman (Debian bookworm, as root): installs
# podman, mmdebstrap and runc with apt when missing and writes /etc/containers/containers.conf with
# the two settings these VMs need. Idempotent: a second run changes nothing.
#
# - crun (podman's default runtime) refuses a hybrid cgroup layout (cgroup2 holding the hugetlb
#   controller): runc works.
# - Without CAP_SYS_RESOURCE podman cannot raise RLIMIT_NOFILE to its default of 1048576: ask for
#   what `ulimit -Hn` allows.
set -euo pipefail

missing=()
for tool in podman mmdebstrap runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    podman mmdebstrap runc containernetworking-plugins uidmap >/dev/null
fi

CONF=/etc/containers/containers.conf
MARK='# written by skills-changefeed scripts/container/setup-podman.sh'
if ! grep -qF "$MARK" "$CONF" 2>/dev/null; then
  [ -f "$CONF" ] && cp "$CONF" "$CONF.before-changefeed"
  NOFILE=$(ulimit -Hn)
  [ "$NOFILE" = unlimited ] && NOFILE=1048576
  mkdir -p "$(dirname "$CONF")"
  cat >"$CONF" <<CONF
$MARK
# crun refuses this VM's hybrid cgroup layout: runc. Podman's default ulimits exceed what the VM
# allows (hard nofile $NOFILE): ask for that.
[containers]
default_ulimits = ["nofile=$NOFILE:$NOFILE", "nproc=32768:32768"]

[engine]
runtime = "runc"
CONF
  echo "== wrote $CONF"
fi
podman info --format 'podman {{.Version.Version}}: runtime {{.Host.OCIRuntime.Name}}, storage {{.Store.GraphDriverName}}, cgroups {{.Host.CgroupsVersion}}'
