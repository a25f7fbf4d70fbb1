import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readManifests, splitDocuments } from "./manifests.js";

const names = (ms: { object: Record<string, unknown> }[]): string[] =>
  ms.map((m) => `${String(m.object["kind"])}/${String((m.object["metadata"] as { name: string }).name)}`);

describe("splitDocuments", () => {
  it("splits multi-document YAML and skips empty documents", () => {
    const text = "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n...\n";
    assert.deepEqual(names(splitDocuments(text, "x.yaml")), ["Pod/a", "Service/b"]);
  });
  it("reads JSON", () => {
    assert.deepEqual(names(splitDocuments('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"}}', "x.json")), ["Pod/j"]);
  });
  it("unpacks List and *List kinds, nested", () => {
    const list = {
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Pod", metadata: { name: "p1" } },
        { apiVersion: "v1", kind: "PodList", items: [{ apiVersion: "v1", kind: "Pod", metadata: { name: "p2" } }] },
      ],
    };
    assert.deepEqual(names(splitDocuments(JSON.stringify(list), "l.json")), ["Pod/p1", "Pod/p2"]);
  });
  it("keeps the source and refuses broken or non-object documents", () => {
    assert.equal(splitDocuments("kind: Pod\nmetadata: {name: a}\n", "src.yaml")[0]?.source, "src.yaml");
    assert.throws(() => splitDocuments("kind: [", "bad.yaml"), /error parsing bad.yaml/);
    assert.throws(() => splitDocuments("- a\n- b\n", "arr.yaml"), /not an object/);
  });
});

describe("readManifests", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-mf-"));
    mkdirSync(path.join(dir, "app", "sub"), { recursive: true });
    writeFileSync(path.join(dir, "app", "b.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n");
    writeFileSync(path.join(dir, "app", "a.yml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n");
    writeFileSync(path.join(dir, "app", "sub", "c.json"), '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"}}');
    writeFileSync(path.join(dir, "app", "notes.txt"), "not a manifest");
    writeFileSync(path.join(dir, "pod.txt"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads directories recursively (.yaml/.yml/.json, sorted), files of any extension, and stdin", async () => {
    const ms = await readManifests(["app", "pod.txt", "-"], dir, async () => "apiVersion: v1\nkind: Pod\nmetadata:\n  name: s\n");
    assert.deepEqual(names(ms), ["Pod/a", "Pod/b", "Pod/c", "Pod/t", "Pod/s"]);
    assert.deepEqual(
      ms.map((m) => m.source),
      [path.join("app", "a.yml"), path.join("app", "b.yaml"), path.join("app", "sub", "c.json"), "pod.txt", "STDIN"],
    );
  });
  it("a missing path is an error", async () => {
    await assert.rejects(readManifests(["nope.yaml"], dir), /the path "nope.yaml" does not exist/);
  });
});
