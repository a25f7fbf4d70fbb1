// openAuditLog: the policy decides each request's level at begin(); finish()
// makes the audit.k8s.io/v1 Event and queues its JSON line for the file.
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import type { Attributes, UserInfo } from "../auth/types.js";
import { auditUser, bodyForEvent, microTime, nowMicros, objectRef, sensitiveBody, sensitiveRequest, type AuditEvent } from "./event.js";
import { FileWriter } from "./file-writer.js";
import { DEFAULT_POLICY, evaluatePolicy, parsePolicy, type Level, type Policy } from "./policy.js";

export interface AuditLogOptions {
  /** The JSON-lines file (created mode 0600, its directory 0700). */
  file: string;
  /** A parsed Policy, the path of a policy file (YAML or JSON), or nothing for DEFAULT_POLICY. */
  policy?: Policy | string;
  /** Rotate when the file would pass this size (default 100; fractions allowed; 0: never). */
  maxSizeMB?: number;
  /** Rotated files kept: <file>.1 (newest) … <file>.N (default 10). */
  maxBackups?: number;
  /** Events waiting for the disk before new ones are dropped (default 10,000). */
  maxQueue?: number;
  log: Logger;
  /** Where choreo_audit_events_total and choreo_audit_events_dropped_total are registered. */
  metrics?: Registry;
}

export interface BeginOptions {
  user: UserInfo;
  verb: string;
  attrs: Attributes;
  requestURI: string;
  sourceIP: string;
  userAgent?: string;
  /** The identity acted as, when the request impersonates (then `attrs.user` is the impersonated one, `user` the caller). */
  impersonatedUser?: UserInfo;
}

export interface FinishOptions {
  code: number;
  /** A Status's fields, for a failed request: written as responseStatus.status/reason/message. */
  status?: { status?: string; reason?: string; message?: string };
  /** Written at Request and RequestResponse; an object, or JSON text/bytes. Never for Secrets and tokens. */
  requestObject?: unknown;
  /** Written at RequestResponse. Never for Secrets and tokens. */
  responseObject?: unknown;
  annotations?: Record<string, string>;
}

/** One audited request, from begin to finish. */
export interface AuditEntry {
  readonly auditID: string;
  readonly level: Exclude<Level, "None">;
  /** True when finish wants the request body (Request, RequestResponse, not a Secret or token). */
  readonly wantsRequestObject: boolean;
  /** True when finish wants the response body (RequestResponse, not a Secret or token). */
  readonly wantsResponseObject: boolean;
  /** Adds an annotation (authorization.k8s.io/decision, pod-security.kubernetes.io/…) before finish. */
  annotate(key: string, value: string): void;
  /** Writes the event (once; later calls do nothing). Never waits for the disk. */
  finish(o: FinishOptions): void;
}

export interface AuditLog {
  /** undefined when the policy's level for the request is None (or it omits ResponseComplete). */
  begin(o: BeginOptions): AuditEntry | undefined;
  /** Writes what is queued and closes the file. */
  close(): Promise<void>;
}

/** Opens (appends to) the audit file. Throws AuditPolicyError for an invalid policy file. */
export async function openAuditLog(opts: AuditLogOptions): Promise<AuditLog> {
  const policy = typeof opts.policy === "string" ? parsePolicy(await readFile(opts.policy, "utf8")) : (opts.policy ?? DEFAULT_POLICY);
  const registers = opts.metrics ? [opts.metrics] : [];
  const written = new Counter({
    name: "choreo_audit_events_total",
    help: "Audit events queued for the audit file, by level.",
    labelNames: ["level"],
    registers,
  });
  const dropped = new Counter({
    name: "choreo_audit_events_dropped_total",
    help: "Audit events dropped: queue full (the disk fell behind), write errors, or after close.",
    registers,
  });
  const log = opts.log;
  let lastWarn = 0;
  let droppedTotal = 0;
  const writer = await FileWriter.open({
    file: opts.file,
    maxBytes: Math.round((opts.maxSizeMB ?? 100) * 1024 * 1024),
    maxBackups: opts.maxBackups ?? 10,
    maxQueue: opts.maxQueue ?? 10_000,
    onDrop: (n) => {
      dropped.inc(n);
      droppedTotal += n;
      // One warning per 10 s at most: a disk that fell behind drops thousands.
      if (Date.now() - lastWarn > 10_000) {
        lastWarn = Date.now();
        log.warn({ file: opts.file, dropped: droppedTotal }, "audit events dropped");
      }
    },
    onWriteError: (err) => log.error({ err, file: opts.file }, "audit log write failed"),
    onTornTail: (bytes) => log.warn({ file: opts.file, bytes }, "audit log's torn last line cut off"),
  });
  log.info({ file: opts.file, rules: policy.rules.length }, "audit log open");

  return {
    begin(b) {
      const rule = evaluatePolicy(policy, b.attrs);
      if (rule.level === "None" || rule.omitStages.includes("ResponseComplete")) return undefined;
      const level = rule.level;
      const received = nowMicros();
      const secret = sensitiveRequest(b.attrs);
      const annotations: Record<string, string> = {};
      let done = false;
      return {
        auditID: randomUUID(),
        level,
        wantsRequestObject: !secret && level !== "Metadata",
        wantsResponseObject: !secret && level === "RequestResponse",
        annotate(k, v) {
          annotations[k] = v;
        },
        finish(f) {
          if (done) return;
          done = true;
          Object.assign(annotations, f.annotations);
          const ev: AuditEvent = {
            kind: "Event",
            apiVersion: "audit.k8s.io/v1",
            level,
            auditID: this.auditID,
            stage: "ResponseComplete",
            requestURI: b.requestURI,
            verb: b.verb,
            user: auditUser(b.user),
            sourceIPs: [b.sourceIP],
            responseStatus: { metadata: {}, code: f.code },
            requestReceivedTimestamp: microTime(received),
            stageTimestamp: microTime(nowMicros()),
          };
          if (b.impersonatedUser) ev.impersonatedUser = auditUser(b.impersonatedUser);
          if (b.userAgent) ev.userAgent = b.userAgent;
          const ref = objectRef(b.attrs);
          if (ref) ev.objectRef = ref;
          if (f.status?.status) ev.responseStatus.status = f.status.status;
          if (f.status?.reason) ev.responseStatus.reason = f.status.reason;
          if (f.status?.message) ev.responseStatus.message = f.status.message;
          if (this.wantsRequestObject) {
            const body = bodyForEvent(f.requestObject, rule.omitManagedFields);
            if (body !== undefined && !sensitiveBody(body)) ev.requestObject = body;
          }
          if (this.wantsResponseObject) {
            const body = bodyForEvent(f.responseObject, rule.omitManagedFields);
            if (body !== undefined && !sensitiveBody(body)) ev.responseObject = body;
          }
          if (Object.keys(annotations).length) ev.annotations = annotations;
          let line: string;
          try {
            line = JSON.stringify(ev);
          } catch (err) {
            // A body JSON cannot carry (a cycle, a BigInt): the event without bodies.
            log.warn({ err, auditID: ev.auditID }, "audit event body not serializable");
            delete ev.requestObject;
            delete ev.responseObject;
            line = JSON.stringify(ev);
          }
          if (writer.enqueue(line)) written.inc({ level });
        },
      };
    },
    close: () => writer.close(),
  };
}
