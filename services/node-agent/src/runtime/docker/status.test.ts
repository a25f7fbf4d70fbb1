import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { containerStatus, dockerTime, later, type Instance } from "./status.js";
import { Demuxer, demuxAll } from "./demux.js";
import { imageAction, withTag } from "./images.js";

const base: Instance = {
  id: "abc",
  restartCount: 0,
  imageId: "sha256:1",
  status: "running",
  exitCode: 0,
  oomKilled: false,
  error: "",
  startedAt: "2026-01-01T00:00:00Z",
  finishedAt: "",
  removed: false,
};

describe("docker status mapping", () => {
  it('turns docker times into RFC 3339 seconds ("" for never)', () => {
    assert.equal(dockerTime("2026-11-24T22:35:34.123456789Z"), "2026-11-24T22:35:34Z");
    assert.equal(dockerTime("0001-01-01T00:00:00Z"), "");
    assert.equal(dockerTime(undefined), "");
  });

  it("maps running, exits (Completed, Error, OOMKilled), start failures and waiting", () => {
    const running = containerStatus({ name: "app", image: "img", restartCount: 0, current: base });
    assert.deepEqual(running.state, { running: { startedAt: base.startedAt } });
    assert.equal(running.ready, true);
    assert.equal(running.started, true);
    assert.equal(running.containerId, "docker://abc");
    assert.equal(running.imageId, "docker://sha256:1");

    const exited = (o: Partial<Instance>) =>
      containerStatus({ name: "app", image: "img", restartCount: 0, current: { ...base, status: "exited", finishedAt: "2026-01-01T00:01:00Z", ...o } });
    assert.equal(exited({ exitCode: 0 }).state?.terminated?.reason, "Completed");
    assert.equal(exited({ exitCode: 2 }).state?.terminated?.reason, "Error");
    assert.equal(exited({ exitCode: 137, oomKilled: true }).state?.terminated?.reason, "OOMKilled");
    assert.equal(exited({ exitCode: 2 }).ready, false);
    const cannot = exited({ status: "created", exitCode: 127, error: "exec: nope: not found" }).state?.terminated;
    assert.deepEqual([cannot?.reason, cannot?.exitCode, cannot?.message], ["ContainerCannotRun", 127, "exec: nope: not found"]);

    const waiting = containerStatus({
      name: "app",
      image: "img",
      restartCount: 1,
      previous: { ...base, status: "exited", exitCode: 1 },
      waiting: { reason: "ErrImagePull", message: "no" },
    });
    assert.deepEqual(waiting.state, { waiting: { reason: "ErrImagePull", message: "no" } });
    assert.equal(waiting.lastState?.terminated?.reason, "Error");
    assert.equal(waiting.containerId, "");
    assert.equal(waiting.restartCount, 1);
  });
});

describe("readings of one instance", () => {
  it("never step back: an older inspect answer does not undo an exit", () => {
    const exited = { ...base, status: "exited", exitCode: 1 };
    assert.equal(later(exited, base), exited);
    assert.equal(later(base, exited), exited);
    const oom = { ...exited, oomKilled: true };
    assert.equal(later(exited, oom), oom, "same stage: the newer reading");
    assert.equal(later(exited, { ...base, id: "other" }).id, "other", "another instance replaces");
    assert.equal(later({ ...exited, removed: true }, exited).removed, true);
  });
});

describe("docker log frames", () => {
  it("demultiplexes 8-byte-header frames, also when split across chunks", () => {
    const frame = (type: number, text: string) => {
      const body = Buffer.from(text);
      const head = Buffer.alloc(8);
      head[0] = type;
      head.writeUInt32BE(body.length, 4);
      return Buffer.concat([head, body]);
    };
    const all = Buffer.concat([frame(1, "out\n"), frame(2, "err\n"), frame(1, "more\n")]);
    assert.equal(demuxAll(all).toString(), "out\nerr\nmore\n");
    const d = new Demuxer();
    const parts = [all.subarray(0, 3), all.subarray(3, 13), all.subarray(13)].flatMap((c) => d.push(c).map((b) => b.toString()));
    assert.deepEqual(parts, ["out\n", "err\n", "more\n"]);
  });
});

describe("image pull policy", () => {
  it("uses, pulls or refuses as the kubelet does", () => {
    assert.equal(imageAction("IfNotPresent", true), "use");
    assert.equal(imageAction("IfNotPresent", false), "pull");
    assert.equal(imageAction("Never", true), "use");
    assert.equal(imageAction("Never", false), "never");
    assert.equal(imageAction("Always", true), "pull");
    assert.equal(withTag("busybox"), "busybox:latest");
    assert.equal(withTag("localhost:5000/x"), "localhost:5000/x:latest");
    assert.equal(withTag("local/busybox:1.35"), "local/busybox:1.35");
  });
});
