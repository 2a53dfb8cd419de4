/**
 * Names derived from the store's schema: the quoted schema identifier, the
 * NOTIFY channel and the advisory-lock namespaces. Schema names are plain
 * lowercase identifiers so they never need escaping beyond double quotes.
 */

export const DEFAULT_SCHEMA = 'ojs';

const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,47}$/;

export function assertSchemaName(schema: string): string {
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new Error(
      `Invalid PostgreSQL schema name '${schema}': use 1-48 lowercase letters, digits and '_', not starting with a digit.`,
    );
  }
  return schema;
}

/** The schema as a quoted identifier for SQL text. */
export function quoteSchema(schema: string): string {
  return `"${assertSchemaName(schema)}"`;
}

/** LISTEN/NOTIFY channel on which the store announces jobs that became available. */
export function jobsAvailableChannel(schema: string): string {
  return `${assertSchemaName(schema)}_jobs_available`;
}

/**
 * Advisory lock keys are `hashtextextended(<text>, 0)` of these strings, so
 * stores in different schemas of one database never contend.
 */
export const lockText = {
  migrate: (schema: string) => `ojs:${schema}:migrate`,
  queue: (schema: string, queue: string) => `ojs:${schema}:queue:${queue}`,
  rateKey: (schema: string, key: string) => `ojs:${schema}:rate:${key}`,
  tenant: (schema: string, tenant: string) => `ojs:${schema}:tenant:${tenant}`,
};

/**
 * Takes the store's own `schema` query parameter out of a connection string
 * (libpq and pg would reject or ignore it): postgres://host/db?schema=NAME.
 */
export function splitSchemaParam(connectionString: string | undefined): {
  connectionString: string | undefined;
  schema: string | undefined;
} {
  if (connectionString === undefined || !connectionString.includes('schema=')) {
    return { connectionString, schema: undefined };
  }
  try {
    const url = new URL(connectionString);
    const schema = url.searchParams.get('schema') ?? undefined;
    url.searchParams.delete('schema');
    return { connectionString: url.toString(), schema };
  } catch {
    return { connectionString, schema: undefined };
  }
}
