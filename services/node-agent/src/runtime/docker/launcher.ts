import type Dockerode from "dockerode";
import type { Logger } from "@choreo/kit/log";
import type { ContainerStateWaiting } from "@choreo/kit/gen/choreo/core/v1/core";
import { prepareBinds } from "../safe-binds.js";
import { isUnsafePath } from "../safe-path.js";
import { appContainerOptions } from "./container-spec.js";
import { createOrTakeOver, dockerMessage, startQuietly } from "./engine.js";
import { effectiveSecurity, isContainerConfigError, localhostProfile, verifyRunAsNonRoot } from "../security-context.js";
import { imageAction, imageConfigUser, imagePresent, pullImage } from "./images.js";
import { instanceName, podLabels } from "./names.js";
import type { ContainerRecord, PodRecord } from "./pod-record.js";
import { instanceFromInspect, later } from "./status.js";

/** Back-off of image pulls and failed creates (the kubelet's: 1 s doubling to 5 min). */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** What the launcher needs from the runtime. */
export interface LauncherDeps {
  docker: Dockerode;
  node: string;
  hostIp: string;
  log: Logger;
  backoff: Backoff;
  /** Whether the runtime still holds the pod (it may have been stopped while a pull ran). */
  holds: (p: PodRecord) => boolean;
  /** Tells the listeners when the pod's status changed. */
  changed: (p: PodRecord) => void;
  /** Where Localhost seccomp profiles are (`seccompProfile.localhostProfile` is a path under it). */
  seccompDir: string;
}

/**
 * Brings one container of a pod to its next instance: image per
 * imagePullPolicy, then create and start in the sandbox. Image and create
 * problems are waiting states (ErrImagePull → ImagePullBackOff,
 * ErrImageNeverPull, CreateContainerError, and CreateContainerConfigError
 * for a subPath or hostPath the safe walk refuses) retried in the
 * background with back-off; nothing here throws, so a bad image never
 * takes the agent down.
 */
export class Launcher {
  constructor(private readonly deps: LauncherDeps) {}

  /** One attempt; on failure the container waits and a retry is scheduled. */
  async launch(p: PodRecord, c: ContainerRecord): Promise<void> {
    clearTimeout(c.timer);
    c.timer = undefined;
    if (!this.wanted(p, c) || !c.spec) return;
    const image = c.spec.image;
    const { docker } = this.deps;
    try {
      const action = imageAction(c.spec.imagePullPolicy, await imagePresent(docker, image));
      if (action === "never") {
        return this.retryLater(p, c, { reason: "ErrImageNeverPull", message: `Container image "${image}" is not present with pull policy of Never` });
      }
      if (action === "pull") await pullImage(docker, image);
    } catch (err) {
      this.deps.log.info({ pod: p.ref, container: c.name, image, err: dockerMessage(err) }, "image pull failed");
      return this.pullFailed(p, c, dockerMessage(err));
    }
    if (!this.wanted(p, c)) return;
    const work = this.createAndStart(p, c);
    p.inflight.add(work);
    try {
      await work;
      c.backoffMs = 0;
    } catch (err) {
      this.deps.log.warn({ pod: p.ref, container: c.name, err: dockerMessage(err) }, "container create failed");
      const config = isUnsafePath(err) || isContainerConfigError(err);
      this.retryLater(p, c, { reason: config ? "CreateContainerConfigError" : "CreateContainerError", message: dockerMessage(err) });
    } finally {
      p.inflight.delete(work);
    }
    this.deps.changed(p);
  }

  /** Cancels a scheduled retry. */
  cancel(c: ContainerRecord): void {
    clearTimeout(c.timer);
    c.timer = undefined;
  }

  /** Not stopped, spec known, and no instance of the wanted restart count yet. */
  private wanted(p: PodRecord, c: ContainerRecord): boolean {
    return !p.stopping && this.deps.holds(p) && c.spec !== undefined && c.current?.restartCount !== c.restartCount;
  }

  private async createAndStart(p: PodRecord, c: ContainerRecord): Promise<void> {
    const { docker, node, hostIp } = this.deps;
    const name = instanceName(p.ref, c.name, c.restartCount);
    const labels = podLabels({ node, pod: p.ref, container: c.name, restartCount: c.restartCount, podIp: p.podIp });
    // Every (re)create walks subPaths and hostPaths again: a container of the pod may have swapped one for a symlink since the last run.
    // The kubelet's checks before a create: runAsNonRoot against the image's user, a Localhost seccomp profile present.
    const sec = effectiveSecurity(p.pod!, c.spec!);
    const user = await imageConfigUser(docker, c.spec!.image);
    verifyRunAsNonRoot(p.pod!, c.spec!, sec, user);
    const seccompProfile = sec.seccomp.type === "Localhost" ? localhostProfile(this.deps.seccompDir, sec.seccomp.localhostProfile) : undefined;
    const volumes = await prepareBinds(p.pod!, c.spec!, p.podDir);
    const opts = appContainerOptions({
      pod: p.pod!,
      container: c.spec!,
      sandboxId: p.sandboxId,
      podIp: p.podIp,
      hostIp,
      podDir: p.podDir,
      labels,
      name,
      volumes,
      imageUser: user,
      seccompProfile,
    });
    // An ephemeral container with a target sees the target's processes (`kubectl debug --target`).
    const target = c.ephemeral?.target;
    if (target) {
      const id = p.containers.get(target)?.current?.id;
      if (!id) throw new Error(`target container "${target}" of ephemeral container "${c.name}" has not started`);
      opts.HostConfig = { ...opts.HostConfig, PidMode: `container:${id}` };
    }
    const container = await createOrTakeOver(docker, opts, p.ref.uid);
    c.waiting = undefined;
    c.current = instanceFromInspect(await container.inspect(), c.restartCount);
    try {
      await startQuietly(container);
    } catch (err) {
      // The failure shows in inspect (State.Error → ContainerCannotRun) and the restart policy takes it from there.
      this.deps.log.info({ pod: p.ref, container: c.name, err: dockerMessage(err) }, "container start failed");
    }
    // A die event may have been read already (a short-lived command): never step back to running.
    c.current = later(c.current, instanceFromInspect(await container.inspect(), c.restartCount));
  }

  private pullFailed(p: PodRecord, c: ContainerRecord, message: string): void {
    const delay = this.nextBackoff(c);
    this.wait(p, c, { reason: "ErrImagePull", message });
    // ErrImagePull for the first half of the back-off, ImagePullBackOff for the rest, then a retry.
    c.timer = setTimeout(
      () => {
        this.wait(p, c, { reason: "ImagePullBackOff", message: `Back-off pulling image "${c.spec?.image ?? c.image}"` });
        c.timer = setTimeout(() => void this.launch(p, c), delay - Math.floor(delay / 2));
        c.timer.unref();
      },
      Math.floor(delay / 2),
    );
    c.timer.unref();
  }

  private retryLater(p: PodRecord, c: ContainerRecord, waiting: ContainerStateWaiting): void {
    const delay = this.nextBackoff(c);
    this.wait(p, c, waiting);
    c.timer = setTimeout(() => void this.launch(p, c), delay);
    c.timer.unref();
  }

  private wait(p: PodRecord, c: ContainerRecord, waiting: ContainerStateWaiting): void {
    if (!this.deps.holds(p) || p.stopping) return;
    c.waiting = waiting;
    this.deps.changed(p);
  }

  private nextBackoff(c: ContainerRecord): number {
    const { initialMs, maxMs } = this.deps.backoff;
    c.backoffMs = c.backoffMs === 0 ? initialMs : Math.min(maxMs, c.backoffMs * 2);
    return c.backoffMs;
  }
}
