// The csrapprover and csrsigner, as kube-controller-manager's, run by the api
// (it holds the client CA's key): every CertificateSigningRequest is looked
// at when it changes (a watch; a listing at start and every `resyncMs`):
//
//   pending, signer kubernetes.io/kube-apiserver-client-kubelet, asked by a
//   bootstrapper (system:bootstrappers) or by the node itself (renewal),
//   subject exactly CN=system:node:<name>, O=system:nodes, no SANs, usages
//   client auth + digital signature (+ key encipherment)   → Approved (AutoApproved)
//   approved, no certificate, signer kube-apiserver-client(-kubelet)
//                                                         → signed with the client CA (clientAuth),
//                                                           status.certificate
//
// Anything else waits for a person (kubectl certificate approve|deny).
// Writes go through the api's own handlers with the resourceVersion read: a
// CSR changed meanwhile answers Conflict and is looked at again.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { isConflict, isNotFound, unwrap, wrap } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import { ListRequest, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from "@choreo/kit/gen/choreo/certificates/v1/certificates";
import type { CaFiles } from "@choreo/kit/secrets";
import type { ApiHandlers } from "../handlers/api-handlers.js";

const run = promisify(execFile);

export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
export const CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";
const BOOTSTRAPPERS = "system:bootstrappers";
const NODES = "system:nodes";

/** What openssl says of a request: its subject (RFC 2253 parts) and whether it names alternative names; undefined when its signature does not verify. */
export interface RequestFacts {
  cn: string[];
  o: string[];
  /** Any other subject attribute (OU, C, …). */
  other: string[];
  sans: boolean;
}

/** Reads a PEM CSR with the openssl CLI (signature verified). */
export async function requestFacts(pem: string): Promise<RequestFacts | undefined> {
  const dir = await mkdtemp(path.join(tmpdir(), "choreo-csr-"));
  try {
    const file = path.join(dir, "req.csr");
    await writeFile(file, pem);
    const { stdout } = await run("openssl", ["req", "-in", file, "-noout", "-verify", "-subject", "-nameopt", "RFC2253,-esc_msb", "-text"]).catch(() => ({
      stdout: "",
    }));
    const line = /^subject=(.*)$/m.exec(stdout)?.[1];
    if (line === undefined) return undefined;
    const facts: RequestFacts = { cn: [], o: [], other: [], sans: /X509v3 Subject Alternative Name/.test(stdout) };
    // RFC 2253 with escaped commas: split on unescaped ones.
    for (const part of line
      .split(/(?<!\\),/)
      .map((p) => p.trim())
      .filter(Boolean)) {
      const eq = part.indexOf("=");
      const key = part.slice(0, eq);
      const value = part.slice(eq + 1).replace(/\\(.)/g, "$1");
      if (key === "CN") facts.cn.push(value);
      else if (key === "O") facts.o.push(value);
      else facts.other.push(part);
    }
    return facts;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const condition = (csr: CertificateSigningRequest, type: string): CertificateSigningRequestCondition | undefined =>
  csr.status?.conditions.find((c) => c.type === type && c.status !== "False");

/** Why a CSR is a node's client certificate the approver may approve by itself, or undefined when it is not. */
export function autoApprovable(csr: CertificateSigningRequest, facts: RequestFacts | undefined): string | undefined {
  const spec = csr.spec;
  if (!spec || spec.signerName !== KUBELET_CLIENT_SIGNER || !facts) return undefined;
  if (facts.cn.length !== 1 || !facts.cn[0]!.startsWith("system:node:") || facts.cn[0]!.length === "system:node:".length) return undefined;
  if (facts.o.length !== 1 || facts.o[0] !== NODES || facts.other.length || facts.sans) return undefined;
  const usages = new Set(spec.usages);
  const allowed = new Set(["digital signature", "key encipherment", "client auth"]);
  if (!usages.has("client auth") || !usages.has("digital signature") || [...usages].some((u) => !allowed.has(u))) return undefined;
  if (spec.groups.includes(BOOTSTRAPPERS)) return "Auto approving kubelet client certificate after SubjectAccessReview.";
  if (spec.username === facts.cn[0] && spec.groups.includes(NODES)) return "Auto approving self kubelet client certificate after SubjectAccessReview.";
  return undefined;
}

/** Signs a PEM CSR with `ca` as a client certificate (clientAuth), valid `seconds` (rounded up to days; openssl's unit). */
export async function signClientRequest(ca: CaFiles, pem: string, seconds: number, keyEncipherment: boolean): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "choreo-sign-"));
  try {
    const req = path.join(dir, "req.csr");
    const ext = path.join(dir, "ext.cnf");
    const out = path.join(dir, "cert.pem");
    await writeFile(req, pem);
    await writeFile(
      ext,
      [
        "basicConstraints=critical,CA:FALSE",
        `keyUsage=critical,digitalSignature${keyEncipherment ? ",keyEncipherment" : ""}`,
        "extendedKeyUsage=clientAuth",
        "",
      ].join("\n"),
    );
    const days = String(Math.max(1, Math.ceil(seconds / 86_400)));
    await run("openssl", [
      "x509",
      "-req",
      "-in",
      req,
      "-CA",
      ca.certFile,
      "-CAkey",
      ca.keyFile,
      "-set_serial",
      `0x${randomBytes(16).toString("hex")}`,
      "-days",
      days,
      "-extfile",
      ext,
      "-out",
      out,
    ]);
    return await readFile(out, "utf8");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface CsrControllerOptions {
  handlers: Pick<ApiHandlers, "list" | "watch" | "get" | "updateStatus">;
  /** The client CA (its key signs). */
  ca: CaFiles;
  log: Logger;
  /** A listing of every CSR this often (default 30 s), beside the watch. */
  resyncMs?: number;
  retryMs?: number;
  now?: () => Date;
}

/** Approves node client CSRs and signs approved client CSRs. */
export class CsrController implements Runnable {
  readonly name = "csr-approver-signer";
  constructor(private readonly opts: CsrControllerOptions) {}

  private now(): string {
    return (this.opts.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, "Z");
  }

  /** One look at one CSR (by name): approve, sign, or leave it. */
  async reconcile(name: string): Promise<"approved" | "signed" | "none"> {
    let csr: CertificateSigningRequest;
    try {
      csr = unwrap(await this.opts.handlers.get({ resource: "certificatesigningrequests", namespace: "", name })) as CertificateSigningRequest;
    } catch (err) {
      if (isNotFound(err)) return "none";
      throw err;
    }
    if (!csr.spec || condition(csr, "Denied") || condition(csr, "Failed")) return "none";
    const pem = Buffer.from(csr.spec.request).toString("utf8");
    if (!condition(csr, "Approved")) {
      const why = autoApprovable(csr, await requestFacts(pem));
      if (!why) return "none";
      const next = structuredClone(csr);
      const now = this.now();
      next.status = {
        conditions: [
          ...(csr.status?.conditions ?? []),
          { type: "Approved", status: "True", reason: "AutoApproved", message: why, lastUpdateTime: now, lastTransitionTime: now },
        ],
        certificate: new Uint8Array(),
      };
      await this.opts.handlers.updateStatus({ object: wrap("certificateSigningRequest", next), dryRun: false });
      this.opts.log.info({ csr: name, user: csr.spec.username }, "certificate signing request approved");
      return "approved";
    }
    if (csr.status?.certificate?.length || ![CLIENT_SIGNER, KUBELET_CLIENT_SIGNER].includes(csr.spec.signerName)) return "none";
    const cert = await signClientRequest(this.opts.ca, pem, csr.spec.expirationSeconds ?? 365 * 86_400, csr.spec.usages.includes("key encipherment"));
    const next = structuredClone(csr);
    next.status = { conditions: csr.status?.conditions ?? [], certificate: new Uint8Array(Buffer.from(cert)) };
    await this.opts.handlers.updateStatus({ object: wrap("certificateSigningRequest", next), dryRun: false });
    this.opts.log.info({ csr: name, signer: csr.spec.signerName }, "certificate signing request signed");
    return "signed";
  }

  /** Reconciles `name` until it has nothing left to do (approve, then sign); a conflict is read again. */
  private async settle(name: string): Promise<void> {
    for (let i = 0; i < 5; i++) {
      try {
        if ((await this.reconcile(name)) === "none") return;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
  }

  private async listAll(): Promise<string> {
    const page = await this.opts.handlers.list(ListRequest.fromPartial({ resource: "certificatesigningrequests" }));
    for (const o of page.items)
      await this.settle(unwrap(o).metadata?.name ?? "").catch((err: unknown) => this.opts.log.warn({ err }, "certificate signing request not handled"));
    return page.metadata?.resourceVersion ?? "";
  }

  async start(signal: AbortSignal): Promise<void> {
    let resourceVersion = "";
    let listedAt = 0;
    while (!signal.aborted) {
      try {
        resourceVersion = await this.listAll();
        listedAt = Date.now();
        const stop = new AbortController();
        const onAbort = () => stop.abort();
        signal.addEventListener("abort", onAbort, { once: true });
        const timer = setTimeout(() => stop.abort(), Math.max(0, (this.opts.resyncMs ?? 30_000) - (Date.now() - listedAt)));
        try {
          for await (const ev of this.opts.handlers.watch(WatchRequest.fromPartial({ resource: "certificatesigningrequests", resourceVersion }), stop.signal)) {
            if (ev.type === "ERROR") break;
            if (ev.type === "ADDED" || ev.type === "MODIFIED") {
              const name = ev.object ? unwrap(ev.object).metadata?.name : undefined;
              if (name) await this.settle(name).catch((err: unknown) => this.opts.log.warn({ err, csr: name }, "certificate signing request not handled"));
            }
          }
        } finally {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
        }
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.warn({ err }, "certificate signing request watch ended");
      }
      await sleep(this.opts.retryMs ?? 1_000, signal);
    }
  }
}
