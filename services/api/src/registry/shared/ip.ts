import { isIPv4 as netIsIPv4, isIPv6 as netIsIPv6 } from "node:net";

/** The longest text of an IP address (an IPv6 ending in dotted IPv4). Longer input is refused before any parsing. */
export const MAX_IP_LENGTH = 45;

/** Kubernetes' wording for an address that does not parse (IsValidIP). */
export const INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/**
 * Whether `s` is an IPv4 address in canonical dotted decimal: no leading
 * zeros (`0177.0.0.1` is 127.0.0.1 to inet_aton, hence to iptables), no
 * other spellings. Stricter than Kubernetes' ParseIPSloppy on purpose.
 */
export function isIPv4(s: string): boolean {
  return s.length <= 15 && netIsIPv4(s);
}

/** Whether `s` is an IPv4 or IPv6 address (no zone: `fe80::1%eth0` is refused, as Go's ParseIP does). */
export function isIP(s: string): boolean {
  return s.length <= MAX_IP_LENGTH && (netIsIPv4(s) || (netIsIPv6(s) && !s.includes("%")));
}

/** The 16 bytes of an IP (IPv4 as ::ffff:a.b.c.d, as Go keeps it); undefined when `s` is not an IP. */
export function ipBytes(s: string): Uint8Array | undefined {
  if (!isIP(s)) return undefined;
  const out = new Uint8Array(16);
  if (netIsIPv4(s)) {
    out[10] = 0xff;
    out[11] = 0xff;
    s.split(".").forEach((p, i) => (out[12 + i] = Number(p)));
    return out;
  }
  let text = s;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".", lastColon)) {
    // An embedded IPv4 at the end is the last two groups: spell them in hex.
    const [a = 0, b = 0, c = 0, d = 0] = text
      .slice(lastColon + 1)
      .split(".")
      .map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", rest] = text.split("::");
  const groups = (part: string): number[] => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = groups(rest ?? "");
  const words = rest === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/** Whether 16 bytes are an IPv4 address (::ffff:a.b.c.d). */
const isV4Mapped = (b: Uint8Array): boolean => b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;

/**
 * Kubernetes' ValidateNonSpecialIP: the reasons an address may not be an
 * endpoint or an external IP (unspecified, loopback, link-local unicast,
 * link-local multicast), in its words; empty when it may. IPv4-mapped IPv6
 * (`::ffff:127.0.0.1`) counts as the IPv4 it maps, as in Go.
 */
export function specialIpReasons(s: string): string[] {
  const b = ipBytes(s);
  if (!b) return [INVALID_IP];
  const why: string[] = [];
  const v4 = isV4Mapped(b);
  if (v4 ? b.slice(12).every((x) => x === 0) : b.every((x) => x === 0)) why.push(`may not be unspecified (${s})`);
  if (v4 ? b[12] === 127 : b.slice(0, 15).every((x) => x === 0) && b[15] === 1) why.push("may not be in the loopback range (127.0.0.0/8, ::1/128)");
  if (v4 ? b[12] === 169 && b[13] === 254 : b[0] === 0xfe && ((b[1] as number) & 0xc0) === 0x80)
    why.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)");
  if (v4 ? b[12] === 224 && b[13] === 0 && b[14] === 0 : b[0] === 0xff && ((b[1] as number) & 0x0f) === 0x02) {
    why.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
  }
  return why;
}
