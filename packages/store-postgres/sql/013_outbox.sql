-- 013_outbox: transactional enqueue (decision 0109). An application that
-- shares the database writes a job into `outbox` inside its own
-- transaction: the row exists if and only if that transaction commits.
-- The server relays committed rows into jobs through its normal enqueue
-- path (core validates them; nothing here is a second validator) and
-- deletes each row in the same transaction that inserts its job, so a row
-- becomes exactly one job even when a relaying process dies half-way.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).
--
-- state: pending (to relay) or invalid (core refused the envelope: kept
-- with its error, shown by the API, `ojs outbox` and the dashboard, never
-- retried until an operator says so). A relaying process leases the rows it
-- works on (lease_owner, lease_until), so several processes take each row
-- once; a lease left by a dead process expires and the row is relayed again.
CREATE TABLE outbox (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  envelope    jsonb NOT NULL,
  state       text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'invalid')),
  attempts    integer NOT NULL DEFAULT 0,
  error       jsonb,
  lease_owner text,
  lease_until timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
-- The relay's claim: pending rows in commit order.
CREATE INDEX outbox_pending ON outbox (id) WHERE state = 'pending';

-- A UUIDv7 (RFC 9562) from the clock and gen_random_uuid()'s random bits:
-- the id `enqueue` gives a job, so the application knows it before COMMIT.
CREATE FUNCTION uuidv7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

-- Every committed insert wakes the relays at once (NOTIFY is delivered at
-- COMMIT, never for a rolled-back transaction). One notification per
-- statement: a bulk INSERT ... SELECT costs one.
CREATE FUNCTION outbox_notify() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_outbox', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- enqueue(type, args, options, meta): one job, as the body of POST
-- /ojs/v1/jobs would give it, with a fresh UUIDv7 id, which is returned.
-- NULL options and meta are left out of the envelope.
CREATE FUNCTION enqueue(
  job_type text,
  args jsonb DEFAULT '[]'::jsonb,
  options jsonb DEFAULT NULL,
  meta jsonb DEFAULT NULL
) RETURNS uuid
LANGUAGE sql VOLATILE
SET search_path FROM CURRENT
AS $$
  -- Only a NULL options or meta is left out: nulls inside args, options
  -- and meta stay exactly as given (jsonb_strip_nulls would remove them).
  INSERT INTO outbox (envelope)
  VALUES (jsonb_build_object('id', uuidv7(), 'type', job_type, 'args', args)
          || CASE WHEN options IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('options', options) END
          || CASE WHEN meta IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('meta', meta) END)
  RETURNING (envelope ->> 'id')::uuid
$$;

-- enqueue_envelope(body): a whole envelope, the body of POST /ojs/v1/jobs.
-- A client-chosen id is kept (and, as over HTTP, refused if taken); an
-- object without one gets a fresh UUIDv7. Returns the id as text, as the
-- envelope has it (NULL if it has none): the server judges it, not this.
CREATE FUNCTION enqueue_envelope(body jsonb) RETURNS text
LANGUAGE sql VOLATILE
SET search_path FROM CURRENT
AS $$
  INSERT INTO outbox (envelope)
  VALUES (CASE WHEN jsonb_typeof(body) = 'object' AND NOT body ? 'id'
               THEN body || jsonb_build_object('id', uuidv7())
               ELSE body END)
  RETURNING CASE WHEN jsonb_typeof(envelope) = 'object' THEN envelope ->> 'id' END
$$;
