/**
 * The webhooks extension's routes (ext-webhooks §1.1, C2): subscriptions
 * with `{subscription}` wrappers (the secret on create and rotate only),
 * DELETE 204, the `webhook.test` send, secret rotation, and the delivery
 * log with replay. Every route is scoped to the request's tenant (resolved
 * once by the binding, app.ts).
 */
import {
  webhookDeliveriesResponse,
  webhookDeliveryToWire,
  webhookSubscriptionResponse,
  webhookSubscriptionsResponse,
} from '@ojs/engine';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { objectBody, pageParams } from '../wire.ts';

const PREFIX = '/ojs/v1/webhooks';

type IdParams = { Params: { id: string } };

/** The request's tenant as the binding resolved it (app.ts); undefined: an operator (every tenant). */
const tenantOf = (request: FastifyRequest): string | undefined => request.ojsTenant?.id;

export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  const webhooks = app.engine.webhooks;

  app.post(`${PREFIX}/subscriptions`, async (request, reply) => {
    const sub = await webhooks.createSubscription(objectBody(request.body), tenantOf(request));
    reply.code(201);
    return webhookSubscriptionResponse(sub, true);
  });

  app.get(`${PREFIX}/subscriptions`, async (request) =>
    webhookSubscriptionsResponse(await webhooks.subscriptions.list(tenantOf(request))),
  );

  app.get<IdParams>(`${PREFIX}/subscriptions/:id`, async (request) =>
    webhookSubscriptionResponse(
      await webhooks.subscriptions.get(request.params.id, tenantOf(request)),
    ),
  );

  app.patch<IdParams>(`${PREFIX}/subscriptions/:id`, async (request) =>
    webhookSubscriptionResponse(
      await webhooks.updateSubscription(
        request.params.id,
        objectBody(request.body),
        tenantOf(request),
      ),
    ),
  );

  app.delete<IdParams>(`${PREFIX}/subscriptions/:id`, async (request, reply) => {
    await webhooks.deleteSubscription(request.params.id, tenantOf(request));
    reply.code(204).send();
  });

  app.post<IdParams>(`${PREFIX}/subscriptions/:id/test`, async (request) => {
    objectBody(request.body, { allowEmpty: true });
    return webhooks.testSubscription(request.params.id, tenantOf(request));
  });

  app.post<IdParams>(`${PREFIX}/subscriptions/:id/rotate-secret`, async (request) => {
    objectBody(request.body, { allowEmpty: true });
    return webhookSubscriptionResponse(
      await webhooks.rotateSecret(request.params.id, tenantOf(request)),
      true,
    );
  });

  app.get<{
    Querystring: { subscription_id?: string; state?: string; cursor?: string; limit?: string };
  }>(`${PREFIX}/deliveries`, async (request) => {
    const q = request.query;
    const { limit } = pageParams(q, 50, 500);
    const deliveries = await webhooks.listDeliveries(
      { subscriptionId: q.subscription_id, state: q.state, after: q.cursor, limit },
      tenantOf(request),
    );
    return webhookDeliveriesResponse(deliveries, limit);
  });

  app.get<IdParams>(`${PREFIX}/deliveries/:id`, async (request) => ({
    delivery: webhookDeliveryToWire(
      await webhooks.getDelivery(request.params.id, tenantOf(request)),
    ),
  }));

  app.post<IdParams>(`${PREFIX}/deliveries/:id/retry`, async (request) => {
    objectBody(request.body, { allowEmpty: true });
    return {
      delivery: webhookDeliveryToWire(
        await webhooks.retryDelivery(request.params.id, tenantOf(request)),
      ),
    };
  });
}
