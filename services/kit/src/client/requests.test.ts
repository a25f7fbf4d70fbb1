// The api client's request-reply over one reply inbox per connection
// (requests.ts), against a real nats-server: answers reach their own
// request, no responders and timeouts fail the request they belong to, a
// closed connection fails what was waiting, and a refusal is decoded without
// the answer's object (`bindOnly`).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { Reply } from "../gen/choreo/api/v1/api.js";
import { Pod } from "../gen/choreo/core/v1/core.js";
import { Status } from "../gen/choreo/meta/v1/meta.js";
import { connectBus } from "../bus/stream.js";
import { apiSubject } from "../bus/subjects.js";
import { startNats, type ServerHandle } from "../process/servers.js";
import { ApiError, conflict } from "../api/errors.js";
import { wrap } from "../api/kinds.js";
import { ApiClient, statusOfReply } from "./api-client.js";
import { NoRespondersError, requestOne, RequestTimeoutError } from "./requests.js";

describe("requestOne", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let server: NatsConnection;

  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "requests-test");
    server = await connectBus(nats.url, "requests-test-server");
    // Answers each request with its own data reversed, late for the first ones, so answers come back out of order.
    server.subscribe("echo", {
      callback: (_e, m) => {
        const n = Number(new TextDecoder().decode(m.data));
        setTimeout(() => m.respond(new TextEncoder().encode(`answer ${n}`)), n < 5 ? 50 : 0);
      },
    });
    server.subscribe("silent", { callback: () => undefined });
    await server.flush();
  });
  after(async () => {
    await nc?.close();
    await server?.close();
    await nats?.stop();
  });

  it("hands each request its own answer, whatever their order", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => requestOne(nc, "echo", new TextEncoder().encode(String(i)), 5_000).then((m) => new TextDecoder().decode(m.data))),
    );
    assert.deepEqual(
      answers,
      Array.from({ length: 20 }, (_, i) => `answer ${i}`),
    );
  });

  it("fails a request nobody listens to with no responders, and one nobody answers with a timeout", async () => {
    await assert.rejects(
      requestOne(nc, "nobody.here", new Uint8Array(), 5_000),
      (err: Error) => err instanceof NoRespondersError && /no responders/.test(err.message),
    );
    await assert.rejects(requestOne(nc, "silent", new Uint8Array(), 100), (err: Error) => err instanceof RequestTimeoutError && /timeout/.test(err.message));
    // The connection's inbox still serves the next request.
    assert.equal(new TextDecoder().decode((await requestOne(nc, "echo", new TextEncoder().encode("7"), 5_000)).data), "answer 7");
  });

  it("the api client maps them to 503 and 504 ApiErrors as before", async () => {
    const client = new ApiClient(nc, { timeoutMs: 5_000 });
    await assert.rejects(client.get("pods", "default", "p"), (err: ApiError) => err.code === 503 && /no responders/.test(err.message));
  });

  it("a closed connection fails the requests waiting on it", async () => {
    const own = await connectBus(nats.url, "requests-test-closing");
    const waiting = requestOne(own, "silent", new Uint8Array(), 10_000);
    await own.flush();
    await own.close();
    await assert.rejects(waiting, /closed/);
    await assert.rejects(requestOne(own, "echo", new TextEncoder().encode("1"), 1_000), /closed/i);
  });
});

describe("statusOfReply and bindOnly", () => {
  let nats: ServerHandle;
  let nc: NatsConnection;
  let api: NatsConnection;

  before(async () => {
    nats = await startNats();
    nc = await connectBus(nats.url, "bind-only-test");
    api = await connectBus(nats.url, "bind-only-test-api");
    // A bind of pod "taken" is refused with a conflict; the others answer the bound pod.
    api.subscribe(apiSubject("bind"), {
      callback: (_e, m) => {
        const refused = new TextDecoder().decode(m.data).includes("taken");
        const pod = Pod.fromPartial({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "default" } });
        m.respond(
          Reply.encode(
            refused
              ? { result: { $case: "status", value: conflict("pods", "taken", "the node is full").status } }
              : { result: { $case: "object", value: wrap("pod", pod) } },
          ).finish(),
        );
      },
    });
    await api.flush();
  });
  after(async () => {
    await nc?.close();
    await api?.close();
    await nats?.stop();
  });

  it("finds a refusal's Status and nothing in an answered object", () => {
    const status = conflict("pods", "p", "modified").status;
    assert.deepEqual(statusOfReply(Reply.encode({ result: { $case: "status", value: status } }).finish()), Status.decode(Status.encode(status).finish()));
    const pod = Pod.fromPartial({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "default" } });
    assert.equal(statusOfReply(Reply.encode({ result: { $case: "object", value: wrap("pod", pod) } }).finish()), undefined);
    assert.equal(statusOfReply(new Uint8Array()), undefined);
  });

  it("bindOnly resolves on a bind the api answered with the pod, and throws the refusal's ApiError", async () => {
    const client = new ApiClient(nc, { timeoutMs: 5_000 });
    await client.bindOnly("default", "p", "node-1", "uid-p");
    await assert.rejects(
      client.bindOnly("default", "taken", "node-1"),
      (err: ApiError) => err instanceof ApiError && err.code === 409 && err.reason === "Conflict",
    );
    // bind still answers the pod.
    const bound = await client.bind("default", "p", "node-1");
    assert.equal(bound.kind?.$case, "pod");
  });
});
