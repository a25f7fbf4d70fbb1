/** A quantity string is malformed. */
export class QuantityParseError extends Error {
  override name = "QuantityParseError";
}

/** How a quantity prints: `1k` (DecimalSI), `1Ki` (BinarySI), `1e3` (DecimalExponent). */
export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** A Kubernetes resource quantity, exact to the nano unit (as Kubernetes keeps it). */
export interface Quantity {
  /** value × 10⁹, exact (parsing rounds away from zero to a nano, like Kubernetes). */
  readonly nano: bigint;
  /** value × 1000, rounded away from zero (Kubernetes' MilliValue). */
  readonly milli: bigint;
  /** value rounded away from zero to an integer (Kubernetes' Value). */
  readonly value: bigint;
  readonly format: QuantityFormat;
  /** The canonical string: `500m`, `1Gi`, `2`, `1500m`, `1e3`. */
  toString(): string;
}

/** Kubernetes' pattern, quoted in the message only: run as a regex it backtracks quadratically. */
const PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
const MESSAGE = `quantities must match the regular expression '${PATTERN}'`;
/**
 * Longer strings are refused before any parsing. Kubernetes has no explicit
 * cap, but its parser is a linear scan and its values stop at 2⁶³-1; no
 * quantity it prints comes near 64 characters.
 */
export const MAX_QUANTITY_LENGTH = 64;
/**
 * What PATTERN accepts that is also a number: sign, digits with an optional
 * point (or a point and digits), then one suffix. No two neighbouring parts
 * can match the same character, so a failed match gives back at most one
 * character at a time (linear).
 */
const RE = /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)((?:[eE][-+]?[0-9]+)|[KMGTPE]i|[numkMGTPE])?$/;

const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX: ReadonlyMap<number, string> = new Map(Object.entries(DECIMAL).map(([s, e]) => [e, s]));
const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] as const;
/** Larger exponents would make huge bigints from a short string. */
const MAX_EXPONENT = 1000;
const NANO = 1_000_000_000n;

const abs = (n: bigint): bigint => (n < 0n ? -n : n);

/** a / b rounded away from zero (Kubernetes' inf.RoundUp); b > 0. */
function divAway(a: bigint, b: bigint): bigint {
  const q = a / b;
  if (a % b === 0n) return q;
  return a < 0n ? q - 1n : q + 1n;
}

/** Builds a quantity from its value in nano units. */
export function quantityFromNano(nano: bigint, format: QuantityFormat = "DecimalSI"): Quantity {
  return {
    nano,
    milli: divAway(nano, 1_000_000n),
    value: divAway(nano, NANO),
    format,
    toString: () => canonical(nano, format),
  };
}

function canonical(nano: bigint, format: QuantityFormat): string {
  if (nano === 0n) return "0";
  const sign = nano < 0n ? "-" : "";
  const a = abs(nano);
  if (format === "BinarySI" && a >= 1024n * NANO && a % NANO === 0n) {
    let n = a / NANO;
    let i = 0;
    while (i < BINARY_SUFFIX.length - 1 && n % 1024n === 0n) {
      n /= 1024n;
      i++;
    }
    return `${sign}${n}${BINARY_SUFFIX[i]}`;
  }
  // Decimal: drop factors of ten, then lower the exponent to a multiple of three.
  let mantissa = a;
  let exp = -9;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exp++;
  }
  const r = ((exp % 3) + 3) % 3;
  mantissa *= 10n ** BigInt(r);
  exp -= r;
  if (format === "DecimalExponent") return `${sign}${mantissa}${exp === 0 ? "" : `e${exp}`}`;
  if (exp > 18) {
    mantissa *= 10n ** BigInt(exp - 18);
    exp = 18;
  }
  return `${sign}${mantissa}${DECIMAL_SUFFIX.get(exp) ?? ""}`;
}

/** Parses `500m`, `1.5Gi`, `1e3`, `128974848`, … exactly; throws QuantityParseError (also for more than MAX_QUANTITY_LENGTH characters). */
export function parseQuantity(s: string): Quantity {
  if (s.length > MAX_QUANTITY_LENGTH) throw new QuantityParseError(`quantities must be no more than ${MAX_QUANTITY_LENGTH} characters`);
  const m = RE.exec(s);
  if (!m) throw new QuantityParseError(MESSAGE);
  const neg = m[1] === "-";
  const [ip = "", fp = ""] = (m[2] as string).split(".");
  const suffix = m[3] ?? "";
  // The exact value is num / den; den is a power of ten.
  let num = BigInt((ip || "0") + fp);
  let den = 10n ** BigInt(fp.length);
  let format: QuantityFormat = "DecimalSI";
  let exp10 = 0;
  if (Object.hasOwn(BINARY, suffix)) {
    num <<= BigInt(BINARY[suffix] as number);
    format = "BinarySI";
  } else if (Object.hasOwn(DECIMAL, suffix)) {
    exp10 = DECIMAL[suffix] as number;
  } else if (/^[eE][-+]?\d+$/.test(suffix)) {
    exp10 = Number(suffix.slice(1));
    if (Math.abs(exp10) > MAX_EXPONENT) throw new QuantityParseError(MESSAGE);
    format = "DecimalExponent";
  } else {
    throw new QuantityParseError(MESSAGE);
  }
  exp10 += 9; // to nano units
  if (exp10 >= 0) num *= 10n ** BigInt(exp10);
  else den *= 10n ** BigInt(-exp10);
  // Non-zero values round up to the next nano ("if you want some, you get some").
  let nano = divAway(num, den);
  if (neg) nano = -nano;
  // A binary quantity below one prints as decimal (Kubernetes does the same).
  if (format === "BinarySI" && nano !== 0n && abs(nano) < NANO) format = "DecimalSI";
  return quantityFromNano(nano, format);
}

/** -1, 0 or 1 as a < b, a = b, a > b (exact). */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  return a.nano < b.nano ? -1 : a.nano > b.nano ? 1 : 0;
}

/** a + b, exact; keeps a's format (b's when a is zero, like Kubernetes' Add). */
export function addQuantities(a: Quantity, b: Quantity): Quantity {
  return quantityFromNano(a.nano + b.nano, a.nano === 0n ? b.format : a.format);
}

/** CPU in millicores: `500m` → 500n, `2` → 2000n. */
export function milliCpu(s: string): bigint {
  return parseQuantity(s).milli;
}

/** Bytes (the integer value, rounded up): `1Gi` → 1073741824n. */
export function bytes(s: string): bigint {
  return parseQuantity(s).value;
}
