import fs from "node:fs";
import path from "node:path";
import type { BindMount } from "./container-spec.js";
import { shq } from "./proc.js";

/**
 * The umount that detaches other pods' namespace files: the host's static
 * busybox when there is one (util-linux umount re-reads mountinfo per
 * target: with a hundred pods that is tens of ms per container start).
 */
const UMOUNT = ["/usr/bin/busybox", "/bin/busybox"].some((b) => fs.existsSync(b)) ? "busybox umount" : "umount";

/** What a container's shim and init scripts are generated from (fixed for the container's life; the run number is an argument). */
export interface ContainerScriptSpec {
  /** The pod and container, for the scripts' header comment. */
  title: string;
  /** The container's state dir: run files `<n>.log`, `<n>.pid`, `<n>.code`, `<n>.exit`, `<n>.upper`, `<n>.work`, and `rootfs`. */
  dir: string;
  /** The pod's network namespace file; undefined for hostNetwork pods. */
  netns: string | undefined;
  ipcFile: string;
  utsFile: string;
  /** The container's cgroup directories; the init step joins each. */
  cgroupDirs: readonly string[];
  /** Where the cgroup counts OOM kills (`oom_kill N`). */
  oomFile: string;
  /** The image's root filesystem (overlay lower); undefined → the host's filesystem. */
  lowerdir: string | undefined;
  /** Host directories bound read-only into a host-filesystem root. */
  hostDirs: readonly string[];
  /** Volumes (and, on the host's filesystem, the pod's /etc/resolv.conf and /etc/hosts). */
  binds: readonly BindMount[];
  /** Files copied into each run's overlay upper dir (the pod's resolv.conf and hosts): no mount needed. */
  upperFiles: readonly { source: string; target: string }[];
  env: ReadonlyMap<string, string>;
  argv: readonly string[];
  workingDir: string;
}

/**
 * The CRI log line writer: one per stream, appending (so rotation by copy +
 * truncate works) and flushing every line. Timestamps are boot epoch
 * (`b`, from the agent) + /proc/uptime: sub-second without spawning `date`.
 */
export const TIMESTAMPER = [
  '{ getline u < "/proc/uptime"; close("/proc/uptime"); split(u, a, " "); t = b + a[1]; s = int(t);',
  'printf("%s.%02d0000000Z %s F %s\\n", strftime("%Y-%m-%dT%H:%M:%S", s, 1), int((t - s) * 100), st, $0) >> f; fflush(f) }',
].join(" ");

/**
 * The shim: run detached (own session and process group) with `$1` = run
 * number and `$2` = boot epoch. It pipes the container's stdout and stderr
 * through two timestampers into `<n>.log`, then records `<exit code>
 * <reason>` in `<n>.exit` (its mtime is finishedAt). OOMKilled when the
 * cgroup's oom_kill count grew and the exit was not 0 (or, on kernels
 * without that count, memory.failcnt grew and the exit was a SIGKILL).
 */
export function shimScript(s: ContainerScriptSpec): string {
  const ns = [...(s.netns ? [`--net=${s.netns}`] : []), `--ipc=${s.ipcFile}`, `--uts=${s.utsFile}`].map(shq).join(" ");
  // Kernels before 4.13 have no oom_kill count: v1's memory.failcnt (limit hits) stands in, trusted only with a SIGKILL exit.
  const failcnt = path.join(path.dirname(s.oomFile), "memory.failcnt");
  const oom = (v: string): string => [
    `${v}=; if [ -r ${shq(s.oomFile)} ]; then while read -r k x; do [ "$k" = oom_kill ] && ${v}=$x; done < ${shq(s.oomFile)}; fi`,
    `if [ -z "$${v}" ]; then ${v}=0; f=1; if [ -r ${shq(failcnt)} ]; then read -r ${v} < ${shq(failcnt)} || ${v}=0; fi; fi`,
  ].join("\n");
  const awk = (stream: string): string => `mawk -W interactive -v st=${stream} -v b="$b" -v f="$d/$n.log" ${shq(TIMESTAMPER)}`;
  return `#!/bin/sh
# choreo process-runtime shim: ${s.title.replace(/\n/g, " ")}
n=$1; b=$2; f=
d=${shq(s.dir)}
cd "$d" || exit 1
${oom("o0")}
{ { nsenter ${ns} unshare --pid --fork --mount --propagation private /bin/sh "$d/init.sh" "$n"; echo $? > "$n.code"; } 2>&1 1>&3 3>&- | ${awk("stderr")} 3>&-; } 3>&1 | ${awk("stdout")}
c=255; if [ -s "$n.code" ]; then read -r c < "$n.code"; fi
${oom("o1")}
r=Error
[ "$c" = 0 ] && r=Completed
[ "$c" != 0 ] && [ "$o1" -gt "$o0" ] && { [ -z "$f" ] || [ "$c" = 137 ]; } && r=OOMKilled
echo "$c $r" > "$n.exit"
`;
}

/**
 * The init step, PID 1 of the container's pid namespace, still on the
 * host's root in a private mount namespace: records its host pid, joins
 * the cgroups, detaches every namespace file its mount namespace copied
 * from the host (other pods' would otherwise outlive their pods), builds the root, then runs the command chrooted as its
 * child, forwarding SIGTERM (a PID 1 without a handler would ignore it)
 * and exiting with the command's status.
 */
export function initScript(s: ContainerScriptSpec): string {
  const r = '"$r"';
  const lines: string[] = [];
  if (s.lowerdir) {
    lines.push(`mount -t overlay overlay -o ${shq(`lowerdir=${s.lowerdir},upperdir=`)}"$d/$n.upper",workdir="$d/$n.work" ${r}`);
  } else {
    lines.push(`mount -t tmpfs -o mode=755 tmpfs ${r}`);
    const dirs = [...s.hostDirs, "/proc", "/dev", "/tmp", ...s.binds.filter((b) => !b.file).map((b) => b.target), s.workingDir || "/"];
    lines.push(`mkdir -p ${dirs.map((p) => `"$r"${shq(p)}`).join(" ")}`);
    for (const h of s.hostDirs) lines.push(`mount --bind -o ro ${shq(h)} "$r"${shq(h)}`);
  }
  lines.push(`mount -t proc proc "$r/proc"`, `mount --bind /dev "$r/dev"`, `mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"`);
  for (const b of s.binds) lines.push(`mount --bind${b.readOnly ? " -o ro" : ""} ${shq(b.source)} "$r"${shq(b.target)}`);
  const env = [...s.env].map(([k, v]) => shq(`${k}=${v}`)).join(" ");
  return `#!/bin/sh
# choreo process-runtime init: ${s.title.replace(/\n/g, " ")}
n=$1
d=${shq(s.dir)}
r="$d/rootfs"
set -e
read -r me < /proc/self/stat
set -- $me
echo "$1 \${22}" > "$d/$n.pid"
${s.cgroupDirs.map((c) => `echo 0 > ${shq(path.join(c, "cgroup.procs"))}`).join("\n")}
# The namespace files in this mount namespace's copy of the host's table (other pods', /run/netns):
# read here, after unshare, so a pod created a moment ago is in the list too.
l=; while read -r _ _ _ _ m x; do case "$x" in *" - nsfs "*) case "$m" in *'\\'*) ;; *) l="$l $m" ;; esac ;; esac; done < /proc/self/mountinfo
[ -z "$l" ] || ${UMOUNT} -l $l 2>/dev/null || true
${lines.join("\n")}
set +e
# From here the shell's own words ("Killed") are not the container's: its stderr moves to fd 3.
exec 3>&2 2>/dev/null
trap 'kill -TERM "$c"' TERM INT HUP
env -i ${env} unshare --root="$r" --wd=${shq(s.workingDir || "/")} -- ${s.argv.map(shq).join(" ")} 2>&3 3>&- &
c=$!
while :; do wait "$c"; s=$?; kill -0 "$c" 2>/dev/null || exit "$s"; done
`;
}
