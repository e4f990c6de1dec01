import type pg from 'pg';

/** A parameter of the store's statements: what its facets pass (text, numbers, lists of them, NULL). */
type Scalar = string | number | boolean | null | undefined;

/**
 * `EXECUTE "name"(literals)`: the statement prepared under `name` on a connection, run with
 * `params` written in as literals, for a simple query that carries several statements in one round
 * trip (TenantDb). Each literal is the text node-postgres would send for the parameter, quoted
 * (`quote`: the connection's escapeLiteral), so PostgreSQL reads it with the parameter's type as
 * it reads a bound value. Undefined when a parameter is not one the store sends (an object, a
 * nested list): the caller then sends the statement itself.
 */
export function executeText(
  name: string,
  params: readonly unknown[],
  quote: (text: string) => string,
  quoteName: (name: string) => string,
): string | undefined {
  const literals: string[] = [];
  for (const param of params) {
    const literal = literalOf(param, quote);
    if (literal === undefined) return undefined;
    literals.push(literal);
  }
  return `EXECUTE ${quoteName(name)}(${literals.join(', ')})`;
}

/**
 * executeText of the statement `name` (text `sql`) on `client`, if the pool still sends `EXECUTE`
 * (`executable`: StatementNames) and node-postgres's record of what it parsed on that connection
 * holds this very text under the name; else undefined, and the caller sends the statement itself.
 */
export function executeOnClient(
  client: pg.PoolClient,
  executable: boolean,
  name: string,
  sql: string,
  params: readonly unknown[],
): string | undefined {
  if (!executable) return undefined;
  const parsed = (client as unknown as { connection: { parsedStatements: Record<string, string | undefined> } })
    .connection.parsedStatements;
  if (parsed[name] !== sql) return undefined;
  return executeText(
    name,
    params,
    (text) => client.escapeLiteral(text),
    (id) => client.escapeIdentifier(id),
  );
}

function literalOf(param: unknown, quote: (text: string) => string): string | undefined {
  if (param === null || param === undefined) return 'NULL';
  if (isScalar(param)) return quote(String(param));
  if (!Array.isArray(param)) return undefined;
  const elements: string[] = [];
  for (const element of param as unknown[]) {
    if (!isScalar(element)) return undefined;
    elements.push(arrayElement(element));
  }
  return quote(`{${elements.join(',')}}`);
}

function isScalar(value: unknown): value is Scalar {
  return value === null || value === undefined || ['string', 'number', 'boolean'].includes(typeof value);
}

/** An element of PostgreSQL's array literal, quoted as node-postgres quotes it (arrayString). */
function arrayElement(element: Scalar): string {
  if (element === null || element === undefined) return 'NULL';
  return `"${String(element).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
