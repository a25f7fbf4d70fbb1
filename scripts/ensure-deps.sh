#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to run choreo and its tests:
# OS packages (nats-server, redis-server, kubectl, openssl, …) and npm deps.
# Idempotent and quiet when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nats-server >/dev/null || need+=(nats-server)
command -v redis-server >/dev/null || need+=(redis-server)
command -v kubectl >/dev/null || need+=(kubectl)
command -v openssl >/dev/null || need+=(openssl)
command -v ip >/dev/null || need+=(iproute2)
command -v pkill >/dev/null || need+=(procps)
command -v curl >/dev/null || need+=(curl)

if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "choreo: missing ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "choreo: installing ${need[*]}" >&2
  # Debian starts daemons on install; choreo runs its own, so forbid that.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if ((created_policy)); then rm -f "$policy"; fi
fi

if [[ ! -d node_modules || package.json -nt node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "choreo: installing npm dependencies" >&2
  # npm ci refuses npm 11 lock files that omit optional native bindings
  # (unrs-resolver); install keeps the lock as the source of versions.
  npm install --no-audit --no-fund --loglevel=error >&2
fi
