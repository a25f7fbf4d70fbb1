#!/usr/bin/env bash
# Builds the offline base image (default local/debian:bookworm) from Debian
# packages: debootstrap --variant=minbase bookworm → docker import. No
# container registry is needed; apt-get works inside `docker build` FROM it.
# Skipped (silently) when the image is already present.
#
#   infra/images/base/build.sh [TAG]        (default: $CHOREO_BASE_IMAGE or local/debian:bookworm)
#   CHOREO_DEBIAN_MIRROR=http://…           (default: http://deb.debian.org/debian)
set -euo pipefail

tag=${1:-${CHOREO_BASE_IMAGE:-local/debian:bookworm}}
suite=bookworm
mirror=${CHOREO_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$tag" >/dev/null 2>&1; then exit 0; fi

if ! command -v debootstrap >/dev/null; then
  echo "choreo: debootstrap is missing (scripts/ensure-deps.sh installs it)" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "choreo: building $tag needs root (debootstrap)" >&2
  exit 1
fi

root=$(mktemp -d /var/tmp/choreo-base.XXXXXX)
cleanup() {
  # debootstrap mounts proc/sys/devpts inside the target; never rm -rf across them.
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(findmnt -rn -o TARGET | grep -F "$root/" | sort -r)
  if ! findmnt -rn -o TARGET | grep -qF "$root/"; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT

echo "choreo: building $tag (debootstrap $suite, ~1 min)" >&2
started=$SECONDS
if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1; then
  tail -n 20 "$root.log" >&2
  rm -f "$root.log"
  exit 1
fi
rm -f "$root.log"

# Smaller and reproducible-ish: no downloaded packages, no apt lists, no logs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/tmp/* || true
# Like Debian's official images: keep docs/locales out of later apt installs.
cat >"$root/etc/dpkg/dpkg.cfg.d/choreo-nodoc" <<'CFG'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/info/*
CFG
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/90choreo-norecommends"

tar --numeric-owner -C "$root" -c . | docker import \
  -c 'CMD ["/bin/bash"]' \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  - "$tag" >/dev/null
echo "choreo: built $tag in $((SECONDS - started)) s" >&2
