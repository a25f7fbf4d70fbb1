import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { capabilitySet, effectiveSecurity, isContainerConfigError, verifyRunAsNonRoot } from "../security-context.js";

/** Linux's capabilities by number (CAP_CHOWN = 0 … CAP_CHECKPOINT_RESTORE = 40). */
export const CAPABILITIES = [
  "CHOWN",
  "DAC_OVERRIDE",
  "DAC_READ_SEARCH",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "SETPCAP",
  "LINUX_IMMUTABLE",
  "NET_BIND_SERVICE",
  "NET_BROADCAST",
  "NET_ADMIN",
  "NET_RAW",
  "IPC_LOCK",
  "IPC_OWNER",
  "SYS_MODULE",
  "SYS_RAWIO",
  "SYS_CHROOT",
  "SYS_PTRACE",
  "SYS_PACCT",
  "SYS_ADMIN",
  "SYS_BOOT",
  "SYS_NICE",
  "SYS_RESOURCE",
  "SYS_TIME",
  "SYS_TTY_CONFIG",
  "MKNOD",
  "LEASE",
  "AUDIT_WRITE",
  "AUDIT_CONTROL",
  "SETFCAP",
  "MAC_OVERRIDE",
  "MAC_ADMIN",
  "SYSLOG",
  "WAKE_ALARM",
  "BLOCK_SUSPEND",
  "AUDIT_READ",
  "PERFMON",
  "BPF",
  "CHECKPOINT_RESTORE",
] as const;

/** A container's default capabilities: Docker's less NET_RAW (dropped from pods) and MKNOD (no device cgroup). choreo-exec's KEEP_CAPS. */
export const DEFAULT_CAPS = [
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "SETPCAP",
  "NET_BIND_SERVICE",
  "SYS_CHROOT",
  "AUDIT_WRITE",
  "SETFCAP",
];

/** choreo-exec's security line flags. */
export const FLAGS = { privileged: 1, readOnlyRoot: 2, unconfined: 4 } as const;

/** What choreo-exec applies to a container's processes (its start and every exec), from the securityContext. */
export interface ProcessSecurity {
  uid: number;
  gid: number;
  groups: number[];
  /** The capability mask in hex: root's bounding, permitted and effective sets. */
  caps: string;
  /** The capabilities a non-root process keeps (those its securityContext adds), hex. */
  ambient: string;
  flags: number;
  /** Why the container cannot run as asked: it waits with CreateContainerConfigError and this message. */
  configError?: string | undefined;
}

function mask(names: Iterable<string>): bigint {
  let m = 0n;
  for (const n of names) {
    const i = (CAPABILITIES as readonly string[]).indexOf(n);
    if (i >= 0) m |= 1n << BigInt(i);
  }
  return m;
}

/**
 * The process runtime's securityContext: runAsUser/runAsGroup (0 when
 * unset: its images carry no USER), supplementalGroups with fsGroup,
 * capabilities over {@link DEFAULT_CAPS}, privileged, readOnlyRootFilesystem
 * and seccompProfile Unconfined as choreo-exec's flags. Refused (a config
 * error): runAsNonRoot with uid 0, a Localhost seccomp profile (the filter
 * is choreo-exec's own), and adding MKNOD without privileged (no device
 * cgroup would stop a node made with it).
 */
export function processSecurity(pod: Pod, c: Container): ProcessSecurity {
  const sec = effectiveSecurity(pod, c);
  const caps = mask(capabilitySet(sec, DEFAULT_CAPS, CAPABILITIES));
  const added = sec.capAdd.includes("ALL") ? CAPABILITIES : sec.capAdd;
  const out: ProcessSecurity = {
    uid: sec.runAsUser ?? 0,
    gid: sec.runAsGroup ?? 0,
    groups: sec.supplementalGroups,
    caps: caps.toString(16),
    ambient: (mask(added) & caps).toString(16),
    flags:
      (sec.privileged ? FLAGS.privileged : 0) |
      (sec.readOnlyRootFilesystem ? FLAGS.readOnlyRoot : 0) |
      (sec.seccomp.type === "Unconfined" ? FLAGS.unconfined : 0),
  };
  try {
    verifyRunAsNonRoot(pod, c, sec, "");
  } catch (err) {
    if (!isContainerConfigError(err)) throw err;
    out.configError = err.message;
  }
  if (sec.seccomp.type === "Localhost")
    out.configError ??= `seccomp profile type Localhost (${sec.seccomp.localhostProfile ?? ""}) is not supported by the process runtime: use RuntimeDefault or the docker runtime`;
  if (!sec.privileged && (sec.capAdd.includes("MKNOD") || sec.capAdd.includes("ALL")))
    out.configError ??= `capability MKNOD is not granted by the process runtime without privileged: it has no device cgroup`;
  return out;
}

/** choreo-exec's security line: `choreo-sec 1 UID GID CAPS AMBIENT FLAGS NGROUPS G...`. */
export function securityLine(s: ProcessSecurity): string {
  return ["choreo-sec", 1, s.uid, s.gid, s.caps, s.ambient, s.flags, s.groups.length, ...s.groups].join(" ");
}
