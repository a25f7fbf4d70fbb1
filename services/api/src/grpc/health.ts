// grpc.health.v1.Health (Check and Watch) following the api's readiness: the
// same checks as /readyz, asked every second; NOT_SERVING as soon as shutdown
// begins, so load balancers and clients watching it move away first.
import { HealthImplementation, type ServingStatus } from "grpc-health-check";
import { sleep } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Readiness } from "../health/readiness.js";

/** The service name of the api in the health service ("" is the server as a whole). */
export const API_SERVICE = "choreo.api.v1.Api";

/** The health service's state, kept equal to the readiness checks' outcome. */
export class GrpcHealth {
  readonly service = new HealthImplementation({ "": "NOT_SERVING", [API_SERVICE]: "NOT_SERVING" });
  private current: ServingStatus = "NOT_SERVING";

  constructor(
    private readonly readiness: Readiness | undefined,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  /** The status served now. */
  get status(): ServingStatus {
    return this.current;
  }

  /** Sets the status of the server and of the api service (watchers hear of a change). */
  set(status: ServingStatus): void {
    if (status === this.current) return;
    this.current = status;
    this.service.setStatus("", status);
    this.service.setStatus(API_SERVICE, status);
    this.log.info({ status }, "grpc health status changed");
  }

  /** Follows the readiness checks until the signal aborts; NOT_SERVING from then on. */
  async follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const report = this.readiness ? await this.readiness.report() : { ready: true, checks: [] };
      if (signal.aborted) break;
      if (!report.ready && this.current === "SERVING")
        this.log.warn({ failed: report.checks.filter((c) => !c.ok).map((c) => c.name) }, "grpc health: readiness checks failed");
      this.set(report.ready ? "SERVING" : "NOT_SERVING");
      await sleep(this.intervalMs, signal);
    }
    this.set("NOT_SERVING");
  }
}
