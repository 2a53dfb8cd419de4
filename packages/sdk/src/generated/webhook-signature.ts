// Generated from @ojs/core (packages/core/src/webhook-signature.ts) by scripts/generate-sdk.ts; do not edit.
// Change the core module and run `node scripts/generate-sdk.ts`.

/**
 * Webhook signatures (ext-webhooks §1.3, C5, C6): HMAC-SHA256 keyed by the
 * subscription secret over `<timestamp>.<raw body bytes>`, sent as
 * `sha256=<hex>`; during a secret rotation one per secret, comma-separated.
 * The verifier is the receivers' half (the SDK ships a copy generated from
 * this module's rules): constant-time comparison, ±5 min of clock skew.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** `sha256=<hex>` of one secret over `<timestamp>.<body>`. */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return `sha256=${mac}`;
}

/** The X-OJS-Signature header value: one signature per secret, comma-separated. */
export function webhookSignatureHeader(
  secrets: readonly string[],
  timestamp: number,
  body: string,
): string {
  return secrets.map((secret) => webhookSignature(secret, timestamp, body)).join(',');
}

export interface VerifyOptions {
  /** Largest clock skew accepted, seconds (default 300). */
  toleranceSec?: number;
  /** The receiver's clock, epoch seconds (default now). */
  nowSec?: number;
}

/**
 * True when `header` holds a signature of `<timestamp>.<body>` by one of
 * `secrets` and the timestamp is within the tolerance. Each candidate is
 * compared in constant time.
 */
export function verifyWebhookSignature(
  secrets: string | readonly string[],
  timestamp: string | number,
  body: string,
  header: string,
  options: VerifyOptions = {},
): boolean {
  const ts = typeof timestamp === 'number' ? timestamp : Number(timestamp);
  if (!Number.isInteger(ts)) return false;
  const now = options.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - ts) > (options.toleranceSec ?? 300)) return false;
  const given = header
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('sha256='));
  let ok = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = Buffer.from(webhookSignature(secret, ts, body));
    for (const candidate of given) {
      const bytes = Buffer.from(candidate);
      // No early exit: every candidate is compared.
      if (bytes.length === expected.length && timingSafeEqual(bytes, expected)) ok = true;
    }
  }
  return ok;
}
