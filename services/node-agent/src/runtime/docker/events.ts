import type { Readable } from "node:stream";
import type Dockerode from "dockerode";
import type { Logger } from "@choreo/kit/log";
import { LABELS } from "../../net/types.js";

/** One container event of the engine (the fields the runtime reads). */
export interface ContainerEvent {
  /** start, die, oom, destroy. */
  action: string;
  id: string;
  labels: Record<string, string>;
}

/** The actions that change what a pod's status shows. */
const ACTIONS = ["start", "die", "oom", "destroy"];

/**
 * Follows the engine's container events for one node's containers (by the
 * node label) and hands each to `onEvent`. When the stream breaks (the
 * engine restarted) it reconnects after `retryMs` and calls `onReconnect`
 * so the runtime re-reads what it may have missed.
 */
export class EventFollower {
  private stream: Readable | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private connected = false;

  constructor(
    private readonly docker: Dockerode,
    private readonly node: string,
    private readonly handlers: { onEvent: (e: ContainerEvent) => void; onReconnect: () => void },
    private readonly log: Logger,
    private readonly retryMs = 1000,
  ) {}

  /** Connects; resolves once the first subscription is in place (events after this are seen). */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Stops following (no reconnect). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stream?.destroy();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    try {
      const filters = { type: ["container"], event: ACTIONS, label: [`${LABELS.node}=${this.node}`] };
      const stream = (await this.docker.getEvents({ filters: JSON.stringify(filters) })) as Readable;
      if (this.stopped) {
        stream.destroy();
        return;
      }
      this.stream = stream;
      if (this.connected) this.handlers.onReconnect();
      this.connected = true;
      this.consume(stream);
    } catch (err) {
      this.log.warn({ err, node: this.node }, "docker events unavailable, retrying");
      this.retry();
    }
  }

  private consume(stream: Readable): void {
    let buffered = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) this.dispatch(line);
      }
    });
    const ended = (): void => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      if (!this.stopped) {
        this.log.warn({ node: this.node }, "docker events stream ended, reconnecting");
        this.retry();
      }
    };
    stream.on("end", ended);
    stream.on("close", ended);
    stream.on("error", ended);
  }

  private dispatch(line: string): void {
    try {
      const e = JSON.parse(line) as { Action?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
      if (!e.Action || !e.Actor?.ID) return;
      this.handlers.onEvent({ action: e.Action, id: e.Actor.ID, labels: e.Actor.Attributes ?? {} });
    } catch (err) {
      this.log.warn({ err, node: this.node }, "unreadable docker event");
    }
  }

  private retry(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.timer.unref();
  }
}
