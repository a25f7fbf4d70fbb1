#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to run choreo and its tests:
# OS packages (nats-server, redis-server, haproxy, kubectl, python3-kubernetes, openssl, the Docker engine
# and docker-compose, static busybox for the local images, iptables, conntrack, iproute2,
# debootstrap for the offline base image, …) and npm deps; then starts dockerd
# when it is installed but not running (scripts/ensure-docker.sh).
# Idempotent and quiet when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

npm_deps() {
  if [[ ! -d node_modules || package.json -nt node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "choreo: installing npm dependencies" >&2
    # npm ci refuses npm 11 lock files that omit optional native bindings
    # (unrs-resolver); install keeps the lock as the source of versions.
    npm install --no-audit --no-fund --loglevel=error >&2
  fi
}
# `--npm-only` (npm start): the npm dependencies alone, what `choreo` needs to run at all;
# `choreo up --install` then runs the rest of this script as its first step, with progress.
if [[ ${1:-} == --npm-only ]]; then
  npm_deps
  exit 0
fi

need=()
command -v nats-server >/dev/null || need+=(nats-server)
command -v redis-server >/dev/null || need+=(redis-server)
command -v kubectl >/dev/null || need+=(kubectl)
command -v openssl >/dev/null || need+=(openssl)
command -v ip >/dev/null || need+=(iproute2)
command -v pkill >/dev/null || need+=(procps)
command -v curl >/dev/null || need+=(curl)
command -v iptables >/dev/null || need+=(iptables)
# The service proxy forgets unanswered connections to an unreachable peer's endpoints (conntrack -D).
command -v conntrack >/dev/null || need+=(conntrack)
# One address in front of the api replicas (choreo up --ha, the HA compose file, the api-ha test).
command -v haproxy >/dev/null || need+=(haproxy)
# Prometheus (the prometheus integration test runs the binary itself; the monitoring compose profile builds its image from the package).
command -v prometheus >/dev/null || need+=(prometheus)
# The process runtime's choreo-exec (C, built on the machine, statically linked: libc6-dev has libc.a and the kernel headers).
{ command -v gcc >/dev/null && [[ $(dpkg-query -W -f='${Status}' libc6-dev 2>/dev/null) == "install ok installed" ]]; } || need+=(gcc libc6-dev)
# The engine with its recommends (apparmor, cgroupfs-mount, …), as on the machines checked by hand.
need_rec=()
command -v dockerd >/dev/null || need_rec+=(docker.io)
command -v docker-compose >/dev/null || need_rec+=(docker-compose)
command -v debootstrap >/dev/null || need+=(debootstrap)
# The local busybox image needs a static busybox (Debian's `busybox` is dynamic).
[[ $(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null) == "install ok installed" ]] || need+=(busybox-static)
# The official Python client, run with Debian's /usr/bin/python3 by the official-clients test.
[[ $(dpkg-query -W -f='${Status}' python3-kubernetes 2>/dev/null) == "install ok installed" ]] || need+=(python3-kubernetes)
# `--test`: the gRPC Python example (examples/grpc-python, integration-tests/grpc-clients.test.ts) — python3-grpcio,
# protoc 3.21 (the python3-protobuf runtime's version) with the gRPC plugin, python3-grpc-tools' well-known types.
if [[ ${1:-} == --test ]]; then
  # chromium (+ a font: installed without recommends): the web view's browser test and bench (integration-tests/ui.test.ts, bench/ui.ts, puppeteer-core).
  for p in python3-grpcio python3-grpc-tools protobuf-compiler protobuf-compiler-grpc chromium fonts-liberation; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || need+=("$p")
  done
fi

if ((${#need[@]} + ${#need_rec[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "choreo: missing ${need[*]} ${need_rec[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "choreo: installing ${need[*]} ${need_rec[*]}" >&2
  # Debian starts daemons on install; choreo runs its own, so forbid that.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  if ((${#need[@]})); then apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; fi
  if ((${#need_rec[@]})); then apt-get install -y -qq "${need_rec[@]}" >/dev/null; fi
  if ((created_policy)); then rm -f "$policy"; fi
fi

# Docker installed but not running (fresh machine, no init system): start it.
# Without it choreo falls back to the process runtime and the docker tests skip.
bash scripts/ensure-docker.sh || echo "choreo: continuing without a Docker engine" >&2

npm_deps

# The web view's bundle (services/ui/dist, not committed): built when missing or older than its sources.
node --import tsx services/ui/src/build-cli.ts --if-stale >/dev/null

# `--test` (npm test): kubectl 1.20 beside Debian's 1.32 for the compatibility
# tests, unpacked (not installed: the package conflicts with kubectl) where
# they look for it by default. Best effort: without it those tests skip.
K120=/var/lib/choreo/tools/kubectl-1.20
if [[ ${1:-} == --test && ! -x $K120/usr/bin/kubectl && $(id -u) == 0 ]]; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq kubernetes-client >/dev/null 2>&1) && mkdir -p "$K120" && dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$K120"; then
    echo "choreo: kubectl 1.20 unpacked in $K120 (compatibility tests)" >&2
  else
    echo "choreo: kubectl 1.20 not available; its compatibility tests will skip" >&2
  fi
  rm -rf "$tmp"
fi

# The local images pods run (no registry is used): the busybox root filesystem
# in the process runtime's store and, when an engine answers, in Docker.
# Fast when they are there; the tests and `choreo up` rely on them.
node --import tsx services/node-agent/src/node-setup.ts prepare --runtime auto >/dev/null
