/** JSON with object keys sorted, so equal values built in a different key order (a JSON round trip) compare equal. */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x === null || typeof x !== "object" || Array.isArray(x)) return x;
    const o = x as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, o[k]]),
    );
  });
}
