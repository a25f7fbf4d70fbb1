import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { addQuantities, bytes, compareQuantities, milliCpu, parseQuantity, QuantityParseError } from "./quantity.js";

describe("quantities", () => {
  it("parse Kubernetes' forms exactly", () => {
    assert.equal(milliCpu("500m"), 500n);
    assert.equal(milliCpu("2"), 2000n);
    assert.equal(milliCpu("0.1"), 100n);
    assert.equal(bytes("1Gi"), 1073741824n);
    assert.equal(bytes("1.5Gi"), 1610612736n);
    assert.equal(bytes("128974848"), 128974848n);
    assert.equal(bytes("129e6"), 129000000n);
    assert.equal(bytes("129M"), 129000000n);
    assert.equal(bytes("123Mi"), 128974848n);
    assert.equal(parseQuantity("1500m").toString(), "1500m");
    assert.equal(parseQuantity("1.5").toString(), "1500m");
    assert.equal(parseQuantity("1024Mi").toString(), "1Gi");
    assert.equal(parseQuantity("1000").toString(), "1k");
    assert.equal(parseQuantity("0").toString(), "0");
    assert.equal(parseQuantity("-500m").milli, -500n);
  });

  it("refuse garbage with Kubernetes' message", () => {
    for (const bad of ["", "abc", "1.2.3", "1Q", " 1", "1 ", "--1", "1e", "Mi"]) {
      assert.throws(() => parseQuantity(bad), (e: unknown) => e instanceof QuantityParseError && /quantities must match the regular expression/.test(e.message), bad);
    }
  });

  const suffix = fc.constantFrom("", "m", "k", "M", "G", "Ki", "Mi", "Gi", "n", "u");
  const q = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 3 }), suffix).map(([n, frac, suf]) => {
    const s = n.toString();
    const withFrac = frac > 0 && s.length > frac ? `${s.slice(0, -frac)}.${s.slice(-frac)}` : s;
    return `${withFrac}${suf}`;
  });

  it("print a canonical string that parses to the same value (property)", () => {
    fc.assert(
      fc.property(q, (s) => {
        const a = parseQuantity(s);
        const b = parseQuantity(a.toString());
        // Canonical forms round up below a nano, like Kubernetes; compare at milli precision or better.
        assert.equal(b.milli, a.milli, `${s} → ${a.toString()}`);
      }),
      { seed: 99, numRuns: 500 },
    );
  });

  it("compare agrees with exact value order; add is exact (property)", () => {
    fc.assert(
      fc.property(q, q, (x, y) => {
        const a = parseQuantity(x);
        const b = parseQuantity(y);
        const exact = a.num * b.den - b.num * a.den;
        const want = exact < 0n ? -1 : exact > 0n ? 1 : 0;
        assert.equal(compareQuantities(a, b), want);
        const sum = addQuantities(a, b);
        assert.equal(sum.num * a.den * b.den, (a.num * b.den + b.num * a.den) * sum.den);
      }),
      { seed: 1234, numRuns: 500 },
    );
  });
});
