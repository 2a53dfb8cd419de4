/**
 * Requests that Node's HTTP parser refuses before Fastify sees them: headers
 * over Node's limit (431, the URL counts), malformed request lines or bytes
 * the parser does not accept (400), a request not received in time (408).
 * They are answered in the OJS error envelope with the binding's headers and
 * `Connection: close`: the connection cannot be reused after a parse error,
 * and a client that is told so opens a new one instead of failing its next
 * request with ECONNRESET.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { OjsError } from '@ojs/core';
import { OJS_MEDIA_TYPE, OJS_VERSION, requestIdFrom } from './wire.ts';

/** How long a refused connection may linger for the client to read the answer. */
const LINGER_MS = 5_000;

function errorFor(code: string | undefined): OjsError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new OjsError(
        'headers_too_large',
        'The request headers (with the URL) exceed the server limit.',
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new OjsError('request_timeout', 'The request was not received in time.');
    default:
      return new OjsError(
        'invalid_request',
        `The request is not valid HTTP/1.1${code === undefined ? '' : ` (${code})`}.`,
      );
  }
}

/** The `clientErrorHandler` of the Fastify instance (see buildApp). */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const ojs = errorFor(error.code);
  const id = requestIdFrom(undefined);
  const body = JSON.stringify(ojs.toBody(id));
  // As Node does: answer unless a response on this connection has already
  // started to go out (ours would be spliced into it); then just end.
  const inFlight = (socket as Socket & { _httpMessage?: { _headerSent?: boolean } | null })
    ._httpMessage;
  if (socket.writable && inFlight?._headerSent !== true) {
    socket.end(
      `HTTP/1.1 ${ojs.status} ${STATUS_CODES[ojs.status]}\r\n` +
        `Content-Type: ${OJS_MEDIA_TYPE}\r\n` +
        `OJS-Version: ${OJS_VERSION}\r\n` +
        `X-Request-Id: ${id}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  } else {
    socket.destroy();
  }
}
