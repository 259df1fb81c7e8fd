import { isIP } from "node:net";

export interface Cidr {
  v6: boolean;
  bits: bigint;
  prefix: number;
}

export function parseCidr(text: string): Cidr {
  const parts = text.trim().split("/");
  const [addr, len] = parts;
  const kind = isIP(addr ?? "");
  if (!addr || kind === 0 || parts.length > 2) throw new RangeError(`not an IP address or CIDR: ${text}`);
  // node:net's isIP takes a zone id (fe80::1%eth0): it names an interface of the machine that wrote
  // it, and a client's address never carries one, so the entry would not mean what it says.
  const zone = addr.indexOf("%");
  if (zone !== -1) throw new RangeError(`not an IP address or CIDR: ${text} (a zone id such as ${addr.slice(zone)} names a network interface, not an address)`);
  const v6 = kind === 6;
  const max = v6 ? 128 : 32;
  // Digits only: Number("") is 0, so "10.0.0.0/" would otherwise be /0 and allow every address.
  if (len !== undefined && !/^\d{1,3}$/.test(len)) throw new RangeError(`bad prefix length in ${text}`);
  const prefix = len === undefined ? max : Number(len);
  if (prefix > max) throw new RangeError(`bad prefix length in ${text}`);
  const bits = toBits(addr);
  // An IPv4-mapped entry (::ffff:10.0.0.0/104) is read as IPv4, as ipAllowed reads a mapped client;
  // kept as IPv6 it could never match one.
  if (v6 && prefix >= 96 && bits >> 32n === 0xffffn) return { v6: false, bits: bits & 0xffffffffn, prefix: prefix - 96 };
  return { v6, bits, prefix };
}

export const parseCidrList = (list: string[]) => list.map(parseCidr);

/**
 * A key's stored allow-list. Rows written before zone ids were refused may hold one; it is dropped,
 * which is how such an entry always matched (fe80::1%eth0 as fe80::1), rather than failing the key.
 */
export const storedCidrList = (list: string[]) => list.map((entry) => parseCidr(entry.replace(/%[^/]*/, "")));

export function ipAllowed(list: Cidr[], ip: string): boolean {
  let addr = ip;
  // An IPv4 client seen through a dual-stack socket arrives as ::ffff:a.b.c.d.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  if (mapped) addr = mapped[1]!;
  const kind = isIP(addr);
  if (kind === 0) return false;
  const bits = toBits(addr);
  const v6 = kind === 6;
  return list.some((c) => {
    if (c.v6 !== v6) return false;
    const width = v6 ? 128n : 32n;
    const shift = width - BigInt(c.prefix);
    return bits >> shift === c.bits >> shift;
  });
}

/**
 * The address a per-address throttle counts by: an IPv4 address as it is (an IPv4-mapped IPv6 one,
 * ::ffff:a.b.c.d, as its IPv4 address), an IPv6 address as its /64 ("2001:db8:0:1::/64"). One
 * IPv6 subscriber is usually given a whole /64, 2^64 addresses: counted one by one, each new address
 * would be a fresh allowance. Anything else (no address known) is its own text.
 */
export function throttleAddress(ip: string): string {
  const addr = ip.replace(/%.*$/, "");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  if (mapped) return mapped[1]!;
  const kind = isIP(addr);
  if (kind === 4) return addr;
  if (kind !== 6) return ip;
  const bits = toBits(addr);
  if (bits >> 32n === 0xffffn) return toV4(bits & 0xffffffffn);
  const top = bits >> 64n;
  const groups = [48n, 32n, 16n, 0n].map((s) => ((top >> s) & 0xffffn).toString(16));
  return `${groups.join(":")}::/64`;
}

const toV4 = (n: bigint) => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join(".");

function toBits(addr: string): bigint {
  if (isIP(addr) === 4) return addr.split(".").reduce((acc, p) => (acc << 8n) | BigInt(Number(p)), 0n);
  let [head, tail] = addr.split("::") as [string, string | undefined];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
  const toGroups = (s: string | undefined) => (s ? s.split(":").filter(Boolean) : []);
  let headG = toGroups(head);
  let tailG = toGroups(tail);
  if (v4) {
    const n = Number(toBits(v4[1]!));
    const groups = [(n >>> 16).toString(16), (n & 0xffff).toString(16)];
    if (tail !== undefined) tailG = [...tailG.slice(0, -1), ...groups];
    else headG = [...headG.slice(0, -1), ...groups];
  }
  const fill = tail === undefined ? [] : Array(8 - headG.length - tailG.length).fill("0");
  return [...headG, ...fill, ...tailG].reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/**
 * The client's address: the direct peer, unless that peer is a trusted proxy. Then X-Forwarded-For is
 * walked from the right (each proxy appends the address it saw) past every trusted hop; the first
 * untrusted entry is the client. Entries left of it are whatever the client claimed, never believed.
 */
export function clientAddress(peer: string | null, forwardedFor: string | null, trusted: Cidr[]): string | null {
  if (!peer || trusted.length === 0 || !forwardedFor || !ipAllowed(trusted, peer)) return peer;
  const hops = forwardedFor.split(",").map((s) => s.trim()).filter(Boolean);
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    client = hops[i]!;
    if (!ipAllowed(trusted, client)) break;
  }
  return client;
}
