// An application's client for the chaos suite: from inside one test host
// (its network namespace, where that node's service proxy rules live) it
// asks a Service's ClusterIP every 100 ms with busybox wget — the local
// image's, which the process runtime's pods run too — and records every
// answer, so that a fault's cost is counted in application requests.
import { execFile } from "node:child_process";
import path from "node:path";
import type { TestHosts } from "../support/test-hosts.js";

const BUSYBOX = "/var/lib/choreo/images/local_busybox_1.35/rootfs/bin/busybox";

/** One request: when it was sent, whether it was answered, and with what (the pod's name) or why not. */
export interface Answer {
  at: number;
  ok: boolean;
  detail: string;
}

export class ServiceClient {
  private readonly answers: Answer[] = [];
  private running: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly hosts: TestHosts,
    private readonly host: number,
    private readonly url: string,
  ) {}

  start(): void {
    this.running = (async () => {
      while (!this.stopping) {
        const at = Date.now();
        this.answers.push({ at, ...(await this.ask()) });
        await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - at))));
      }
    })();
  }

  private ask(): Promise<{ ok: boolean; detail: string }> {
    const netns = path.join("/run/netns", this.hosts.hosts[this.host]!.netns);
    return new Promise((resolve) => {
      // busybox wget has no working timeout flag (-T crashes it): the process is killed after 2 s.
      execFile("nsenter", [`--net=${netns}`, BUSYBOX, "wget", "-q", "-O", "-", this.url], { timeout: 2_000, encoding: "utf8" }, (err, stdout, stderr) => {
        if (err) resolve({ ok: false, detail: (stderr || err.message).trim().split("\n")[0] ?? "" });
        else resolve({ ok: true, detail: stdout.trim() });
      });
    });
  }

  /** The requests sent from `from` to `to` (ms since the epoch). */
  between(from: number, to: number): Answer[] {
    return this.answers.filter((a) => a.at >= from && a.at < to);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }
}
