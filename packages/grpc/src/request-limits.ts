/**
 * The request limits of core `limits.ts` where only the message shows a
 * breach: its size (the HTTP binding's body limit: payload_too_large), the
 * UTF-8 of its strings (protobufjs would patch invalid bytes with U+FFFD:
 * invalid_payload, as HTTP refuses such a body) and bytes that do not
 * decode. They are checked while grpc-js decodes the message; what is
 * refused there cannot be thrown (grpc-js would answer INTERNAL, without
 * the OJS code), so the decoded request carries the refusal and the call
 * answers it after authentication like any handler's error. Depth, NUL and
 * non-finite numbers are checked on the decoded request by the handlers
 * (core checkRequestJson on the body the HTTP route would get).
 */
import type * as grpc from '@grpc/grpc-js';
import { decodeRequestText, invalidPayload, OjsError, requestTooLarge } from '@ojs/core';
import protobuf from 'protobufjs';

/** grpc-js's own receive limit, also the one a grpc-js client has unless it sets another. */
export const GRPC_DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * The receive limit given to grpc-js. Above it grpc-js refuses a message
 * from its length prefix, before any of our code, with RESOURCE_EXHAUSTED
 * and no OJS code; it is kept well above the body limit so that a request
 * merely over the limit gets the OJS answer, while one call still cannot
 * make the server hold an unbounded message.
 */
export function transportLimit(maxBodyBytes: number): number {
  return Math.max(GRPC_DEFAULT_MAX_MESSAGE_BYTES, 2 * maxBodyBytes);
}

/** protobufjs's reader, with strings decoded as core decodes an HTTP body: strict UTF-8. */
class StrictReader extends protobuf.BufferReader {
  override string(): string {
    return decodeRequestText(this.bytes(), 'A string field of the request');
  }
}

const REFUSED = Symbol('ojs.refused');

/**
 * A method's request decoder with the checks above: proto-loader's, or the
 * method's own reader (enqueue-codec.ts), which reads strings as strictly.
 */
function limitedDeserializer(
  deserialize: grpc.deserialize<unknown>,
  maxBodyBytes: number,
  own: ((bytes: Buffer) => unknown) | undefined,
): grpc.deserialize<unknown> {
  return (bytes) => {
    try {
      if (bytes.length > maxBodyBytes) throw requestTooLarge(maxBodyBytes);
      if (own !== undefined) return own(bytes);
      // proto-loader hands its argument to protobufjs's decode, which takes
      // a reader in place of bytes.
      return deserialize(new StrictReader(bytes) as unknown as Buffer);
    } catch (error) {
      return {
        [REFUSED]:
          error instanceof OjsError
            ? error
            : invalidPayload(`The request message cannot be decoded: ${(error as Error).message}.`),
      };
    }
  };
}

/** A service whose requests are decoded with the checks above (`readers`: methods' own). */
export function withRequestLimits(
  service: grpc.ServiceDefinition,
  maxBodyBytes: number,
  readers: Record<string, (bytes: Buffer) => unknown> = {},
): grpc.ServiceDefinition {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: limitedDeserializer(
          method.requestDeserialize,
          maxBodyBytes,
          readers[name],
        ),
      },
    ]),
  );
}

/** Throws the refusal a request was decoded with, if any. */
export function throwIfRefused(request: unknown): void {
  const refusal =
    typeof request === 'object' && request !== null
      ? (request as { [REFUSED]?: OjsError })[REFUSED]
      : undefined;
  if (refusal !== undefined) throw refusal;
}
