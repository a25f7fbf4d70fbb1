// test-tier: servers
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import type { StreamSession } from "../runtime.js";
import { BUSYBOX, rig, trackPids, waitStatus, type TestRig } from "./test-helpers.js";

/** Everything a stream printed so far, as one string. */
function collect(s: NodeJS.ReadableStream | undefined): () => string {
  const chunks: Buffer[] = [];
  s?.on("data", (b: Buffer) => chunks.push(b));
  return () => Buffer.concat(chunks).toString("utf8");
}

/** Reads lines from stdin and answers each on stdout and stderr; says bye and exits 3 at EOF. */
const ECHO = ["sh", "-c", 'while read -r l; do echo "got $l"; echo "err $l" >&2; done; echo bye; exit 3'];

describe("ProcessRuntime attach", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  async function echoPod(name: string, extra: Record<string, unknown>, track = true): Promise<string> {
    r = await rig();
    const pod = r.pod(name, { containers: [{ name: "c", image: BUSYBOX, command: ECHO, ...extra }] });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    if (track) await trackPids(r, uid, "c");
    return uid;
  }

  async function attach(uid: string): Promise<{ s: StreamSession; out: () => string; err: () => string }> {
    const s = await r!.rt.attach(uid, "c", { stdin: true, tty: false });
    return { s, out: collect(s.stdout), err: collect(s.stderr) };
  }

  it("stdin: the container's stdin, its stdout and stderr apart from now on; a detach or stdin's end ends the attach and leaves the container running", async () => {
    const uid = await echoPod("att", { stdin: true });
    const a = await attach(uid);
    a.s.stdin!.write("one\n");
    await waitFor(() => a.out() === "got one\n" && a.err() === "err one\n", { timeoutMs: 30_000, message: `the answers (${a.out()} / ${a.err()})` });
    a.s.kill();
    assert.equal(await a.s.exit, 0, "a detach ends with 0");
    const b = await attach(uid);
    b.s.stdin!.write("two\n");
    await waitFor(() => b.out() === "got two\n", { timeoutMs: 30_000, message: `the second answer, not the first (${b.out()})` });
    b.s.stdin!.end();
    assert.equal(await b.s.exit, 0, "stdin's end ends the attach (a detach)");
    const c = await attach(uid);
    c.s.stdin!.write("three\n");
    await waitFor(() => c.out() === "got three\n", { timeoutMs: 30_000, message: "stdin's end of the last attach did not close the container's" }).catch(
      (err: unknown) => {
        throw new Error(`${String(err)}: ${JSON.stringify(c.out())}, ${JSON.stringify(r!.rt.podStatus(uid)?.containerStatuses[0])}`);
      },
    );
    c.s.kill();
    assert.equal(await c.s.exit, 0);
    assert.ok(r!.rt.podStatus(uid)?.containerStatuses[0]?.state?.running, "the container runs on");
  });

  it("stdinOnce: the attach's stdin end is the command's EOF; the session ends with the container's exit", async () => {
    const uid = await echoPod("once", { stdin: true, stdinOnce: true });
    const a = await attach(uid);
    a.s.stdin!.end("hi\n");
    assert.equal(await a.s.exit, 3, "the container's exit code");
    assert.equal(a.out(), "got hi\nbye\n");
    assert.equal(a.err(), "err hi\n");
    await waitStatus(
      r!,
      uid,
      "c",
      (s) => s.state?.terminated?.exitCode === 3 || (s.lastState?.terminated?.exitCode === 3 && s.restartCount > 0),
      "the container ended with 3",
    );
    // The restarted run has a stdin of its own: the next attach feeds it.
    await r!.rt.restartContainer(uid, "c");
    await waitStatus(r!, uid, "c", (s) => s.restartCount === 1 && s.state?.running !== undefined, "running again");
    const b = await attach(uid);
    b.s.stdin!.end("again\n");
    assert.equal(await b.s.exit, 3);
    assert.equal(b.out(), "got again\nbye\n");
  });

  it("no stdin in the spec: the command reads EOF at once; attach shows its output; a tty container is refused", async () => {
    const uid = await echoPod("nostdin", {}, false);
    await waitStatus(r!, uid, "c", (s) => s.state?.terminated?.exitCode === 3 || s.restartCount > 0, "EOF at once: exits 3");
    r = r!; // same rig
    const tty = r.pod("tty", { containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"], stdin: true, tty: true }] });
    await r.rt.startPod(tty);
    await trackPids(r, tty.metadata!.uid, "c");
    await assert.rejects(r.rt.attach(tty.metadata!.uid, "c", { stdin: true, tty: true }), /attach to a tty container is not supported by the process runtime/);
  });
});
