// The ClusterRole aggregation controller (Kubernetes'
// pkg/controller/clusterroleaggregation): a ClusterRole with an
// aggregationRule gets as its rules the union, without duplicates, of the
// rules of every other ClusterRole its selectors match (by name order), kept
// current as roles come, change and go. Any ClusterRole's change enqueues
// every aggregated role (level triggered: each sync recomputes from the cache).
import { isConflict, isNotFound, wrap } from "@choreo/kit";
import { selectorFromLabelSelector, SelectorParseError } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, type Result } from "@choreo/kit/controller";
import type { ClusterRole, PolicyRule } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import type { Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";

/** Options of {@link AggregationController}. */
export interface AggregationControllerOptions {
  client: Pick<ApiClient, "update">;
  clusterRoles: Cache<ClusterRole>;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

const ruleKey = (r: PolicyRule): string => JSON.stringify([r.verbs, r.apiGroups, r.resources, r.resourceNames, r.nonResourceUrls]);

/** The rules an aggregated role should hold: those of the roles its selectors match, in name order, each once. */
export function aggregatedRules(role: ClusterRole, all: readonly ClusterRole[]): PolicyRule[] | undefined {
  const selectors = role.aggregationRule?.clusterRoleSelectors;
  if (!selectors) return undefined;
  const byName = [...all].sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
  const rules: PolicyRule[] = [];
  const seen = new Set<string>();
  for (const s of selectors) {
    let sel;
    try {
      sel = selectorFromLabelSelector(s);
    } catch (err) {
      if (err instanceof SelectorParseError) continue;
      throw err;
    }
    for (const other of byName) {
      if (other.metadata?.name === role.metadata?.name || !sel.matches(other.metadata?.labels ?? {})) continue;
      for (const r of other.rules) {
        const k = ruleKey(r);
        if (seen.has(k)) continue;
        seen.add(k);
        rules.push(r);
      }
    }
  }
  return rules;
}

export class AggregationController implements Runnable {
  readonly name = "clusterrole-aggregation-controller";
  readonly controller: Controller;
  private readonly log: Logger;

  constructor(private readonly opts: AggregationControllerOptions) {
    this.log = opts.log.child({ controller: "clusterrole-aggregation" });
    this.controller = new Controller({
      name: "clusterrole-aggregation",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 1,
      log: opts.log,
      registry: opts.registry,
    });
    // Any role may be matched by any aggregated role: each change requeues them all.
    const enqueueAll = (): void => {
      for (const r of opts.clusterRoles.list()) if (r.aggregationRule && r.metadata) this.controller.enqueue(r.metadata.name);
    };
    opts.clusterRoles.addEventHandler({ onAdd: enqueueAll, onUpdate: enqueueAll, onDelete: enqueueAll });
  }

  async start(signal: AbortSignal): Promise<void> {
    await this.opts.clusterRoles.waitForSync(signal);
    await this.controller.start(signal);
  }

  async reconcile(key: string): Promise<Result> {
    const role = this.opts.clusterRoles.get(key);
    if (!role?.metadata || role.metadata.deletionTimestamp) return done();
    const rules = aggregatedRules(role, this.opts.clusterRoles.list());
    if (!rules) return done();
    if (JSON.stringify(rules.map(ruleKey)) === JSON.stringify(role.rules.map(ruleKey))) return done();
    try {
      await this.opts.client.update(wrap("clusterRole", { ...role, rules }));
      this.log.info({ clusterRole: key, rules: rules.length }, "aggregated rules written");
    } catch (err) {
      // A newer role is on its way through the informer, and with it another sync.
      if (!isConflict(err) && !isNotFound(err)) throw err;
      this.log.debug({ clusterRole: key }, "aggregated role changed meanwhile");
    }
    return done();
  }
}
