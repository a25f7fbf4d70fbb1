// The kubelet's side of securityContext that both runtimes share: the
// container's effective context (the container's fields over the pod's),
// capability names, the runAsNonRoot check, and fsGroup ownership of the
// volume directories a pod owns.
import { chmodSync, chownSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Container, Pod, SeccompProfile } from "@choreo/kit/gen/choreo/core/v1/core";

/**
 * A container's securityContext as it acts: the container's fields win over
 * the pod's (runAsUser, runAsGroup, runAsNonRoot, seccompProfile); groups,
 * fsGroup and sysctls are the pod's only; the rest the container's only.
 */
export interface EffectiveSecurity {
  runAsUser: number | undefined;
  runAsGroup: number | undefined;
  runAsNonRoot: boolean;
  /** The pod's supplementalGroups, then its fsGroup (the kubelet adds it), without repeats. */
  supplementalGroups: number[];
  fsGroup: number | undefined;
  readOnlyRootFilesystem: boolean;
  privileged: boolean;
  /** Kubernetes' default is true (unset); false asks for no_new_privs. */
  allowPrivilegeEscalation: boolean;
  /** Capability names without `CAP_`, upper case; `ALL` as written. */
  capAdd: string[];
  capDrop: string[];
  /** RuntimeDefault, Unconfined, Localhost, or "" when neither the pod nor the container names one (the runtime's default). */
  seccomp: SeccompProfile;
}

/** A securityContext the runtime cannot honour for this container: it waits with CreateContainerConfigError and this message. */
export class ContainerConfigError extends Error {
  override readonly name = "ContainerConfigError";
}

/** Whether `err` is a {@link ContainerConfigError}. */
export function isContainerConfigError(err: unknown): err is ContainerConfigError {
  return err instanceof ContainerConfigError;
}

/** A capability name as Kubernetes takes it (`CAP_NET_ADMIN`, `net_admin`, `NET_ADMIN`) in the form without the prefix. */
export function capabilityName(name: string): string {
  const up = name.trim().toUpperCase();
  return up.startsWith("CAP_") ? up.slice(4) : up;
}

/** The effective securityContext of container `c` of `pod`. */
export function effectiveSecurity(pod: Pod, c: Container): EffectiveSecurity {
  const p = pod.spec?.securityContext;
  const s = c.securityContext;
  const groups = [...(p?.supplementalGroups ?? [])];
  if (p?.fsGroup !== undefined) groups.push(p.fsGroup);
  return {
    runAsUser: s?.runAsUser ?? p?.runAsUser,
    runAsGroup: s?.runAsGroup ?? p?.runAsGroup,
    runAsNonRoot: (s?.runAsNonRoot ?? p?.runAsNonRoot) === true,
    supplementalGroups: [...new Set(groups)],
    fsGroup: p?.fsGroup,
    readOnlyRootFilesystem: s?.readOnlyRootFilesystem === true,
    privileged: s?.privileged === true,
    allowPrivilegeEscalation: s?.allowPrivilegeEscalation !== false,
    capAdd: (s?.capabilities?.add ?? []).map(capabilityName),
    capDrop: (s?.capabilities?.drop ?? []).map(capabilityName),
    seccomp: s?.seccompProfile ?? p?.seccompProfile ?? { type: "" },
  };
}

/**
 * The capability set a container gets: everything when privileged, else
 * the runtime's `defaults` less `drop` (`ALL`: all of them) plus `add`
 * (`ALL`: every one the runtime knows, `known`). Unknown names are kept
 * out (the runtimes would refuse them otherwise).
 */
export function capabilitySet(sec: EffectiveSecurity, defaults: readonly string[], known: readonly string[]): Set<string> {
  if (sec.privileged) return new Set(known);
  const out = new Set(sec.capDrop.includes("ALL") ? [] : defaults.filter((c) => !sec.capDrop.includes(c)));
  for (const c of sec.capAdd.includes("ALL") ? known : sec.capAdd) if (known.includes(c)) out.add(c);
  return out;
}

/** The kubelet's format.Pod: `name_namespace(uid)`. */
function podRef(pod: Pod): string {
  const m = pod.metadata;
  return `${m?.name ?? ""}_${m?.namespace ?? ""}(${m?.uid ?? ""})`;
}

/**
 * The image's user as the kubelet reads it: a numeric uid (`1000`,
 * `1000:1000`) or a name; an empty user is root.
 */
export function imageUser(user: string): { uid: number } | { name: string } {
  const u = user.split(":")[0] ?? "";
  if (u === "") return { uid: 0 };
  return /^[0-9]+$/.test(u) ? { uid: Number(u) } : { name: u };
}

/**
 * The kubelet's verifyRunAsNonRoot: with runAsNonRoot, refuses a
 * container whose effective uid is 0 (runAsUser 0, or no runAsUser and the
 * image's user root) or cannot be known (a non-numeric image user), with
 * the kubelet's messages. `image`: the image's user (`Config.User`).
 */
export function verifyRunAsNonRoot(pod: Pod, c: Container, sec: EffectiveSecurity, image: string): void {
  if (!sec.runAsNonRoot) return;
  const ref = JSON.stringify(podRef(pod));
  if (sec.runAsUser !== undefined) {
    if (sec.runAsUser === 0) throw new ContainerConfigError(`container's runAsUser breaks non-root policy (pod: ${ref}, container: ${c.name})`);
    return;
  }
  const u = imageUser(image);
  if ("uid" in u && u.uid === 0) throw new ContainerConfigError(`container has runAsNonRoot and image will run as root (pod: ${ref}, container: ${c.name})`);
  if ("name" in u)
    throw new ContainerConfigError(
      `container has runAsNonRoot and image has non-numeric user (${u.name}), cannot verify user is non-root (pod: ${ref}, container: ${c.name})`,
    );
}

/**
 * The kubelet's volume ownership for fsGroup, on a volume directory the pod
 * owns (an emptyDir): group fsGroup, group read-write, setgid so that what
 * is made in it is the group's too. Without fsGroup an emptyDir is 0777 as
 * the kubelet makes it (any runAsUser may write it). Only the directory
 * itself: the runtimes call it when they make the directory, empty.
 */
export function ownVolumeDir(dir: string, fsGroup: number | undefined): void {
  if (fsGroup === undefined) return chmodSync(dir, 0o777);
  chownSync(dir, 0, fsGroup);
  chmodSync(dir, 0o2777);
}

/**
 * A Localhost seccomp profile: the file `name` under the agent's profiles
 * dir (`dir`, the kubelet's `<root>/seccomp`), as text. A name reaching out
 * of the dir, or no such file, is a {@link ContainerConfigError}.
 */
export function localhostProfile(dir: string, name: string | undefined): string {
  const rel = path.normalize(name ?? "");
  if (!name || path.isAbsolute(rel) || rel === ".." || rel.startsWith("../"))
    throw new ContainerConfigError(`localhost seccomp profile ${JSON.stringify(name ?? "")} must be a path relative to ${dir}`);
  try {
    return readFileSync(path.join(dir, rel), "utf8");
  } catch (err) {
    throw new ContainerConfigError(`cannot load seccomp profile ${JSON.stringify(path.join(dir, rel))}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
