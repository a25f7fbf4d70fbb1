// CHOREO_NATS_URL as a NATS cluster's member list (`nats://a,nats://b`): the
// credentials found on any member, each member stripped or redacted alike,
// nats.js given the list; one URL and a Sentinel URL
// (`redis+sentinel://h:p,h:p/name`, one URL with several hosts) unchanged.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { natsConnectOptions, redactUrl, stripCredentials, urlCredentials, urlList, withCredentials } from "./secrets.js";

const LIST = "nats://choreo:s3cret@127.0.0.1:4001,nats://choreo:s3cret@127.0.0.1:4002, nats://choreo:s3cret@127.0.0.1:4003";

describe("URL lists", () => {
  it("splits, strips, redacts and adds credentials member by member", () => {
    assert.deepEqual(urlList(LIST).length, 3);
    assert.deepEqual(urlCredentials(LIST), { user: "choreo", password: "s3cret" });
    assert.deepEqual(urlCredentials("nats://127.0.0.1:4001,nats://a:b@127.0.0.1:4002"), { user: "a", password: "b" });
    assert.equal(stripCredentials(LIST), "nats://127.0.0.1:4001,nats://127.0.0.1:4002,nats://127.0.0.1:4003");
    assert.equal(redactUrl(LIST), "nats://choreo:***@127.0.0.1:4001,nats://choreo:***@127.0.0.1:4002,nats://choreo:***@127.0.0.1:4003");
    assert.ok(!redactUrl(LIST).includes("s3cret"));
    assert.equal(
      withCredentials("nats://127.0.0.1:4001,nats://127.0.0.1:4002", { user: "u", password: "p" }),
      "nats://u:p@127.0.0.1:4001,nats://u:p@127.0.0.1:4002",
    );
  });

  it("gives nats.js the members as a list, the credentials as options", () => {
    assert.deepEqual(natsConnectOptions(LIST), {
      servers: ["nats://127.0.0.1:4001", "nats://127.0.0.1:4002", "nats://127.0.0.1:4003"],
      user: "choreo",
      pass: "s3cret",
      inboxPrefix: "_INBOX_choreo",
    });
    assert.deepEqual(natsConnectOptions("nats://127.0.0.1:4001,nats://127.0.0.1:4002"), { servers: ["nats://127.0.0.1:4001", "nats://127.0.0.1:4002"] });
  });

  it("leaves one URL and a Sentinel URL as they were", () => {
    assert.deepEqual(natsConnectOptions("nats://a:b@127.0.0.1:4001").servers, "nats://127.0.0.1:4001");
    const sentinel = "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/choreo";
    assert.equal(redactUrl(sentinel), sentinel);
  });
});
