import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { addQuantities, bytes, compareQuantities, milliCpu, parseQuantity, quantityFromNano, QuantityParseError } from "./quantity.js";

const canonical = (s: string): string => parseQuantity(s).toString();

describe("quantities", () => {
  it("parse Kubernetes' forms exactly", () => {
    assert.equal(milliCpu("500m"), 500n);
    assert.equal(milliCpu("2"), 2000n);
    assert.equal(milliCpu("0.1"), 100n);
    assert.equal(milliCpu(".5"), 500n);
    assert.equal(milliCpu("+1"), 1000n);
    assert.equal(bytes("1Gi"), 1073741824n);
    assert.equal(bytes("1.5Gi"), 1610612736n);
    assert.equal(bytes("128974848"), 128974848n);
    assert.equal(bytes("129e6"), 129000000n);
    assert.equal(bytes("129e+6"), 129000000n);
    assert.equal(bytes("129M"), 129000000n);
    assert.equal(bytes("123Mi"), 128974848n);
    assert.equal(bytes("1E"), 10n ** 18n);
    assert.equal(bytes("1.G"), 1_000_000_000n);
    assert.equal(parseQuantity("1Ki").format, "BinarySI");
    assert.equal(parseQuantity("1e3").format, "DecimalExponent");
    assert.equal(parseQuantity("1k").format, "DecimalSI");
    assert.equal(parseQuantity("0.5Ki").format, "BinarySI");
    assert.equal(parseQuantity("0.5Mi").format, "BinarySI");
    assert.equal(parseQuantity("0.0001Ki").format, "DecimalSI"); // below one: decimal, like Kubernetes
  });

  it("round like Kubernetes: up to a nano when parsing, away from zero for milli and value", () => {
    assert.equal(parseQuantity("1.5n").nano, 2n);
    assert.equal(parseQuantity("0.1n").toString(), "1n");
    assert.equal(parseQuantity("-0.1n").toString(), "-1n");
    assert.equal(milliCpu("0.0001"), 1n);
    assert.equal(milliCpu("-0.0001"), -1n);
    assert.equal(bytes("1.5"), 2n);
    assert.equal(bytes("-1.5"), -2n);
    assert.equal(bytes("100m"), 1n);
    assert.equal(parseQuantity("-500m").milli, -500n);
    assert.equal(parseQuantity("-0").milli, 0n);
    assert.equal(parseQuantity("-0").toString(), "0");
  });

  it("print canonical strings like Kubernetes", () => {
    const cases: [string, string][] = [
      ["0", "0"],
      ["0n", "0"],
      ["-0", "0"],
      ["0Gi", "0"],
      ["1", "1"],
      ["1000", "1k"],
      ["1000000", "1M"],
      ["1500", "1500"],
      ["1.5", "1500m"],
      ["0.5", "500m"],
      ["100m", "100m"],
      ["1000m", "1"],
      ["1001m", "1001m"],
      ["1.001", "1001m"],
      ["12.34", "12340m"],
      ["-1.5", "-1500m"],
      ["1000u", "1m"],
      ["1n", "1n"],
      ["1000000000000000000000", "1000E"],
      ["1Ki", "1Ki"],
      ["1024", "1024"],
      ["1024Ki", "1Mi"],
      ["1.5Gi", "1536Mi"],
      ["0.5Ki", "512"],
      ["1536", "1536"],
      ["-1Ki", "-1Ki"],
      ["1023", "1023"],
      ["0.1Ki", "102400m"],
      ["1024Ei", "1024Ei"],
      ["1e3", "1e3"],
      ["1E3", "1e3"],
      ["1e-3", "1e-3"],
      ["100e-3", "100e-3"],
      ["1.5e3", "1500"],
      ["12e6", "12e6"],
      ["1e0", "1"],
    ];
    for (const [input, want] of cases) assert.equal(canonical(input), want, input);
  });

  it("refuse garbage with Kubernetes' message", () => {
    for (const bad of ["", "abc", "1.2.3", "1Q", " 1", "1 ", "--1", "1e", "Mi", ".", "1KK", "1k1", "1i", "e3", "1K", "1e1000000", "1.5.Gi"]) {
      assert.throws(
        () => parseQuantity(bad),
        (e: unknown) =>
          e instanceof QuantityParseError && e.message === "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        bad,
      );
    }
  });

  it("add keeps a's format, or b's when a is zero", () => {
    assert.equal(addQuantities(parseQuantity("1Gi"), parseQuantity("512Mi")).toString(), "1536Mi");
    assert.equal(addQuantities(parseQuantity("0"), parseQuantity("1Ki")).format, "BinarySI");
    assert.equal(addQuantities(parseQuantity("100m"), parseQuantity("-100m")).toString(), "0");
    assert.equal(quantityFromNano(1_500_000_000n).toString(), "1500m");
  });

  // Strings of every shape Kubernetes accepts, with their exact value in nano units computed independently.
  const suffixes: [string, bigint, bigint][] = [
    // [suffix, multiplier, divisor] relative to nano units
    ["n", 1n, 1n],
    ["u", 1000n, 1n],
    ["m", 10n ** 6n, 1n],
    ["", 10n ** 9n, 1n],
    ["k", 10n ** 12n, 1n],
    ["M", 10n ** 15n, 1n],
    ["G", 10n ** 18n, 1n],
    ["T", 10n ** 21n, 1n],
    ["Ki", 1024n * 10n ** 9n, 1n],
    ["Mi", 1024n ** 2n * 10n ** 9n, 1n],
    ["Gi", 1024n ** 3n * 10n ** 9n, 1n],
    ["e3", 10n ** 12n, 1n],
    ["e-3", 10n ** 6n, 1n],
    ["E-12", 1n, 1000n],
    ["e0", 10n ** 9n, 1n],
  ];
  const shaped = fc
    .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 14n }), fc.integer({ min: 0, max: 4 }), fc.constantFrom(...suffixes))
    .map(([neg, digits, frac, [suffix, mul, div]]) => {
      const s = digits.toString().padStart(frac + 1, "0");
      const text = frac > 0 ? `${s.slice(0, -frac)}.${s.slice(-frac)}` : s;
      // exact value: digits / 10^frac × mul / div nano, rounded away from zero like Kubernetes
      const num = digits * mul;
      const den = 10n ** BigInt(frac) * div;
      const nano = num / den + (num % den === 0n ? 0n : 1n);
      return { text: `${neg ? "-" : ""}${text}${suffix}`, nano: neg ? -nano : nano };
    });

  it("parse every shape to its exact value (property)", () => {
    fc.assert(
      fc.property(shaped, ({ text, nano }) => {
        assert.equal(parseQuantity(text).nano, nano, text);
      }),
      { seed: 2024, numRuns: 500 },
    );
  });

  it("print a canonical string that parses back to the same value (property)", () => {
    fc.assert(
      fc.property(shaped, ({ text }) => {
        const a = parseQuantity(text);
        const b = parseQuantity(a.toString());
        assert.equal(b.nano, a.nano, `${text} → ${a.toString()}`);
        assert.equal(b.milli, a.milli);
        assert.equal(b.value, a.value);
        assert.equal(b.toString(), a.toString(), "canonical form is a fixed point");
      }),
      { seed: 99, numRuns: 500 },
    );
  });

  it("compare agrees with milli order and is antisymmetric (property)", () => {
    fc.assert(
      fc.property(shaped, shaped, (x, y) => {
        const a = parseQuantity(x.text);
        const b = parseQuantity(y.text);
        const c = compareQuantities(a, b);
        assert.equal(compareQuantities(b, a), c === 0 ? 0 : c === 1 ? -1 : 1);
        if (a.milli < b.milli) assert.equal(c, -1);
        if (a.milli > b.milli) assert.equal(c, 1);
        if (c === 0) assert.equal(a.milli, b.milli);
        assert.equal(c, x.nano < y.nano ? -1 : x.nano > y.nano ? 1 : 0);
      }),
      { seed: 1234, numRuns: 500 },
    );
  });

  it("add is exact (property)", () => {
    const milli = fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n });
    fc.assert(
      fc.property(milli, milli, shaped, shaped, (x, y, p, q) => {
        const sum = addQuantities(parseQuantity(`${x}m`), parseQuantity(`${y}m`));
        assert.equal(sum.milli, x + y);
        assert.equal(parseQuantity(sum.toString()).milli, x + y);
        assert.equal(addQuantities(parseQuantity(p.text), parseQuantity(q.text)).nano, p.nano + q.nano);
      }),
      { seed: 4321, numRuns: 300 },
    );
  });
});
