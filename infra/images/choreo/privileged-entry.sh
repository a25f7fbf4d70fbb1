#!/bin/sh
# Entrypoint of the node agents in docker-compose.yml: they have every
# capability but not `privileged: true` (see there), so Docker left /proc/sys
# read-only; the agent writes sysctls (ip_forward, route_localnet) of the
# host's network namespace it shares. Remount it writable, then run the command.
set -eu
if ! touch /proc/sys/net/ipv4/ip_forward 2>/dev/null; then
  mount -o remount,bind,rw /proc/sys
fi
exec "$@"
