// test-tier: servers
// Pod Security Admission seen by real kubectl 1.32 (through the gateway over
// the memory registry): a privileged pod in a baseline namespace is refused
// with Kubernetes' message and nothing is stored; a warn label makes kubectl
// print `Warning: would violate PodSecurity …`; an unknown level is a 422;
// raising enforce lists the pods that break it.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { createGateway, type Gateway } from "../../../http/gateway.js";
import { ensureServingCert } from "../../../http/tls.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "../../../http/testing/kubectl.js";
import { startMemoryRegistry } from "../../../testing/memory-registry.js";

const hasKubectl = await kubectlInstalled();
const KUBECTL_1_20 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

describe("kubectl and Pod Security", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let kubeconfig: string;
  const TOKEN = "kubectl-pod-security-token";
  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig, { requestTimeoutSeconds: 20 })(...args);
  const ok = async (...args: string[]): Promise<{ stdout: string; stderr: string }> => {
    const r = await kubectl(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r;
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-psa-"));
    const s = await startMemoryRegistry();
    const cert = await ensureServingCert(dir, []);
    gateway = createGateway({ handlers: s.registry, log: silentLogger(), tokens: [TOKEN] });
    const { httpsPort } = await gateway.listen({ host: "127.0.0.1", httpsPort: 0, tls: cert });
    kubeconfig = writeKubeconfig(dir, { server: `https://127.0.0.1:${httpsPort}`, caPem: cert.caPem, token: TOKEN });
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a privileged pod in a baseline namespace: Kubernetes' message, exit 1, nothing stored", async () => {
    await ok("create", "namespace", "base");
    const r = await kubectl("run", "priv", "-n", "base", "--image=busybox", "--privileged", "--", "sleep", "3600");
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stderr.trim(),
      'Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "priv" must not set securityContext.privileged=true)',
    );
    const get = await kubectl("get", "pod", "priv", "-n", "base");
    assert.equal(get.code, 1);
    assert.match(get.stderr, /NotFound/);
  });

  it("a warn label: kubectl prints the warning, the pod is created", async () => {
    await ok("create", "namespace", "warned");
    await ok("label", "namespace", "warned", "pod-security.kubernetes.io/warn=restricted");
    const r = await ok("run", "plain", "-n", "warned", "--image=busybox", "--", "sleep", "3600");
    assert.match(r.stdout, /pod\/plain created/);
    assert.equal(
      r.stderr.trim(),
      'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "plain" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "plain" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "plain" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "plain" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
  });

  it("kubectl 1.20 prints the warning and the refusal too", { skip: existsSync(KUBECTL_1_20) ? false : "no kubectl 1.20" }, async () => {
    const old = (...args: string[]) => kubectlRunner(dir, kubeconfig, { bin: KUBECTL_1_20, requestTimeoutSeconds: 20 })(...args);
    const warned = await old("run", "old", "-n", "warned", "--image=busybox", "--", "sleep", "3600");
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stderr, /^Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "old" must set/);
    const refused = await old("run", "priv", "-n", "base", "--image=busybox", "--privileged");
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Error from server \(Forbidden\): pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged/);
  });

  it("an unknown level is refused (422); raising enforce warns of the pods that break it", async () => {
    const bad = await kubectl("label", "namespace", "warned", "pod-security.kubernetes.io/enforce=strict");
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /is invalid: metadata\.labels\[pod-security\.kubernetes\.io\/enforce\]: Invalid value: "strict": must be one of privileged, baseline, restricted/,
    );
    const r = await ok("label", "namespace", "warned", "pod-security.kubernetes.io/enforce=restricted");
    assert.match(r.stdout, /namespace\/warned labeled/);
    assert.equal(
      r.stderr.trim(),
      'Warning: existing pods in namespace "warned" violate the new PodSecurity enforce level "restricted:latest"\n' +
        "Warning: old (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
    );
  });
});
