import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseSentinelUrl } from "./redis-connect.js";

describe("parseSentinelUrl", () => {
  it("reads the sentinels and the master name", () => {
    assert.deepEqual(parseSentinelUrl("redis+sentinel://127.0.0.1:26379,10.0.0.2:26380/choreo"), {
      sentinels: [
        { host: "127.0.0.1", port: 26379 },
        { host: "10.0.0.2", port: 26380 },
      ],
      name: "choreo",
    });
  });
  it("takes the data nodes' credentials from the userinfo, and the default port", () => {
    assert.deepEqual(parseSentinelUrl("redis+sentinel://api:p%40ss@s1,[::1]:5/m"), {
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "::1", port: 5 },
      ],
      name: "m",
      credentials: { user: "api", password: "p@ss" },
    });
  });
  it("leaves other URLs alone and refuses a malformed sentinel URL", () => {
    assert.equal(parseSentinelUrl("redis://127.0.0.1:6379"), undefined);
    assert.throws(() => parseSentinelUrl("redis+sentinel://127.0.0.1:26379"), /expected redis\+sentinel:\/\/host:port/);
    assert.throws(() => parseSentinelUrl("redis+sentinel://h:99999/m"), /bad sentinel address/);
  });
});
