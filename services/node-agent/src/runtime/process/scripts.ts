import fs from "node:fs";
import path from "node:path";
import type { BindMount } from "./container-spec.js";
import { HELPER } from "./helper.js";
import { shq } from "./proc.js";
import { securityLine, type ProcessSecurity } from "./security.js";

/** Where each container's exec spec is: its working dir, env and argv for choreo-exec (see {@link execSpec}). */
export function execSpecPath(dir: string): string {
  return path.join(dir, "exec.spec");
}

/** What a container's shim and init scripts are generated from (fixed for the container's life; the run number is an argument). */
export interface ContainerScriptSpec {
  /** The pod and container, for the scripts' header comment. */
  title: string;
  /** The container's state dir: run files `<n>.log`, `<n>.pid`, `<n>.code`, `<n>.exit`, `<n>.fstab`, `<n>.upper`, `<n>.work`, and `rootfs`. */
  dir: string;
  /** A PID namespace to enter (an ephemeral container's target's, `/proc/<pid>/ns/pid`); undefined: a new one of its own. */
  pidNamespace?: string | undefined;
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
  /** The container's `stdin`: its stdin is the run's FIFO `<n>.stdin` (what attach writes to), else /dev/null. Absent in older pod.json: false. */
  stdin?: boolean | undefined;
  /** The container's `stdinOnce`: the first attach's stdin end closes the container's stdin for good. */
  stdinOnce?: boolean | undefined;
  /** The container's `tty` (attach to it is refused: no terminal here). */
  tty?: boolean | undefined;
  /** Its securityContext as choreo-exec applies it (absent in older pod.json: root with the default capabilities). */
  security?: ProcessSecurity | undefined;
}

/** The run's stdin FIFO (containers with `stdin: true`) and the pid of the process that holds it open (`<n>.stdin.pid`). */
export function stdinPaths(dir: string, n: number): { fifo: string; holder: string } {
  return { fifo: path.join(dir, `${n}.stdin`), holder: path.join(dir, `${n}.stdin.pid`) };
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
 * With `stdin`, the container's stdin is the FIFO `<n>.stdin`: a holder
 * (`sleep`, its pid in `<n>.stdin.pid`) keeps it open read-write, so the
 * command sees no EOF while no one is attached; killing the holder (a
 * stdinOnce attach's end, the run's end) leaves the attaches as its only
 * writers.
 */
export function shimScript(s: ContainerScriptSpec): string {
  const ns = [...(s.netns ? [`--net=${s.netns}`] : []), `--ipc=${s.ipcFile}`, `--uts=${s.utsFile}`, ...(s.pidNamespace ? [`--pid=${s.pidNamespace}`] : [])]
    .map(shq)
    .join(" ");
  // In a target's PID namespace (nsenter forks into it) the init step is not its PID 1; else a new namespace of its own.
  const pid = s.pidNamespace ? "" : "--pid ";
  // Kernels before 4.13 have no oom_kill count: v1's memory.failcnt (limit hits) stands in, trusted only with a SIGKILL exit.
  const failcnt = path.join(path.dirname(s.oomFile), "memory.failcnt");
  const oom = (v: string): string =>
    [
      `${v}=; if [ -r ${shq(s.oomFile)} ]; then while read -r k x; do [ "$k" = oom_kill ] && ${v}=$x; done < ${shq(s.oomFile)}; fi`,
      `if [ -z "$${v}" ]; then ${v}=0; f=1; if [ -r ${shq(failcnt)} ]; then read -r ${v} < ${shq(failcnt)} || ${v}=0; fi; fi`,
    ].join("\n");
  const stdin = s.stdin
    ? 'rm -f "$n.stdin"; mkfifo -m 600 "$n.stdin" || exit 1\nsleep 2147483647 <> "$n.stdin" > /dev/null 2>&1 &\nh=$!; echo "$h" > "$n.stdin.pid"\n'
    : "";
  const awk = (stream: string): string => `mawk -W interactive -v st=${stream} -v b="$b" -v f="$d/$n.log" ${shq(TIMESTAMPER)}`;
  return `#!/bin/sh
# choreo process-runtime shim: ${s.title.replace(/\n/g, " ")}
n=$1; b=$2; f=
d=${shq(s.dir)}
cd "$d" || exit 1
${oom("o0")}
${stdin}{ { nsenter ${ns} unshare ${pid}--fork --mount --propagation private /bin/sh "$d/init.sh" "$n"${s.stdin ? ' < "$n.stdin"' : ""}; echo $? > "$n.code"; } 2>&1 1>&3 3>&- | ${awk("stderr")} 3>&-; } 3>&1 | ${awk("stdout")}
c=255; if [ -s "$n.code" ]; then read -r c < "$n.code"; fi
${s.stdin ? 'kill "$h" 2>/dev/null\n' : ""}${oom("o1")}
r=Error
[ "$c" = 0 ] && r=Completed
[ "$c" != 0 ] && [ "$o1" -gt "$o0" ] && { [ -z "$f" ] || [ "$c" = 137 ]; } && r=OOMKilled
echo "$c $r" > "$n.exit"
`;
}

/** A path or option field of an fstab line: space, tab, newline and backslash as octal escapes. */
function fstabField(s: string): string {
  return s.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
}

/**
 * The mounts of run `n` as an fstab, which the init step mounts with one
 * `mount -a -T` (one program for all of them, in order): the overlay root
 * (image) — a host-filesystem root is a tmpfs the init step mounts and fills
 * first — then the host's system dirs read-only (host filesystem), /proc,
 * /tmp (a tmpfs on the host's filesystem; an image's own /tmp, in the run's
 * upper dir, as in Docker) and the volumes. /dev is choreo-exec's.
 */
export function runFstab(s: ContainerScriptSpec, n: number): string {
  const root = path.join(s.dir, "rootfs");
  const at = (p: string): string => fstabField(path.join(root, p));
  const lines: string[] = [];
  if (s.lowerdir) {
    const rp = { upper: path.join(s.dir, `${n}.upper`), work: path.join(s.dir, `${n}.work`) };
    // nodev: a device node in an image (or made by a container) opens nothing; /dev is choreo-exec's own tmpfs.
    lines.push(`overlay ${fstabField(root)} overlay nodev,${fstabField(`lowerdir=${s.lowerdir},upperdir=${rp.upper},workdir=${rp.work}`)} 0 0`);
  } else {
    for (const h of s.hostDirs) lines.push(`${fstabField(h)} ${at(h)} none bind,ro 0 0`);
  }
  lines.push(`proc ${at("/proc")} proc nosuid,nodev,noexec 0 0`);
  if (!s.lowerdir) lines.push(`tmpfs ${at("/tmp")} tmpfs nosuid,nodev,mode=1777 0 0`);
  for (const b of s.binds) lines.push(`${fstabField(b.source)} ${at(b.target)} none ${b.readOnly ? "bind,ro" : "bind"} 0 0`);
  return `${lines.join("\n")}\n`;
}

/**
 * The init step, PID 1 of the container's pid namespace, still on the
 * host's root in a private mount namespace: records its host pid, joins
 * the cgroups, mounts the run's fstab (see {@link runFstab}), then runs
 * choreo-exec as its child — a minimal /dev, masked /proc, pivot_root into
 * the root (PID 1 moves with it; the host's root is detached), Docker's
 * default capabilities, no_new_privs, seccomp — which execs the command with
 * exactly the spec's environment. Working dir, env and argv reach it in
 * exec.spec ({@link execSpec}), never on a command line: no user string is
 * an argument of a host program. PID 1 forwards SIGTERM (a PID 1 without a
 * handler would ignore it) and exits with the command's status.
 */
export function initScript(s: ContainerScriptSpec): string {
  const hostRoot: string[] = [];
  if (!s.lowerdir) {
    const dirs = [...s.hostDirs, "/proc", "/dev", "/tmp", ...s.binds.filter((b) => !b.file).map((b) => b.target), s.workingDir || "/"];
    // Every path starts with "$r/": none can be taken for an option of mkdir.
    hostRoot.push(`mount -t tmpfs -o mode=755,nodev tmpfs "$r"`, `mkdir -p ${dirs.map((p) => `"$r"${shq(p)}`).join(" ")}`);
  }
  return `#!/bin/sh
# choreo process-runtime init: ${s.title.replace(/[\r\n]/g, " ")}
n=$1
d=${shq(s.dir)}
r="$d/rootfs"
set -e
read -r me < /proc/self/stat
set -- $me
echo "$1 \${22}" > "$d/$n.pid"
${s.cgroupDirs.map((c) => `echo 0 > ${shq(path.join(c, "cgroup.procs"))}`).join("\n")}
${[...hostRoot, `mount -a -T "$d/$n.fstab"`].join("\n")}
set +e
# From here the shell's own words ("Killed") are not the container's: its stderr moves to fd 3.
# fd 4: the container's stdin (a command run with & would get /dev/null).
exec 3>&2 2>/dev/null 4<&0
trap 'kill -TERM "$c"' TERM INT HUP
${shq(HELPER)} start "$r" ${shq(execSpecPath(s.dir))} <&4 2>&3 3>&- 4<&- &
c=$!
while :; do wait "$c"; s=$?; kill -0 "$c" 2>/dev/null || exit "$s"; done
`;
}

/** What exec.spec is made of (a spec's env as a Map, or as pod.json stores it). */
export interface ExecSpecSource {
  workingDir: string;
  env: Iterable<readonly [string, string]>;
  argv: readonly string[];
  security?: ProcessSecurity | undefined;
}

/**
 * What choreo-exec reads instead of a command line: NUL-terminated strings,
 * the security line when there is one (security.ts), the working dir, the env entries (`NAME=VALUE`, in order), an empty
 * string, then the argv. A NUL inside a value could not reach execve
 * anyway; it is refused rather than cut.
 */
export function execSpec(s: ExecSpecSource): Buffer {
  const strings = [...(s.security ? [securityLine(s.security)] : []), s.workingDir || "/", ...[...s.env].map(([k, v]) => `${k}=${v}`), "", ...s.argv];
  for (const x of strings) if (x.includes("\0")) throw new Error(`container spec: a NUL byte in ${JSON.stringify(x)}`);
  return Buffer.from(strings.map((x) => `${x}\0`).join(""), "utf8");
}

/** Writes the container's exec.spec (once per container; runs and execs read it). */
export function writeExecSpec(s: ExecSpecSource & { dir: string }): string {
  const file = execSpecPath(s.dir);
  fs.writeFileSync(file, execSpec(s), { mode: 0o600 });
  return file;
}
