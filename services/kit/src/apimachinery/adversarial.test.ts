// Every parser of client input in apimachinery against adversarial strings:
// each either parses or throws its own error, and each case is bounded in
// time (the regexes run on length-capped input only, the scanners are linear).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ageOf } from "./duration.js";
import { FieldSelectorError, parseFieldSelector } from "./fields.js";
import { MAX_SELECTOR_LENGTH, parseLabelSelector, SelectorParseError, validateAnnotations, validateLabels, validateLabelValue } from "./labels.js";
import { validateDns1035Label, validateDns1123Label, validateDns1123Subdomain, validateQualifiedName } from "./names.js";
import { MAX_QUANTITY_LENGTH, parseQuantity, QuantityParseError } from "./quantity.js";

/**
 * Per case, generous for shared and noisy machines: a quadratic parser takes
 * seconds on the long cases (the old quantity regex: 133 ms at 16k
 * characters, 2 s at 64k, minutes at 3 MiB), a linear one microseconds.
 */
const CASE_MS = 1_000;
const MiB = 1024 * 1024;

/** Milliseconds `f` took; its exception, if any, goes to `check`. */
function timed(f: () => unknown, check: (err: unknown) => boolean): number {
  const t = performance.now();
  try {
    f();
  } catch (err) {
    const ms = performance.now() - t;
    assert.ok(check(err), `unexpected error: ${String(err)}`);
    return ms;
  }
  return performance.now() - t;
}

/** Characters each parser treats specially, and some it never should. */
const UNITS = [
  "1",
  "0",
  "9",
  ".",
  "e",
  "E",
  "+",
  "-",
  "i",
  "K",
  "k",
  "m",
  "n",
  "a",
  "A",
  "_",
  "/",
  "=",
  "!",
  ",",
  "(",
  ")",
  " ",
  "\\",
  "in",
  "notin",
  "é",
  "💥",
  "\u0000",
];

/** Short strings over UNITS, long runs of one or two units with a poisoned tail, and unicode. */
const adversarial: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...UNITS), { maxLength: 40 }).map((a) => a.join("")),
  fc
    .tuple(
      fc.constantFrom(...UNITS),
      fc.constantFrom("", ...UNITS),
      fc.integer({ min: 1, max: MiB }),
      fc.constantFrom("", "x", "!", "-", ".", "1", "e", "=", "(", "Ki"),
    )
    .map(([a, b, n, tail]) => (a + b).repeat(Math.ceil(n / (a + b).length)) + tail),
  fc.string({ unit: "grapheme", maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
);

const RUNS = { numRuns: 300, seed: 20261126 };

/**
 * Asserts `parse` answers every adversarial string within CASE_MS, throwing
 * only what `isOwnError` accepts. A slow case is timed twice more and the
 * fastest run counts: a pause of the machine (GC, JIT, other tests running)
 * passes, a parser that is slow on that input does not.
 */
function bounded(parse: (s: string) => unknown, isOwnError: (err: unknown) => boolean): void {
  fc.assert(
    fc.property(adversarial, (s) => {
      let ms = timed(() => parse(s), isOwnError);
      for (let i = 0; i < 2 && ms >= CASE_MS; i++)
        ms = Math.min(
          ms,
          timed(() => parse(s), isOwnError),
        );
      assert.ok(ms < CASE_MS, `${ms.toFixed(1)} ms for ${s.length} characters (${JSON.stringify(s.slice(0, 20))}…)`);
    }),
    RUNS,
  );
}

const never = (): boolean => false;

describe("parsers against adversarial input (property, time-bounded)", () => {
  it("quantities: parse or QuantityParseError", () => {
    bounded(parseQuantity, (e) => e instanceof QuantityParseError);
  });

  it("label selectors: parse or SelectorParseError", () => {
    bounded(parseLabelSelector, (e) => e instanceof SelectorParseError);
  });

  it("field selectors: parse or FieldSelectorError", () => {
    bounded(parseFieldSelector, (e) => e instanceof FieldSelectorError);
  });

  it("names, label keys and values: messages, never an exception", () => {
    for (const v of [validateDns1123Subdomain, validateDns1123Label, validateDns1035Label, validateQualifiedName, validateLabelValue]) bounded(v, never);
    bounded((s) => validateLabels({ [s]: s }), never);
    bounded((s) => validateAnnotations({ [s]: "v" }), never);
  });

  it("timestamps (ageOf): an age or <unknown>, never an exception", () => {
    bounded((s) => ageOf(s, 0), never);
  });
});

describe("worst cases, measured", () => {
  /** The median of five runs, in ms (a single run on a shared machine is noise). */
  const median = (f: () => void): number => {
    const t: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = performance.now();
      f();
      t.push(performance.now() - s);
    }
    return t.sort((a, b) => a - b)[2] as number;
  };
  const refused = (s: string, parse: (s: string) => unknown): void => {
    assert.throws(() => parse(s));
  };

  it("a quantity of 16k, 1 MiB or 3 MiB digits is refused at once; the longest allowed still parses", () => {
    for (const n of [16_000, MiB, 3 * MiB]) {
      for (const s of ["1".repeat(n) + "x", "1".repeat(n), "." + "1".repeat(n) + "e", "1" + "e".repeat(n)]) {
        const ms = median(() => refused(s, parseQuantity));
        assert.ok(ms < 500, `${n}: ${ms} ms`);
        assert.throws(() => parseQuantity(s), /quantities must be no more than 64 characters/);
      }
    }
    assert.equal(parseQuantity("9".repeat(MAX_QUANTITY_LENGTH - 2) + "Ki").format, "BinarySI");
    assert.equal(parseQuantity(`1e${"0".repeat(MAX_QUANTITY_LENGTH - 3)}1`).toString(), "10");
    assert.throws(() => parseQuantity("1".repeat(MAX_QUANTITY_LENGTH + 1)), QuantityParseError);
    // The worst case under the cap: almost a match, every split point tried once.
    const near = "1".repeat(MAX_QUANTITY_LENGTH - 1) + "x";
    assert.ok(median(() => refused(near, parseQuantity)) < 100);
  });

  it("selectors: the longest accepted worst cases stay linear; longer ones are refused unread", () => {
    const n = MAX_SELECTOR_LENGTH;
    const cases: [string, (s: string) => unknown][] = [
      ["a=b,".repeat(n / 4 - 1) + "(", parseLabelSelector],
      ["a in (" + "b,".repeat(n / 2 - 4), parseLabelSelector],
      ["a".repeat(n - 3) + "-=b", parseLabelSelector],
      ["a=b,".repeat(n / 4 - 1) + "c", parseFieldSelector],
      ["a=" + "\\,".repeat(n / 2 - 2) + "=", parseFieldSelector],
      ["a".repeat(n - 1) + "!", parseFieldSelector],
    ];
    for (const [s, parse] of cases) {
      assert.ok(s.length <= n);
      const ms = median(() => refused(s, parse));
      assert.ok(ms < 2_000, `${parse.name} ${JSON.stringify(s.slice(0, 12))}: ${ms} ms`);
    }
    const over = "a=b,".repeat(MiB / 4);
    assert.throws(
      () => parseLabelSelector(over),
      (e: unknown) => e instanceof SelectorParseError && /must be no more than 65536 characters/.test(e.message),
    );
    assert.throws(
      () => parseFieldSelector(over),
      (e: unknown) => e instanceof FieldSelectorError && /must be no more than 65536 characters/.test(e.message),
    );
    assert.ok(median(() => refused(over, parseLabelSelector)) < 100);
    // The largest selectors accepted still parse.
    assert.equal(parseLabelSelector("a=b,".repeat(n / 4 - 1) + "a=b").requirements.length, n / 4);
  });

  it("names and label values of 1 MiB get the length message alone, at once", () => {
    const longs = ["a.".repeat(MiB / 2) + "!", "a".repeat(MiB) + "-", "a._".repeat(MiB / 3) + "-", "a.".repeat(MiB / 2) + "!/x"];
    for (const s of longs) {
      for (const v of [validateDns1123Subdomain, validateDns1123Label, validateDns1035Label, validateQualifiedName, validateLabelValue]) {
        const ms = median(() => v(s));
        assert.ok(ms < 500, `${v.name}: ${ms} ms`);
        assert.ok(
          v(s).some((m) => /must be no more than (253|63) characters/.test(m)),
          v.name,
        );
      }
    }
    assert.deepEqual(validateDns1123Label("a".repeat(64)), ["must be no more than 63 characters"]);
    assert.deepEqual(validateQualifiedName(`${"a".repeat(64)}-`), ["name part must be no more than 63 characters"]);
  });
});

// The parser before the cap, kept as a reference: the new one must agree with
// it on every short string (same acceptance, same value, same format).
const OLD_RE = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/;
const OLD_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)$/;
const OLD_SUFFIXES = new Set(["n", "u", "m", "", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]);
function oldAccepts(s: string): boolean {
  const m = OLD_RE.exec(s);
  if (!m || !OLD_NUMBER.test(m[1] as string)) return false;
  const suffix = m[2] as string;
  if (OLD_SUFFIXES.has(suffix)) return true;
  return /^[eE][-+]?\d+$/.test(suffix) && Math.abs(Number(suffix.slice(1))) <= 1000;
}

describe("the linear quantity parser agrees with the old regex (property)", () => {
  const QUANTITY_UNITS = ["0", "1", "5", "9", ".", "+", "-", "e", "E", "i", "n", "u", "m", "k", "K", "M", "G", "T", "P", "x"];
  it("same strings accepted, and what is accepted parses", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...QUANTITY_UNITS), { maxLength: 12 }).map((a) => a.join("")),
        (s) => {
          let ok = true;
          try {
            parseQuantity(s);
          } catch (err) {
            assert.ok(err instanceof QuantityParseError);
            ok = false;
          }
          assert.equal(ok, oldAccepts(s), JSON.stringify(s));
        },
      ),
      { numRuns: 5000, seed: 7 },
    );
  });

  it("Kubernetes' common forms still parse", () => {
    assert.equal(parseQuantity("1.5Gi").value, 1610612736n);
    assert.equal(parseQuantity("500m").milli, 500n);
    assert.equal(parseQuantity("1e3").value, 1000n);
    assert.equal(parseQuantity("+1").value, 1n);
    assert.equal(parseQuantity(".5").milli, 500n);
    assert.equal(parseQuantity("1E").value, 10n ** 18n);
    assert.equal(parseQuantity("1E3").toString(), "1e3");
    assert.equal(parseQuantity("1Ei").format, "BinarySI");
  });
});
