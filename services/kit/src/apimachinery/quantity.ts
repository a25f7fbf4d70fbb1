/** A quantity string is malformed. */
export class QuantityParseError extends Error {
  override name = "QuantityParseError";
}

/** A Kubernetes resource quantity, exact. */
export interface Quantity {
  /** value × 1000, rounded up (Kubernetes' MilliValue). */
  readonly milli: bigint;
  /** value rounded up to an integer (Kubernetes' Value). */
  readonly value: bigint;
  readonly format: "DecimalSI" | "BinarySI" | "DecimalExponent";
  /** The canonical string: `500m`, `1Gi`, `2`, `1500m`. */
  toString(): string;
  /** Exact value as a fraction num/den. */
  readonly num: bigint;
  readonly den: bigint;
}

const RE = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/;
const MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a || 1n;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a > 0n) === (b > 0n) ? q + 1n : q;
}

function make(num: bigint, den: bigint, format: Quantity["format"]): Quantity {
  const g = gcd(num, den);
  num /= g;
  den /= g;
  if (num === 0n) den = 1n;
  return { num, den, format, milli: ceilDiv(num * 1000n, den), value: ceilDiv(num, den), toString: () => canonical(num, den, format) };
}

function canonical(num: bigint, den: bigint, format: Quantity["format"]): string {
  if (num === 0n) return "0";
  const neg = num < 0n;
  const abs = neg ? -num : num;
  const sign = neg ? "-" : "";
  if (format === "BinarySI" && den === 1n) {
    for (const [suf, exp] of Object.entries(BINARY).reverse()) {
      const unit = 1n << BigInt(exp);
      if (abs % unit === 0n) return `${sign}${abs / unit}${suf}`;
    }
    return `${sign}${abs}`;
  }
  // Decimal: the largest SI suffix that keeps an integer (values are rounded up to nano).
  const nano = ceilDiv(abs * 1_000_000_000n, den);
  for (const [suf, exp] of [["E", 18], ["P", 15], ["T", 12], ["G", 9], ["M", 6], ["k", 3], ["", 0], ["m", -3], ["u", -6], ["n", -9]] as const) {
    const unit = 10n ** BigInt(exp + 9);
    if (nano % unit === 0n) return `${sign}${nano / unit}${suf}`;
  }
  return `${sign}${nano}n`;
}

/** Parses `500m`, `1.5Gi`, `1e3`, `128974848`, … exactly. */
export function parseQuantity(s: string): Quantity {
  const m = RE.exec(s.trim() === s ? s : "");
  if (!m) throw new QuantityParseError(MESSAGE);
  const numStr = m[1] as string;
  const suffix = m[2] as string;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(numStr)) throw new QuantityParseError(MESSAGE);
  const neg = numStr.startsWith("-");
  const digits = numStr.replace(/^[+-]/, "");
  const [ip = "", fp = ""] = digits.split(".");
  let num = BigInt((ip || "0") + fp);
  let den = 10n ** BigInt(fp.length);
  if (neg) num = -num;
  let format: Quantity["format"] = "DecimalSI";
  if (suffix in BINARY) {
    num *= 1n << BigInt(BINARY[suffix] as number);
    format = "BinarySI";
  } else if (suffix in DECIMAL) {
    const e = DECIMAL[suffix] as number;
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
  } else if (/^[eE][-+]?\d+$/.test(suffix)) {
    const e = Number(suffix.slice(1));
    if (Math.abs(e) > 30) throw new QuantityParseError(MESSAGE);
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
    format = "DecimalExponent";
  } else {
    throw new QuantityParseError(MESSAGE);
  }
  return make(num, den, format);
}

/** -1, 0 or 1 as a < b, a = b, a > b (exact). */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const l = a.num * b.den;
  const r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

/** a + b, exact, in a's format. */
export function addQuantities(a: Quantity, b: Quantity): Quantity {
  return make(a.num * b.den + b.num * a.den, a.den * b.den, a.format);
}

/** CPU in millicores: `500m` → 500n, `2` → 2000n. */
export function milliCpu(s: string): bigint {
  return parseQuantity(s).milli;
}

/** Bytes: `1Gi` → 1073741824n. */
export function bytes(s: string): bigint {
  return parseQuantity(s).value;
}
