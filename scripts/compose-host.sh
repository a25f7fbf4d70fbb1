#!/usr/bin/env bash
# Prepares this host for docker-compose.yml's node agents: /var/lib/choreo
# (shared with the host so pods' bind mounts resolve) and /run/netns as a
# shared mount (the agents bind it with :rshared; Docker refuses a private
# one). `ip netns add` does the same the first time it runs. Idempotent, quiet.
set -euo pipefail
mkdir -p /var/lib/choreo /run/netns
if ! mountpoint -q /run/netns; then
  mount --bind /run/netns /run/netns
fi
if [[ $(findmnt -n -o PROPAGATION /run/netns) != shared ]]; then
  mount --make-shared /run/netns
fi
