/**
 * WebSocket event subscriptions (http-binding §9.3, RT §3; EV §6.2 as an
 * alias) at `GET /ojs/v1/ws` (subprotocol `ojs.v1` when offered). Like the
 * SSE streams, every subscription follows the event log
 * (engine/src/event-tail.ts), so it is resumable and loses nothing while
 * the log holds the events.
 *
 * Client -> server:
 *   {"action":"subscribe","channel":"job:{id}"|"queue:{name}"|"all","event_types"?:[...]}
 *   {"action":"subscribe","channel":"events","filter":{"event_types","queues"}}  (EV alias of "all")
 *   {"action":"unsubscribe","channel"}
 *   {"action":"resume","last_event_id"}   (every channel restarts after that event)
 * Server -> client:
 *   {"type":"subscribed","channel","event_types"?, "subscription_id"}
 *   {"type":"unsubscribed","channel"}
 *   {"type":"event","channel","event","data":<envelope>,"id","timestamp"}
 *   {"type":"error","code","message"}
 * A new subscribe to a channel replaces its filter. Pings every 30 s; a
 * connection without a pong for 10 s more is closed.
 */
import { randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import { inTenant, OjsError } from '@ojs/core';
import type { TailFilter } from '@ojs/engine';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';

const PING_MS = 30_000;
const PONG_GRACE_MS = 10_000;

interface Subscription {
  controller: AbortController;
  filter: TailFilter;
  id: string;
}

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') && value.length > 0
    ? (value as string[])
    : undefined;
}

export async function websocketRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;
  await app.register(websocket, {
    options: {
      handleProtocols: (protocols) => (protocols.has('ojs.v1') ? 'ojs.v1' : false),
      maxPayload: 64 * 1024,
    },
  });

  const onSocket = (socket: WebSocket, request: FastifyRequest) => {
    const tenant = request.ojsTenant;
    const subscriptions = new Map<string, Subscription>();
    const send = (message: unknown) =>
      new Promise<void>((resolve) => {
        if (socket.readyState !== socket.OPEN) return resolve();
        // Resolves once the frame left: a slow client paces its own subscriptions.
        socket.send(JSON.stringify(message), () => resolve());
      });
    const error = (code: string, message: string) => send({ type: 'error', code, message });

    let alive = true;
    const pinger = setInterval(() => {
      if (!alive) {
        socket.terminate();
        return;
      }
      alive = false;
      socket.ping();
      // The pong must come within the grace period after the ping.
      setTimeout(() => {
        if (!alive) socket.terminate();
      }, PONG_GRACE_MS).unref();
    }, PING_MS);
    socket.on('pong', () => {
      alive = true;
    });

    const follow = async (
      channel: string,
      subscription: Subscription,
      after: string | undefined,
    ) => {
      const { signal } = subscription.controller;
      try {
        for await (const events of engine.events.follow(subscription.filter, after, signal)) {
          for (const event of events) {
            await send({
              type: 'event',
              channel,
              event: event.type,
              data: event,
              id: event.id,
              timestamp: event.time,
            });
          }
        }
      } catch (caught) {
        engine.logger.warn({ err: caught, channel }, 'websocket subscription failed');
        await error('internal_error', `The subscription to ${channel} failed.`);
      }
    };

    const subscribe = async (message: Record<string, unknown>) => {
      let channel = message.channel;
      const filterSpec = (message.filter ?? {}) as Record<string, unknown>;
      const types = strings(message.event_types) ?? strings(filterSpec.event_types);
      let filter: TailFilter = { types, queues: strings(filterSpec.queues) };
      if (channel === 'events') channel = 'all'; // EV §6.2's form
      if (typeof channel !== 'string') return error('invalid_request', 'channel is required.');
      if (channel.startsWith('job:')) {
        const id = channel.slice(4);
        const job = await engine.store.getJob(id);
        if (job === null || !inTenant(job, tenant)) {
          return error('not_found', `Job '${id}' not found.`);
        }
        filter = { types, queues: [job.queue], subject: id };
      } else if (channel.startsWith('queue:')) {
        const name = channel.slice(6);
        const queues = await engine.listQueues();
        if (!queues.some((q) => q.name === name)) {
          return error('not_found', `Queue '${name}' not found.`);
        }
        filter = { types, queues: [name] };
      } else if (channel !== 'all') {
        return error(
          'invalid_request',
          `Unknown channel '${channel}' (job:{id}, queue:{name}, all).`,
        );
      }
      if (tenant !== undefined) filter = { ...filter, tenant: tenant.id };
      // Where it starts is fixed before the acknowledgement: every event
      // committed after the client was told "subscribed" is delivered.
      const start =
        typeof message.after === 'string' ? message.after : await engine.events.latestId(filter);
      subscriptions.get(channel)?.controller.abort();
      const subscription = { controller: new AbortController(), filter, id: `sub_${randomUUID()}` };
      subscriptions.set(channel, subscription);
      await send({
        type: 'subscribed',
        action: 'subscribed',
        channel,
        subscription_id: subscription.id,
        ...(types === undefined ? {} : { event_types: types }),
      });
      void follow(channel, subscription, start);
    };

    socket.on('message', (raw) => {
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(String(raw)) as Record<string, unknown>;
        if (typeof message !== 'object' || message === null) throw new Error('not an object');
      } catch {
        void error('invalid_request', 'Messages must be JSON objects.');
        return;
      }
      switch (message.action) {
        case 'subscribe':
          void subscribe(message);
          return;
        case 'unsubscribe': {
          const channel =
            typeof message.channel === 'string'
              ? message.channel
              : [...subscriptions].find(([, s]) => s.id === message.subscription_id)?.[0];
          if (channel === undefined || !subscriptions.has(channel)) {
            void error('not_found', 'No such subscription.');
            return;
          }
          subscriptions.get(channel)!.controller.abort();
          subscriptions.delete(channel);
          void send({ type: 'unsubscribed', action: 'unsubscribed', channel });
          return;
        }
        case 'resume': {
          if (typeof message.last_event_id !== 'string') {
            void error('invalid_request', 'last_event_id is required.');
            return;
          }
          void (async () => {
            const lastId = message.last_event_id as string;
            const point = await engine.events.resumePoint({}, lastId);
            if (point.gap) {
              // RT §3: the subscriptions go on from where they are.
              await error('unknown_event_id', `Event '${lastId}' is not in the log (pruned?).`);
              return;
            }
            for (const [channel, old] of subscriptions) {
              old.controller.abort();
              const renewed = { ...old, controller: new AbortController() };
              subscriptions.set(channel, renewed);
              void follow(channel, renewed, lastId);
            }
          })();
          return;
        }
        default:
          void error('invalid_request', 'action must be subscribe, unsubscribe or resume.');
      }
    });
    socket.on('close', () => {
      clearInterval(pinger);
      for (const subscription of subscriptions.values()) subscription.controller.abort();
      subscriptions.clear();
    });
  };
  // A plain GET (no Upgrade) gets an OJS error, not the plugin's bare 404.
  app.route({
    method: 'GET',
    url: '/ojs/v1/ws',
    wsHandler: onSocket,
    handler: async () => {
      throw new OjsError(
        'invalid_request',
        'GET /ojs/v1/ws takes a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket).',
      );
    },
  });
}
