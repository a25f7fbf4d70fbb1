import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { callSignal, withCallSignal } from "../../handlers/call-signal.js";
import { inEphemeralContainersWrite, throughEphemeralContainers } from "../pods/ephemeral-containers.js";
import { requestUser, withAdmissionContext } from "./admission-context.js";
import { isDryRun, withDryRun } from "./dry-run.js";
import { currentScope } from "./request-scope.js";
import { withManager, withoutManager } from "./managed-fields-store.js";

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("the request scope", () => {
  it("nests: a part set inside another scope keeps the other parts, and each ends with its call", async () => {
    const ac = new AbortController();
    const seen = await withCallSignal(ac.signal, () =>
      withAdmissionContext({ user: "alice", warn: () => undefined }, () =>
        withDryRun(true, () =>
          withManager("kubectl", "pods", "", async () => {
            await tick();
            const inner = await throughEphemeralContainers(async () => {
              await tick();
              return { eph: inEphemeralContainersWrite(), manager: currentScope()?.manager?.manager };
            });
            const without = await withoutManager(async () => ({ manager: currentScope()?.manager, dryRun: isDryRun(), user: requestUser() }));
            return { inner, without, signal: callSignal() === ac.signal, user: requestUser(), dryRun: isDryRun(), eph: inEphemeralContainersWrite() };
          }),
        ),
      ),
    );
    assert.deepEqual(seen, {
      inner: { eph: true, manager: "kubectl" },
      without: { manager: undefined, dryRun: true, user: "alice" },
      signal: true,
      user: "alice",
      dryRun: true,
      eph: false,
    });
    assert.equal(currentScope(), undefined, "nothing in scope after the call");
  });

  it("keeps concurrent requests apart", async () => {
    const one = (user: string, dry: boolean) =>
      withAdmissionContext({ user, warn: () => undefined }, () =>
        withDryRun(dry, async () => {
          await tick();
          return `${requestUser()}:${isDryRun()}`;
        }),
      );
    assert.deepEqual(await Promise.all([one("a", true), one("b", false), one("c", true)]), ["a:true", "b:false", "c:true"]);
  });

  it("a false dry run or an absent manager changes nothing in scope", async () => {
    const r = await withDryRun(true, () => withDryRun(false, () => withManager(undefined, "pods", "", async () => isDryRun())));
    assert.equal(r, true);
  });
});
