// Which peer nodes this node can reach, judged locally and quickly: a TCP
// connect to each peer's InternalIP every 250 ms. The kernel answers it —
// a SYN-ACK when something listens, a RST when nothing does — so a peer
// whose agent is down (its pods still serving) still counts as reachable;
// only silence (a timeout, or EHOSTUNREACH/ENETUNREACH) is a miss. Three
// misses in a row → unreachable, two answers in a row → reachable again.
// The service proxy leaves an unreachable peer's endpoints out of its rules
// (proxy/rules.ts `leaveOut`); the control plane's node lifecycle still
// decides evictions on its own, later.
import net from "node:net";
import type { Registry } from "prom-client";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { getOrCreateCounter, getOrCreateGauge } from "@choreo/kit/metrics";

/** A peer to probe: its Node's name and InternalIP. */
export interface ProbeTarget {
  node: string;
  ip: string;
}

/** One peer's run of answers or misses, and the verdict. */
export interface PeerState {
  unreachable: boolean;
  /** Misses in a row (0 after an answer). */
  misses: number;
  /** Answers in a row (0 after a miss). */
  answers: number;
}

/** How many misses make a peer unreachable, and how many answers reachable again. */
export interface Thresholds {
  misses: number;
  answers: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = { misses: 3, answers: 2 };

/** The TCP port probed: nothing needs to listen there (a RST is an answer); kube-proxy's health port number, unused by choreo. */
export const PEER_PROBE_PORT = 10256;

/** A peer's state after one probe (pure); a new peer starts reachable. */
export function observe(s: PeerState | undefined, answered: boolean, t: Thresholds = DEFAULT_THRESHOLDS): PeerState {
  const prev = s ?? { unreachable: false, misses: 0, answers: 0 };
  if (answered) {
    const answers = prev.answers + 1;
    return { unreachable: prev.unreachable && answers < t.answers, misses: 0, answers };
  }
  const misses = prev.misses + 1;
  return { unreachable: prev.unreachable || misses >= t.misses, misses, answers: 0 };
}

/**
 * The peers whose endpoints are left out (pure): the unreachable ones —
 * unless more than half of at least two probed peers are unreachable at
 * once, which says more about this node (cut off itself, its own firewall,
 * its event loop stalled) than about them: then none, so a node cut off
 * does not shut out everybody else and has nothing to undo when it returns.
 */
export function leftOutPeers(states: ReadonlyMap<string, PeerState>): { nodes: Set<string>; selfCut: boolean } {
  const down = [...states].filter(([, s]) => s.unreachable).map(([n]) => n);
  const selfCut = states.size >= 2 && down.length * 2 > states.size;
  return { nodes: selfCut ? new Set() : new Set(down), selfCut };
}

/**
 * Resolves true when `ip:port` answers a TCP connect — connected or refused
 * (RST) — within `timeoutMs`, false on silence or an unreachable host. The
 * verdict of a timeout waits one turn of the event loop (setImmediate runs
 * after the poll phase): an answer that arrived while the loop was busy is
 * taken, not counted as a miss.
 */
export function tcpAnswers(ip: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let done = false;
    const sock = net.connect({ host: ip, port });
    const finish = (ok: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    sock.once("connect", () => finish(true));
    sock.once("error", (err: NodeJS.ErrnoException) => finish(err.code === "ECONNREFUSED" || err.code === "ECONNRESET"));
    const timer = setTimeout(() => setImmediate(() => finish(false)), timeoutMs);
  });
}

/** Options of {@link PeerProbe}. */
export interface PeerProbeOptions {
  node: string;
  log: Logger;
  registry?: Registry;
  /** The peers worth probing now, asked every round (the routed peers hosting endpoints). */
  targets: () => readonly ProbeTarget[];
  port?: number;
  /** Between rounds (default 250 ms); longer when there are more targets than `maxPerSecond` allows. */
  intervalMs?: number;
  /** A probe's wait for an answer (default 4/5 of the interval: 200 ms). */
  timeoutMs?: number;
  /** At most this many probes a second, whatever the number of peers (default 100: ~9 ms of CPU a second at ~90 µs a probe). */
  maxPerSecond?: number;
  thresholds?: Thresholds;
  /** The probe itself (tests replace it). */
  probe?: (ip: string, port: number, timeoutMs: number) => Promise<boolean>;
}

/**
 * Probes each target every round and keeps a verdict per peer; tells its
 * listeners when the set of peers to leave out changes. Logs each peer's
 * transition (and this node's own cut-off guess) and exports them as
 * metrics. Peers no longer targeted are forgotten (reachable).
 */
export class PeerProbe implements Runnable {
  readonly name = "peer-probe";
  private readonly states = new Map<string, PeerState>();
  private left = new Set<string>();
  private selfCut = false;
  private readonly listeners: (() => void)[] = [];
  private readonly gauge?: (n: number) => void;
  private readonly count?: (outcome: "answered" | "missed") => void;
  /** Rounds done (tests wait on it). */
  rounds = 0;

  constructor(private readonly opts: PeerProbeOptions) {
    if (opts.registry) {
      const g = getOrCreateGauge(
        opts.registry,
        "choreo_node_peers_unreachable",
        "Peer nodes this node's probes find unreachable (3 missed TCP connects in a row)",
        ["node"],
      );
      this.gauge = (n) => g.set({ node: opts.node }, n);
      const c = getOrCreateCounter(opts.registry, "choreo_node_peer_probes_total", "TCP probes of peer nodes by outcome", ["node", "outcome"]);
      this.count = (outcome) => c.inc({ node: opts.node, outcome });
    }
  }

  /** The peers whose endpoints the service proxy leaves out now. */
  unreachable(): ReadonlySet<string> {
    return this.left;
  }

  /** Calls `fn` whenever {@link unreachable} changes. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  async start(signal: AbortSignal): Promise<void> {
    const interval = this.opts.intervalMs ?? 250;
    const maxPerSecond = this.opts.maxPerSecond ?? 100;
    while (!signal.aborted) {
      const t0 = Date.now();
      const targets = this.opts.targets();
      await this.round(targets);
      const spread = Math.ceil((targets.length / maxPerSecond) * 1000);
      await sleep(Math.max(interval, spread) - (Date.now() - t0), signal);
    }
  }

  /** Probes every target once (concurrently), then updates the verdicts. */
  async round(targets: readonly ProbeTarget[]): Promise<void> {
    const probe = this.opts.probe ?? tcpAnswers;
    const port = this.opts.port ?? PEER_PROBE_PORT;
    const timeout = this.opts.timeoutMs ?? Math.round((this.opts.intervalMs ?? 250) * 0.8);
    const answers = await Promise.all(targets.map((t) => probe(t.ip, port, timeout).catch(() => false)));
    const log = this.opts.log;
    const wanted = new Set(targets.map((t) => t.node));
    for (const n of this.states.keys()) if (!wanted.has(n)) this.states.delete(n);
    targets.forEach((t, i) => {
      const answered = answers[i] ?? false;
      this.count?.(answered ? "answered" : "missed");
      const before = this.states.get(t.node);
      const next = observe(before, answered, this.opts.thresholds);
      this.states.set(t.node, next);
      if (next.unreachable && !before?.unreachable) {
        log.warn({ peer: t.node, address: t.ip, misses: next.misses }, "peer unreachable: its endpoints left out of this node's service rules");
      } else if (!next.unreachable && before?.unreachable) {
        log.info({ peer: t.node, address: t.ip, answers: next.answers }, "peer reachable again: its endpoints back in this node's service rules");
      }
    });
    this.rounds++;
    const { nodes, selfCut } = leftOutPeers(this.states);
    if (selfCut !== this.selfCut) {
      const down = [...this.states.values()].filter((s) => s.unreachable).length;
      if (selfCut) log.warn({ unreachable: down, probed: this.states.size }, "most peers unreachable at once: this node's side, no endpoint left out");
      else log.info({ unreachable: down, probed: this.states.size }, "most peers answer again: unreachable peers' endpoints left out");
      this.selfCut = selfCut;
    }
    this.gauge?.([...this.states.values()].filter((s) => s.unreachable).length);
    if (nodes.size !== this.left.size || [...nodes].some((n) => !this.left.has(n))) {
      this.left = nodes;
      for (const fn of this.listeners) fn();
    }
  }
}
