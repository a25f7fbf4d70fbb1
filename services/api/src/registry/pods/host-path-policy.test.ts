import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { statusOf } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { allowedHostPaths, checkHostPaths, hostPathAllowed } from "./host-path-policy.js";

const pod = (p: string): Pod => ({ metadata: { name: "p" }, spec: { volumes: [{ name: "data", hostPath: { path: p, type: "" } }] } }) as unknown as Pod; // only the fields the check reads

describe("hostPath policy", () => {
  it("allows nothing by default and refuses with 403 Forbidden naming the volume", () => {
    assert.deepEqual(allowedHostPaths({}), []);
    assert.throws(
      () => checkHostPaths(pod("/etc"), []),
      (err: unknown) => statusOf(err).code === 403 && /hostPath volume "data" \(\/etc\) is not allowed/.test((err as Error).message),
    );
  });

  it("allows paths at or below a configured prefix, not beside it, and sees through ..", () => {
    const prefixes = allowedHostPaths({ CHOREO_ALLOWED_HOST_PATHS: "/srv/data/, /var/log,relative" });
    assert.deepEqual(prefixes, ["/srv/data", "/var/log"]);
    assert.ok(hostPathAllowed("/srv/data", prefixes));
    assert.ok(hostPathAllowed("/var/log/app", prefixes));
    assert.ok(!hostPathAllowed("/srv/database", prefixes));
    assert.ok(!hostPathAllowed("/var/log/../../etc", prefixes));
    checkHostPaths(pod("/var/log/app"), prefixes);
  });
});
