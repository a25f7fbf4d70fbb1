// test-tier: servers
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import type { StreamSession } from "../runtime.js";
import { BUSYBOX, rig, trackPids, type TestRig } from "./test-helpers.js";

/** Everything a session printed so far, as one string. */
function collect(s: StreamSession): () => string {
  const chunks: Buffer[] = [];
  s.stdout.on("data", (b: Buffer) => chunks.push(b));
  return () => Buffer.concat(chunks).toString("utf8");
}

describe("ProcessRuntime exec streams", () => {
  let r: TestRig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  /** A running busybox pod; its uid. */
  async function shellPod(name: string): Promise<string> {
    r = await rig();
    const pod = r.pod(name, { containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "300"] }] });
    const uid = pod.metadata!.uid;
    await r.rt.startPod(pod);
    await trackPids(r, uid, "c");
    return uid;
  }

  it("with a tty: an interactive shell on a terminal of its own, its size set and changed, its exit code", async () => {
    const uid = await shellPod("tty");
    const s = await r!.rt.execStream(uid, "c", ["sh"], { stdin: true, tty: true });
    assert.equal(s.stderr, undefined, "a tty has no stderr");
    const out = collect(s);
    s.resize(100, 30);
    // The shell's prompt first (busybox then asks the terminal where its cursor is, and redraws it on SIGWINCH): a terminal before anything is typed.
    await waitFor(() => out().includes("/ # "), { timeoutMs: 30_000, message: "a prompt" }).catch((err: unknown) => {
      throw new Error(`${String(err)}; the terminal showed ${JSON.stringify(out())}`);
    });
    s.stdin!.write("stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-a-tty; echo $((6*7))\n");
    // The terminal echoes what is typed and turns "\n" into "\r\n".
    await waitFor(() => /^42\r$/m.test(out()), { timeoutMs: 30_000, message: "the answer" });
    assert.match(out(), /^30 100\r$/m, "the size set before the shell asked");
    assert.match(out(), /^all-a-tty\r$/m, "stdin, stdout and stderr are the terminal");
    s.resize(120, 40);
    s.stdin!.write("stty size\n");
    await waitFor(() => /^40 120\r$/m.test(out()), { timeoutMs: 30_000, message: "the new size" });
    s.stdin!.write("exit 7\n");
    assert.equal(await s.exit, 7);
  });

  it("with a tty: stdout and stderr come merged on the terminal; no stdin is no input; a missing command is 127", async () => {
    const uid = await shellPod("merged");
    const s = await r!.rt.execStream(uid, "c", ["sh", "-c", "echo out; echo err >&2; [ -t 0 ] && echo tty-in; exit 3"], { stdin: false, tty: true });
    const out = collect(s);
    assert.equal(await s.exit, 3);
    assert.equal(out(), "out\r\nerr\r\ntty-in\r\n");
    const missing = await r!.rt.execStream(uid, "c", ["/no/such/binary"], { stdin: false, tty: true });
    const said = collect(missing);
    assert.equal(await missing.exit, 127);
    assert.match(said(), /exec \/no\/such\/binary: No such file or directory/);
  });

  it("with a tty: kill ends the session and the command in the container with it", async () => {
    const uid = await shellPod("killed");
    const s = await r!.rt.execStream(uid, "c", ["sh", "-c", "echo started; exec sleep 4242"], { stdin: true, tty: true });
    const out = collect(s);
    await waitFor(() => out().includes("started"), { timeoutMs: 30_000, message: "the command started" });
    const running = async () => (await r!.rt.exec(uid, "c", ["ps", "-o", "args"], 10_000)).output.includes("sleep 4242");
    assert.equal(await running(), true, "the command runs in the container");
    s.kill();
    assert.equal(await s.exit, 137, "choreo-exec was killed");
    await waitFor(async () => !(await running()), { timeoutMs: 30_000, message: "the command in the container is gone too" });
  });

  it("without a tty: stdout and stderr apart, stdin piped, resize ignored", async () => {
    const uid = await shellPod("pipes");
    const s = await r!.rt.execStream(uid, "c", ["sh", "-c", "cat; [ -t 0 ] || echo no-tty; echo err >&2; exit 2"], { stdin: true, tty: false });
    const out = collect(s);
    const errChunks: Buffer[] = [];
    s.stderr!.on("data", (b: Buffer) => errChunks.push(b));
    s.resize(80, 24);
    s.stdin!.end("piped\n");
    assert.equal(await s.exit, 2);
    assert.equal(out(), "piped\nno-tty\n");
    assert.equal(Buffer.concat(errChunks).toString("utf8"), "err\n");
  });
});
