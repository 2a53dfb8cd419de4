/**
 * Wire compatibility of our .proto with ojs-proto v0.3.0: every message,
 * field (name, number, type, label), enum value and RPC recorded in
 * ../shared/spec/grpc-proto.md is read from its tables and checked against
 * the files the SDK ships (loaded with protobufjs). Our additions (decision
 * 0041/0042) are the only names the tables do not have.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { PROTO_DIR } from '../src/proto.ts';

const DIGEST = fileURLToPath(new URL('../../../../shared/spec/grpc-proto.md', import.meta.url));
const ADDED_FIELDS = new Set([
  'EnqueueOptions.pending',
  'Job.parent_results',
  'Job.parent_results_by_step',
  'Job.workflow_step_id',
]);
const ADDED_TYPES = new Set(['ActivateJobRequest', 'ActivateJobResponse']);
const ADDED_RPCS = new Set(['ActivateJob']);

interface FieldRow {
  message: string;
  name: string;
  id: number;
  type: string;
  label: string;
}

const tick = (text: string | undefined) => (text ?? '').replace(/[`*]/g, '').trim();

/** Field, enum and RPC rows of the digest's tables and enum paragraphs. */
function readDigest(text: string) {
  const fields: FieldRow[] = [];
  const messages = new Set<string>();
  const enums = new Map<string, Map<string, number>>();
  const rpcs: { name: string; request: string; response: string; streaming: boolean }[] = [];
  let heading = '';
  let header: string[] = [];
  let message = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) {
      heading = line;
      header = [];
      continue;
    }
    for (const m of line.matchAll(/`enum (\w+)`:/g)) enums.set(m[1]!, new Map());
    for (const m of line.matchAll(/`([A-Z][A-Z0-9_]+)` = (\d+)/g)) {
      const owner = [...enums.keys()].find((e) =>
        m[1]!.startsWith(e.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()),
      );
      if (owner !== undefined) enums.get(owner)!.set(m[1]!, Number(m[2]));
    }
    if (!line.startsWith('|')) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.every((c) => /^-+$/.test(c))) continue;
    if (header.length === 0) {
      header = cells;
      continue;
    }
    const col = (name: string) => cells[header.indexOf(name)];
    if (header[0] === 'Value' && header[1] === '#') {
      const name = /`enum (\w+)`/.exec(heading)?.[1];
      if (name !== undefined) {
        if (!enums.has(name)) enums.set(name, new Map());
        enums.get(name)!.set(tick(cells[0]), Number(cells[1]));
      }
    } else if (header[1] === 'RPC') {
      rpcs.push({
        name: tick(col('RPC')),
        request: tick(col('Request')),
        response: tick(col('Response')).replace(/^stream /, ''),
        streaming: (col('Response') ?? '').includes('stream'),
      });
    } else if (header.includes('Field') && header.includes('#')) {
      if (header[0] === 'Message') {
        if (tick(cells[0]) !== '') message = tick(cells[0]);
      } else message = /`(\w+)`/.exec(heading)?.[1] ?? '';
      messages.add(message);
      const name = tick(col('Field'));
      if (name === '—' || name === '') continue;
      fields.push({
        message,
        name,
        id: Number(col('#')),
        type: tick(col('Type')),
        label: tick(col('Label')),
      });
    }
  }
  return { fields, messages, enums, rpcs };
}

const WELL_KNOWN: Record<string, string> = {
  Value: 'google.protobuf.Value',
  Struct: 'google.protobuf.Struct',
  Timestamp: 'google.protobuf.Timestamp',
  Duration: 'google.protobuf.Duration',
};

test('our .proto matches every message, field, enum and RPC of ojs-proto v0.3.0', (t) => {
  if (!existsSync(DIGEST)) {
    if (process.env.CI === 'true') throw new Error(`${DIGEST} is missing`);
    t.skip(`${DIGEST} is not here`);
    return;
  }
  const digest = readDigest(readFileSync(DIGEST, 'utf8'));
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  root.loadSync(
    ['job', 'queue', 'worker', 'workflow', 'events', 'service'].map((f) => `ojs/v1/${f}.proto`),
    { keepCase: true },
  );
  root.resolveAll();
  const pkg = root.lookup('ojs.v1') as protobuf.Namespace;

  // Fields: same number, type and label.
  assert.ok(digest.fields.length > 150, `${digest.fields.length} field rows read`);
  for (const row of digest.fields) {
    const type = pkg.lookupType(row.message);
    const field = type.fields[row.name];
    assert.ok(field, `${row.message}.${row.name} exists`);
    assert.equal(field.id, row.id, `${row.message}.${row.name} number`);
    const map = /map<(\w+), (\w+)>/.exec(row.label);
    if (map) {
      assert.ok(field instanceof protobuf.MapField, `${row.message}.${row.name} is a map`);
      assert.equal((field as protobuf.MapField).keyType, map[1]);
      assert.equal(field.type, map[2]);
      continue;
    }
    assert.equal(field.repeated, row.label === 'repeated', `${row.message}.${row.name} label`);
    const expected = WELL_KNOWN[row.type] ?? row.type;
    const actual = field.resolvedType ? field.resolvedType.fullName.replace(/^\./, '') : field.type;
    assert.equal(actual.replace(/^ojs\.v1\./, ''), expected, `${row.message}.${row.name} type`);
  }
  // No field of ours that the protocol lacks, apart from the additions.
  for (const name of digest.messages) {
    const type = pkg.lookupType(name);
    const known = new Set(digest.fields.filter((f) => f.message === name).map((f) => f.name));
    for (const field of Object.keys(type.fields)) {
      assert.ok(
        known.has(field) || ADDED_FIELDS.has(`${name}.${field}`),
        `${name}.${field} is ours`,
      );
    }
  }
  // Enums: every value with its number, and nothing else.
  assert.equal(digest.enums.size, 6, `enums read: ${[...digest.enums.keys()].join(', ')}`);
  for (const [name, values] of digest.enums) {
    const actual = (pkg.lookupEnum(name) as protobuf.Enum).values;
    assert.deepEqual(actual, Object.fromEntries(values), `enum ${name}`);
  }
  // RPCs in declaration order, with their types and streaming.
  const service = pkg.lookupService('OJSService');
  const methods = service.methodsArray.filter((m) => !ADDED_RPCS.has(m.name));
  assert.deepEqual(
    methods.map((m) => [m.name, m.requestType, m.responseType, Boolean(m.responseStream)]),
    digest.rpcs.map((r) => [r.name, r.request, r.response, r.streaming]),
  );
  // Every message type we declare is one of the protocol's (or an addition).
  const declared = pkg.nestedArray.filter((n) => n instanceof protobuf.Type).map((n) => n.name);
  const documented = new Set([
    ...digest.messages,
    ...digest.rpcs.flatMap((r) => [r.request, r.response]),
    'Job',
  ]);
  for (const name of declared) {
    assert.ok(documented.has(name) || ADDED_TYPES.has(name), `message ${name} is documented`);
  }
});
