/**
 * Which network addresses a webhook may reach (ext-webhooks §1.3, rec.):
 * a delivery is an outbound request the server makes on a client's
 * behalf, so without a guard any client could make the server call its
 * own loopback services, the private network or a cloud metadata
 * endpoint. Classified on the address actually connected to (the engine
 * resolves, checks and pins), never on a hostname.
 */
import { isIP } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'invalid';

function v4Parts(ip: string): number[] | null {
  const parts = ip.split('.').map(Number);
  return parts.length === 4 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255)
    ? parts
    : null;
}

function classifyV4(ip: string): AddressClass {
  const p = v4Parts(ip);
  if (p === null) return 'invalid';
  const [a, b] = p as [number, number, number, number];
  if (ip === '169.254.169.254') return 'metadata';
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  // Carrier-grade NAT (RFC 6598) is a private network too.
  if (a === 100 && b >= 64 && b <= 127) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  // Multicast and reserved ranges are not somewhere a receiver lives.
  if (a >= 224) return 'private';
  return 'public';
}

/** The 8 groups of an IPv6 address (embedded IPv4 expanded); null when it is not one. */
function v6Groups(ip: string): number[] | null {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const tail = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (tail !== null) {
    const p = v4Parts(tail[1]!);
    if (p === null) return null;
    const hex = `${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
    text = text.slice(0, -tail[1]!.length) + hex;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const rest = halves.length === 2 && halves[1] !== '' ? halves[1]!.split(':') : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  const out = groups.map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? Number.parseInt(g, 16) : Number.NaN));
  return out.some(Number.isNaN) ? null : out;
}

function classifyV6(ip: string): AddressClass {
  const g = v6Groups(ip);
  if (g === null) return 'invalid';
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible: judged as the IPv4 address.
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return classifyV4(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
  }
  // AWS's IPv6 instance metadata endpoint fd00:ec2::254.
  if (g[0] === 0xfd00 && g[1] === 0xec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) {
    return 'metadata';
  }
  if ((g[0]! & 0xfe00) === 0xfc00) return 'private';
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0]! & 0xff00) === 0xff00) return 'private';
  return 'public';
}

/** The class of an IP address (v4 or v6); 'invalid' for anything else. */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip.replace(/%.*$/, ''));
  if (family === 4) return classifyV4(ip);
  if (family === 6) return classifyV6(ip);
  return 'invalid';
}

/** True when a webhook may not connect to `ip` unless the operator allows private targets. */
export function isBlockedAddress(ip: string): boolean {
  return classifyAddress(ip) !== 'public';
}

/** The literal IP of a URL's host ([v6] unbracketed), or null when the host is a name. */
export function literalHostIp(hostname: string): string | null {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(host) === 0 ? null : host;
}
