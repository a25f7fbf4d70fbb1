import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DESCRIBERS } from "./describers.js";
import { eventsSection } from "./format.js";

describe("configmap describer", () => {
  it("prints Name, Namespace, Labels, Annotations, each data value under its key, binaryData by size, then Events", () => {
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "game", namespace: "default", labels: { app: "game" }, creationTimestamp: "2025-01-01T00:00:00Z" },
      data: { "ui.mode": "dark", "game.properties": "lives=3\nlevel=1" },
      binaryData: { "logo.bin": "AAEC/w==" },
    };
    const w = DESCRIBERS["ConfigMap"]!(cm, {}, Date.parse("2025-01-01T00:10:00Z"));
    eventsSection(w, [], 0);
    assert.equal(
      w.toString(),
      [
        "Name:             game",
        "Namespace:        default",
        "Labels:           app=game",
        "Annotations:      <none>",
        "",
        "Data",
        "====",
        "game.properties:",
        "----",
        "lives=3\nlevel=1",
        "",
        "ui.mode:",
        "----",
        "dark",
        "",
        "",
        "BinaryData",
        "====",
        "logo.bin: 4 bytes",
        "",
        "Events:           <none>",
      ].join("\n"),
    );
  });
});
