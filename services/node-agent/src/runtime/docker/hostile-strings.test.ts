// test-tier: servers
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { describe, it } from "node:test";
import { hostileEnv, hostileStrings, nulList } from "../hostile-strings.js";
import { cleanup, dockerUnavailable, makePod, newRuntime, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();

// Docker takes argv, env, working dir and hostname as API fields: this proves nothing of them is ever parsed on the host.
describe("DockerRuntime hostile strings", { skip }, () => {
  it("hostile strings in every user field reach the container verbatim and run nothing on the host", async () => {
    const node = testNode("hostile");
    const { rt, stateDir } = await newRuntime(node);
    const h = hostileStrings();
    try {
      const env = hostileEnv(h);
      const argv = ["sh", "-c", "sleep 300; :", ...h.values];
      const pod = makePod(
        "hostile",
        { hostname: h.hostname, containers: [sh("c", "", { command: argv.slice(0, 3), args: h.values, env, workingDir: h.workingDir })] },
        node,
      );
      const uid = pod.metadata!.uid;
      const st = await rt.startPod(pod);
      assert.ok(st.containerStatuses[0]?.state?.running, "running");
      const cmdline = await rt.exec(uid, "c", ["cat", "/proc/1/cmdline"], 5000);
      // PID 1 is Docker's init (`docker-init -- argv…`) when the runtime asks for one.
      const got = nulList(cmdline.output);
      assert.deepEqual(got[0]?.endsWith("docker-init") ? got.slice(got.indexOf("--") + 1) : got, argv, "the command's argv, verbatim");
      const environ = nulList((await rt.exec(uid, "c", ["cat", "/proc/1/environ"], 5000)).output);
      for (const e of env) assert.ok(environ.includes(`${e.name}=${e.value}`), `env ${JSON.stringify(e.name)} verbatim`);
      assert.deepEqual(await rt.exec(uid, "c", ["sh", "-c", "pwd; hostname"], 5000), { exitCode: 0, output: `${h.workingDir}\n${h.hostname}\n` });
      const args = await rt.exec(uid, "c", ["sh", "-c", 'printf "%s\\0" "$@"', "sh", ...h.values], 5000);
      assert.deepEqual(nulList(args.output), h.values, "an exec's argv, verbatim");
      assert.notEqual((await rt.exec(uid, "c", h.execCommand, 5000)).exitCode, 0, "an exec whose argv[0] looks like an option runs nothing");
      assert.equal((await rt.exec(uid, "c", ["sh", "-c", `test -e '${h.marker}'`], 5000)).exitCode, 1, "nothing ran in the container either");
      assert.equal(existsSync(h.marker), false, "nothing ran on the host");
      await rt.stopPod({ uid, namespace: node, name: "hostile" }, 0);
    } finally {
      rmSync(h.marker, { force: true });
      await rt.close?.();
      await cleanup(node, stateDir);
    }
  });
});
