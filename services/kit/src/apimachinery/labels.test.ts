import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  makeSelector,
  parseLabelSelector,
  selectorFromLabelSelector,
  selectorFromSet,
  SelectorParseError,
  validateAnnotations,
  validateLabelKey,
  validateLabels,
  validateLabelValue,
} from "./labels.js";

const name = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const labels = fc.dictionary(name, name, { maxKeys: 4, noNullPrototype: true });

describe("label selectors", () => {
  it("parse every operator and match like Kubernetes", () => {
    const s = parseLabelSelector("app=web, tier!=db,env in (prod, staging),zone notin (a),canary,!legacy,x==y");
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y" }), true);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", legacy: "1" }), false);
    assert.equal(s.matches({ app: "web", env: "dev", canary: "", x: "y" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", x: "y" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", tier: "db" }), false);
    assert.equal(s.matches({ app: "web", env: "prod", canary: "", x: "y", zone: "a" }), false);
    assert.equal(s.matches(undefined), false);
    assert.equal(parseLabelSelector("").isEverything(), true);
    assert.equal(parseLabelSelector("  ").isEverything(), true);
    assert.equal(parseLabelSelector("").matches({ any: "thing" }), true);
    assert.equal(parseLabelSelector("").matches(undefined), true);
    assert.equal(parseLabelSelector("a!=b").matches(undefined), true);
    assert.equal(parseLabelSelector("a notin (b)").matches({}), true);
    assert.equal(parseLabelSelector("constructor").matches({}), false, "no prototype keys");
  });

  it("print sorted by key, with sorted de-duplicated sets", () => {
    const s = parseLabelSelector(" z in (b, a, b) , a==1,\t!m , k ");
    assert.equal(s.toString(), "a=1,k,!m,z in (a,b)");
    assert.deepEqual(
      s.requirements.map((r) => [r.key, r.operator, [...r.values]]),
      [
        ["a", "=", ["1"]],
        ["k", "exists", []],
        ["m", "!", []],
        ["z", "in", ["a", "b"]],
      ],
    );
  });

  it("read empty values as Kubernetes does", () => {
    // Kubernetes' own example: "x in (foo,,baz),y,z notin ()"
    const s = parseLabelSelector("x in (foo,,baz),y,z notin ()");
    assert.equal(s.toString(), "x in (,baz,foo),y,z notin ()");
    assert.deepEqual(parseLabelSelector("a in (,x)").requirements[0]?.values, ["", "x"]);
    assert.deepEqual(parseLabelSelector("a in (x,)").requirements[0]?.values, ["", "x"]);
    assert.deepEqual(parseLabelSelector("a=").requirements[0]?.values, [""]);
    assert.deepEqual(
      parseLabelSelector("a=,b").requirements.map((r) => r.operator),
      ["=", "exists"],
    );
    assert.equal(parseLabelSelector("a=").matches({ a: "" }), true);
    assert.equal(parseLabelSelector("in=x,notin in (in)").matches({ in: "x", notin: "in" }), true, "keywords are fine as keys and values");
  });

  it("refuse malformed selectors and invalid keys or values, with Kubernetes' messages", () => {
    const bad: [string, RegExp][] = [
      ["app in (a", /unable to parse requirement: found '', expected: ',' or '\)'/],
      ["app in", /unable to parse requirement: found '' expected: '\('/],
      ["=x", /found '=', expected: !, identifier, or 'end of string'/],
      ["a=b,", /found '', expected: identifier after ','/],
      ["a b", /unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'/],
      ["a in (x y)", /found 'y', expected: ',' or '\)'/],
      ["a in (x=)", /found '=', expected: ',' or '\)'/],
      ["bad key!=x", /found 'key'/],
      ["a=-bad-", /unable to parse requirement: invalid label value: "-bad-"/],
      ["a,,b", /found ',', expected: identifier after ','/],
      ["!a=b", /found '=', expected: ',' or 'end of string'/],
      ["a=b=c", /found '=', expected: ',' or 'end of string'/],
      ["a>1", /not supported/],
      ["a/b/c", /unable to parse requirement: invalid label key "a\/b\/c"/],
      ["a=" + "x".repeat(64), /must be no more than 63 characters/],
      ["!", /found '', expected: identifier/],
    ];
    for (const [input, message] of bad) {
      assert.throws(
        () => parseLabelSelector(input),
        (e: unknown) => e instanceof SelectorParseError && e.name === "SelectorParseError" && message.test(e.message),
        input,
      );
    }
  });

  it("print a canonical string that parses to an equivalent selector (property)", () => {
    const req = fc.oneof(
      fc.tuple(name, name).map(([k, v]) => `${k}=${v}`),
      fc.tuple(name, name).map(([k, v]) => `${k} == ${v}`),
      fc.tuple(name, name).map(([k, v]) => `${k}!=${v}`),
      fc.tuple(name, fc.array(name, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} in (${vs.join(",")})`),
      fc.tuple(name, fc.array(name, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} notin (${vs.join(", ")})`),
      name,
      name.map((k) => `!${k}`),
    );
    fc.assert(
      fc.property(fc.array(req, { maxLength: 4 }), labels, (reqs, l) => {
        const s = parseLabelSelector(reqs.join(","));
        const again = parseLabelSelector(s.toString());
        assert.equal(again.toString(), s.toString());
        assert.equal(again.matches(l), s.matches(l));
        assert.equal(makeSelector(s.requirements).toString(), s.toString());
      }),
      { seed: 4242, numRuns: 300 },
    );
  });

  it("matches means every requirement holds (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(name, name), { maxLength: 4 }), labels, (pairs, l) => {
        const s = parseLabelSelector(pairs.map(([k, v]) => `${k}=${v}`).join(","));
        assert.equal(
          s.matches(l),
          pairs.every(([k, v]) => l[k] === v),
        );
      }),
      { seed: 77, numRuns: 300 },
    );
  });

  it("selectorFromSet matches exactly the supersets of the set (property)", () => {
    fc.assert(
      fc.property(labels, labels, (set, extra) => {
        const s = selectorFromSet(set);
        assert.equal(s.matches({ ...extra, ...set }), true);
        const keys = Object.keys(set);
        if (keys.length > 0) {
          const dropped = Object.fromEntries(Object.entries(set).slice(1));
          assert.equal(s.matches(dropped), false);
          assert.equal(s.matches({ ...set, [keys[0] as string]: `${set[keys[0] as string]}x` }), false);
        } else {
          assert.equal(s.isEverything(), true);
        }
      }),
      { seed: 7, numRuns: 200 },
    );
  });

  it("reads metav1.LabelSelector", () => {
    const s = selectorFromLabelSelector({
      matchLabels: { app: "x" },
      matchExpressions: [
        { key: "tier", operator: "In", values: ["a", "b"] },
        { key: "old", operator: "DoesNotExist" },
        { key: "zone", operator: "NotIn", values: ["z"] },
        { key: "team", operator: "Exists", values: [] },
      ],
    });
    assert.equal(s.toString(), "app=x,!old,team,tier in (a,b),zone notin (z)");
    assert.equal(s.matches({ app: "x", tier: "b", team: "t" }), true);
    assert.equal(s.matches({ app: "x", tier: "b", team: "t", old: "1" }), false);
    assert.equal(s.matches({ app: "x", tier: "b", team: "t", zone: "z" }), false);
    assert.equal(selectorFromLabelSelector(undefined).isEverything(), true);
    assert.equal(selectorFromLabelSelector({}).isEverything(), true);
    assert.throws(() => selectorFromLabelSelector({ matchExpressions: [{ key: "a", operator: "Bogus" }] }), /"Bogus" is not a valid label selector operator/);
    assert.throws(() => selectorFromLabelSelector({ matchExpressions: [{ key: "a", operator: "In", values: [] }] }), /values set can't be empty/);
    assert.throws(() => selectorFromLabelSelector({ matchExpressions: [{ key: "a", operator: "Exists", values: ["x"] }] }), /values set must be empty/);
    assert.throws(() => selectorFromLabelSelector({ matchLabels: { "bad key": "x" } }), SelectorParseError);
  });

  it("validate label keys and values with Kubernetes' rules and wording", () => {
    assert.deepEqual(validateLabelKey("app.kubernetes.io/name"), []);
    assert.deepEqual(validateLabelKey("A_b.c-D"), []);
    assert.deepEqual(validateLabelKey("a/b/c"), [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]);
    assert.deepEqual(validateLabelKey("x".repeat(64)), ["name part must be no more than 63 characters"]);
    assert.deepEqual(validateLabelKey("/a"), ["prefix part must be non-empty"]);
    assert.equal(validateLabelKey("Example.com/a")[0]?.startsWith("prefix part a lowercase RFC 1123 subdomain"), true);
    assert.equal(validateLabelKey("").length, 2, "empty: non-empty and regex messages");
    assert.deepEqual(validateLabelValue(""), []);
    assert.deepEqual(validateLabelValue("My_value.1"), []);
    assert.deepEqual(validateLabelValue("-x"), [
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]);
    assert.deepEqual(validateLabelValue("x".repeat(64)), ["must be no more than 63 characters"]);
    assert.deepEqual(validateLabels({ ok: "fine" }), []);
    assert.deepEqual(validateLabels(undefined), []);
    assert.equal(validateLabels({ "b@d": "x", ok: "-" }).length, 2);
    assert.match(validateLabels({ "b@d": "x" })[0] as string, /^Invalid value: "b@d": name part must consist/);
  });

  it("validate annotations: label-like keys (any case), 256 KiB in bytes", () => {
    assert.deepEqual(validateAnnotations({ "Example.COM/Thing": 'anything at all: {"json": true}' }), []);
    assert.equal(validateAnnotations({ "bad key": "" }).length, 1);
    assert.deepEqual(validateAnnotations({ a: "x".repeat(256 * 1024 - 1) }), []);
    assert.deepEqual(validateAnnotations({ a: "x".repeat(256 * 1024) }), ["Too long: must have at most 262144 bytes"]);
    // 128 Ki two-byte characters: 128 Ki UTF-16 units but 256 KiB of bytes
    assert.equal(validateAnnotations({ a: "é".repeat(128 * 1024) }).length, 1);
  });
});
