// Shared by the docker runtime's tests (real Docker): a pod network double,
// pod builders, a runtime per test node, and the leftover check.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { TestPodNetwork } from "../../net/testing.js";
import { silentLogger } from "@choreo/kit/log";
import { ensureLocalImages } from "../../images/local-images.js";
import { DEFAULT_IMAGES_DIR, LOCAL_IMAGES } from "../../images/types.js";
import { engineAnswers } from "./engine.js";
import { DockerRuntime, type DockerRuntimeOptions } from "./docker-runtime.js";
import { nodeFilter } from "./names.js";

export const docker = new Dockerode();

/**
 * Why the docker tests cannot run here (no engine answers), or undefined;
 * the busybox image they run is built when missing, never a reason to skip.
 */
export async function dockerUnavailable(): Promise<string | undefined> {
  if (!(await engineAnswers(docker))) return "no Docker engine answers on this machine";
  await ensureLocalImages({ imagesDir: DEFAULT_IMAGES_DIR, docker: true, log: silentLogger() });
  return undefined;
}

/** A pod network that hands out IPs and wires nothing (the pods only have lo); it checks the sandbox's namespace path. */
export class TestNetwork extends TestPodNetwork {
  constructor(podCidr = "10.99.0.0/24") {
    super(podCidr, async (netnsPath) => assert.match(netnsPath, /^\/proc\/\d+\/ns\/net$/));
  }
}

/** A unique node name (containers of parallel tests never mix). */
export function testNode(what: string): string {
  return `dt-${what}-${randomUUID().slice(0, 6)}`;
}

/**
 * A pod from Kubernetes JSON bound to `node`, in a namespace named after the
 * node: docker container names are engine-wide, so tests running side by
 * side must not share a namespace/name.
 */
export function makePod(name: string, spec: Record<string, unknown>, node: string): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: node, uid: randomUUID() },
      spec: { nodeName: node, restartPolicy: "Always", ...spec },
    }),
  ) as Pod;
}

/** A busybox container running `script` with sh -c. */
export function sh(name: string, script: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, image: LOCAL_IMAGES.busybox, imagePullPolicy: "IfNotPresent", command: ["sh", "-c", script], ...extra };
}

/** A runtime for a test node, with its own state dir, initialised. */
export async function newRuntime(node: string, extra: Partial<DockerRuntimeOptions> = {}): Promise<{ rt: DockerRuntime; net: TestNetwork; stateDir: string }> {
  const stateDir = extra.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), "choreo-docker-")));
  const net = (extra.network as TestNetwork | undefined) ?? new TestNetwork();
  const rt = new DockerRuntime({ node, network: net, stateDir, dnsServer: "10.99.0.1", log: silentLogger(), docker, ...extra });
  await rt.init();
  return { rt, net, stateDir };
}

/** The node's containers (all states). */
export async function nodeContainers(node: string): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: JSON.stringify(nodeFilter(node)) });
}

/** Removes whatever the test left on its node, then asserts nothing is left. */
export async function cleanup(node: string, stateDir?: string): Promise<void> {
  for (const c of await nodeContainers(node))
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  assert.deepEqual(
    (await nodeContainers(node)).map((c) => c.Names),
    [],
    "no containers left",
  );
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
}

/** Everything an iterable of byte chunks holds, as text. */
export async function collect(it: AsyncIterable<Uint8Array>): Promise<string> {
  let out = "";
  for await (const chunk of it) out += Buffer.from(chunk).toString("utf8");
  return out;
}
