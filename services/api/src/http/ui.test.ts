// The web view's files under /ui/ (services/ui): public, with their content
// types, index.html for any other path under /ui/; the API beside them still
// wants a token.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { createGateway, type Gateway } from "./gateway.js";

describe("the web view under /ui/", () => {
  let gateway: Gateway;
  let base: string;
  before(async () => {
    const { registry } = await startMemoryRegistry();
    gateway = createGateway({ handlers: registry, log: silentLogger(), tokens: ["s3cret"] });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${httpPort}`;
  });
  after(() => gateway.close());

  it("serves index.html, app.js and app.css without a token, with their content types", async () => {
    for (const [path, type, text] of [
      ["/ui/", "text/html; charset=utf-8", '<div id="app">'],
      ["/ui/index.html", "text/html; charset=utf-8", "<title>choreo</title>"],
      ["/ui/app.js", "text/javascript; charset=utf-8", "Bearer"],
      ["/ui/app.css", "text/css; charset=utf-8", ".phase-Running"],
    ] as const) {
      const res = await fetch(base + path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("content-type"), type, path);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.ok((await res.text()).includes(text), path);
    }
  });

  it("answers index.html for unknown sub-paths and anything that is not a plain file name", async () => {
    for (const path of ["/ui/pod/default/web", "/ui/nope.js", "/ui/%2e%2e%2fpackage.json", "/ui/..%2f..%2fpackage.json", "/ui/a/b/c"]) {
      const res = await fetch(base + path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8", path);
      assert.ok((await res.text()).includes('<div id="app">'), path);
    }
  });

  it("redirects /ui to /ui/, answers HEAD without a body, refuses other methods", async () => {
    const r = await fetch(`${base}/ui`, { redirect: "manual" });
    assert.equal(r.status, 301);
    assert.equal(r.headers.get("location"), "/ui/");
    const head = await fetch(`${base}/ui/app.js`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.ok(Number(head.headers.get("content-length")) > 1000);
    assert.equal((await head.text()).length, 0);
    const post = await fetch(`${base}/ui/`, { method: "POST", body: "x" });
    assert.equal(post.status, 405);
  });

  it("leaves the API behind its token: the page's calls are authenticated as any", async () => {
    assert.equal((await fetch(`${base}/api/v1/pods`)).status, 401);
    assert.equal((await fetch(`${base}/uix`)).status, 401);
    const ok = await fetch(`${base}/api/v1/pods`, { headers: { Authorization: "Bearer s3cret" } });
    assert.equal(ok.status, 200);
  });
});
