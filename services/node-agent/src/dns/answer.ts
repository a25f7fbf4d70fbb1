import { isIPv4 } from "node:net";
import type { Answer, Packet, Question } from "dns-packet";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { CLUSTER_DOMAIN } from "./resolv-conf.js";
import type { DnsSnapshot } from "./snapshot.js";

/** Seconds clients may cache what the responder says (also the SOA minimum: negative caching). */
export const DNS_TTL = 5;

/** Response codes, as the low four bits of the header flags. */
export const Rcode = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
/** A response code. */
export type Rcode = (typeof Rcode)[keyof typeof Rcode];

const QR = 0x8000;
const AA = 0x0400;
const RD = 0x0100;
const RA = 0x0080;

/** The rcode of an encoded or decoded packet's flags. */
export const rcodeOf = (p: Packet): number => (p.flags ?? 0) & 0xf;

/** Whether `name` lies in the cluster domain (is answered, never forwarded). */
export function inDomain(name: string, domain = CLUSTER_DOMAIN): boolean {
  const n = trimDot(name).toLowerCase();
  const d = trimDot(domain).toLowerCase();
  return n === d || n.endsWith(`.${d}`);
}

/**
 * A response with no records: the query's id, question and RD bit, the
 * given rcode, and an EDNS OPT record when the query had one.
 */
export function emptyResponse(query: Packet, rcode: Rcode, authoritative = false): Packet {
  const q = query.flags ?? 0;
  const edns = (query.additionals ?? []).some((a) => a.type === "OPT");
  return {
    type: "response",
    id: query.id ?? 0,
    flags: QR | (q & RD) | RA | (authoritative ? AA : 0) | rcode,
    questions: query.questions ?? [],
    answers: [],
    authorities: [],
    additionals: edns ? [{ type: "OPT", name: ".", udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : [],
  };
}

/**
 * Answers a query about the cluster domain from a snapshot, like
 * Kubernetes' DNS: `<svc>.<ns>.svc.<domain>` A → the ClusterIP (headless:
 * the ready endpoint IPs), `_<port>._<proto>.<svc>.<ns>.svc.<domain>` SRV
 * for named ports, `<host>.<svc>.<ns>.svc.<domain>` → one endpoint of a
 * headless Service, `a-b-c-d.<ns>.pod.<domain>` → a-b-c-d. A known name
 * without records of the type asked → NOERROR and the SOA; an unknown name
 * → NXDOMAIN and the SOA. Names are case-insensitive; answers echo the
 * question's spelling. Returns undefined for a name outside the domain
 * (the caller forwards it).
 */
export function answer(query: Packet, snapshot: DnsSnapshot, domain = CLUSTER_DOMAIN): Packet | undefined {
  const questions = query.questions ?? [];
  if (questions.length !== 1) return emptyResponse(query, Rcode.FORMERR);
  if (((query.flags ?? 0) >> 11) & 0xf) return emptyResponse(query, Rcode.NOTIMP);
  const q = questions[0]!;
  if (!inDomain(q.name, domain)) return undefined;
  const d = trimDot(domain).toLowerCase();
  const n = trimDot(q.name).toLowerCase();
  const labels = n === d ? [] : n.slice(0, -(d.length + 1)).split(".");
  const found = lookup(labels, q, snapshot, d);
  const res = emptyResponse(query, found ? Rcode.NOERROR : Rcode.NXDOMAIN, true);
  const records = found ?? [];
  const isAnswer = (r: Answer): boolean => r.name === q.name && (isAny(q) || r.type === q.type);
  res.answers = records.filter(isAnswer);
  res.additionals = [...records.filter((r) => !isAnswer(r)), ...(res.additionals ?? [])];
  if (res.answers.length === 0) res.authorities = [soa(d)];
  return res;
}

/** The records of the name (empty: the name exists without such records), or undefined: no such name. */
function lookup(labels: string[], q: Question, snap: DnsSnapshot, domain: string): Answer[] | undefined {
  const type = q.type;
  if (labels.length === 0) {
    if (type === "SOA") return [{ ...soa(domain), name: q.name }];
    if (type === "NS") return [{ type: "NS", name: q.name, ttl: DNS_TTL, data: `ns.dns.${domain}` }];
    return [];
  }
  const zone = labels.at(-1);
  const rest = labels.slice(0, -1);
  if (zone === "pod") return podRecords(rest, q);
  if (zone !== "svc") return undefined;
  if (rest.length === 0) return [];
  const ns = rest.at(-1)!;
  if (rest.length === 1) return snap.hasNamespace(ns) ? [] : undefined;
  const svc = snap.service(ns, rest.at(-2)!);
  if (!svc) return undefined;
  const base = `${rest.at(-2)}.${ns}.svc.${domain}`;
  if (rest.length === 2) return serviceRecords(svc, snap.endpoints(ns, rest.at(-2)!), q, base);
  if (rest.length === 3) {
    const ip = readyAddresses(snap.endpoints(ns, rest.at(-2)!)).find((a) => hostLabel(a) === rest[0])?.ip;
    if (!headless(svc) || !ip) return undefined;
    return type === "A" || isAny(q) ? [a(q.name, ip)] : [];
  }
  if (rest.length === 4 && rest[0]!.startsWith("_") && rest[1]!.startsWith("_")) {
    const records = srvRecords(svc, snap.endpoints(ns, rest.at(-2)!), base, rest[0]!.slice(1), rest[1]!.slice(1));
    if (records.length === 0) return undefined;
    return type === "SRV" || isAny(q) ? records.map((r) => (r.type === "SRV" ? { ...r, name: q.name } : r)) : [];
  }
  return undefined;
}

function serviceRecords(svc: Service, eps: Endpoints | undefined, q: Question, base: string): Answer[] {
  const ips = headless(svc) ? readyAddresses(eps).map((x) => x.ip) : [svc.spec?.clusterIp ?? ""];
  const out: Answer[] = [];
  if (q.type === "A" || isAny(q)) out.push(...ips.filter((ip) => isIPv4(ip)).map((ip) => a(q.name, ip)));
  if (q.type === "SRV") out.push(...srvRecords(svc, eps, base).map((r) => (r.type === "SRV" ? { ...r, name: q.name } : r)));
  return out;
}

/** SRV records (and the targets' A records) for the Service's ports, or only the one named `port` with `proto`. */
function srvRecords(svc: Service, eps: Endpoints | undefined, base: string, port?: string, proto?: string): Answer[] {
  const want = (p: { name: string; protocol: string }): boolean =>
    port === undefined ? p.name !== "" : p.name.toLowerCase() === port && (p.protocol || "TCP").toLowerCase() === proto;
  const out: Answer[] = [];
  if (!headless(svc)) {
    const ip = svc.spec?.clusterIp ?? "";
    for (const p of (svc.spec?.ports ?? []).filter(want)) out.push(srv(base, p.port, base));
    if (out.length > 0 && isIPv4(ip)) out.push(a(base, ip));
    return out;
  }
  for (const sub of eps?.subsets ?? []) {
    for (const p of sub.ports.filter(want)) {
      for (const addr of sub.addresses) {
        const target = `${hostLabel(addr)}.${base}`;
        out.push(srv(base, p.port, target));
        if (isIPv4(addr.ip)) out.push(a(target, addr.ip));
      }
    }
  }
  return out;
}

function podRecords(rest: string[], q: Question): Answer[] | undefined {
  if (rest.length !== 2) return rest.length < 2 ? [] : undefined;
  const ip = rest[0]!.replaceAll("-", ".");
  if (!isIPv4(ip)) return undefined;
  return q.type === "A" || isAny(q) ? [a(q.name, ip)] : [];
}

/** QTYPE ANY (255): dns-packet decodes it as "ANY", which its types do not list. */
const isAny = (q: Question): boolean => (q.type as string) === "ANY";

const headless = (svc: Service): boolean => svc.spec?.clusterIp === "None";

const readyAddresses = (eps: Endpoints | undefined): { ip: string; hostname: string }[] => (eps?.subsets ?? []).flatMap((s) => s.addresses);

/** An endpoint's label under its Service: its hostname, else its IP with dashes. */
const hostLabel = (addr: { ip: string; hostname: string }): string => (addr.hostname || addr.ip.replaceAll(".", "-").replaceAll(":", "-")).toLowerCase();

const a = (name: string, ip: string): Answer => ({ type: "A", name, ttl: DNS_TTL, data: ip });

const srv = (name: string, port: number, target: string): Answer => ({
  type: "SRV",
  name,
  ttl: DNS_TTL,
  data: { priority: 0, weight: 100, port, target },
});

const soa = (domain: string): Answer => ({
  type: "SOA",
  name: domain,
  ttl: DNS_TTL,
  data: { mname: `ns.dns.${domain}`, rname: `hostmaster.${domain}`, serial: 1, refresh: 7200, retry: 1800, expire: 86400, minimum: DNS_TTL },
});

function trimDot(s: string): string {
  return s.endsWith(".") ? s.slice(0, -1) : s;
}
