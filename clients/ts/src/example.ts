/**
 * What a character builder does through sheetd's API, from TypeScript:
 *
 *   node dist/src/example.js --url http://127.0.0.1:50051 [--protocol grpc|grpc-web] [--token T]
 *
 * It creates a character on the server's default ruleset, watches it, equips armor (an Apply
 * that is safe to retry), reads why AC changed, and sends two Applies the server rejects, reading
 * their standard error details. It prints what happens, then one line of JSON with the results
 * (`service/tests/ts_client.rs` runs it against a real server over both protocols).
 */
import { parseArgs } from "node:util";
import { connect, op, problem, show, type Problem, type Protocol, type Sheetd, type WatchResponse } from "./client.js";

const { values: args } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:50051" },
    protocol: { type: "string", default: "grpc" },
    token: { type: "string" },
  },
});
const protocol = args.protocol as Protocol;
if (protocol !== "grpc" && protocol !== "grpc-web") {
  throw new Error(`--protocol is grpc or grpc-web, not ${args.protocol}`);
}
const client = connect({ url: args.url!, protocol, token: args.token });

/** AC now (or at a revision). */
async function ac(c: Sheetd, sheetId: string): Promise<string> {
  const r = await c.values({ sheetId, variables: ["AC"] });
  return show(r.values[0]?.value);
}

/** Watches a sheet from a revision until `until` revisions have come, joining split messages. */
async function watch(c: Sheetd, sheetId: string, from: bigint, until: bigint, signal: AbortSignal) {
  const seen: { revision: string; changes: string[] }[] = [];
  let pending: string[] = [];
  for await (const m of c.watch({ sheetId, variables: ["AC"], fromRevision: from }, { signal })) {
    pending.push(...changesOf(m));
    if (m.continued) continue;
    seen.push({ revision: String(m.revision), changes: pending });
    pending = [];
    if (m.revision >= until) break;
  }
  return seen;
}

function changesOf(m: WatchResponse): string[] {
  if (m.event.case !== "changes") return [];
  return m.event.value.changes.map((c) => `${c.ref}: ${show(c.old)} → ${show(c.new)}`);
}

const ping = await client.ping({});
console.log(`connected over ${protocol}: replies up to ${ping.limits?.maxReplyBytes} bytes`);

// A character: the example's inputs, race, size and armor.
const created = await client.createSheet({
  operations: [
    op.setInput("Level", 3),
    ...Object.entries({ STR: 15, DEX: 14, CON: 13, INT: 10, WIS: 12, CHA: 8 }).map(([stat, n]) =>
      op.setInput("Rolled", n, stat),
    ),
    op.addObject("RACE", "Stoneborn"),
    op.addObject("SIZE", "M"),
    op.addObject("EQUIPMENT", "Ring Hauberk", "armor"),
  ],
  variables: ["AC"],
});
const sheet = created.sheet!;
const before = await ac(client, sheet.id);
console.log(`created ${sheet.id} at revision ${sheet.revision}: AC ${before}`);

// Another client watches AC from the revision we have.
const stop = new AbortController();
const watched = watch(connect({ url: args.url!, protocol, token: args.token }), sheet.id, sheet.revision, sheet.revision + 1n, stop.signal);

// Equip heavier armor: once, however often the call is retried.
const requestId = `example-${sheet.id}-harness`;
const equip = {
  sheetId: sheet.id,
  expectedRevision: sheet.revision,
  operations: [op.removeObject("armor"), op.addObject("EQUIPMENT", "Plated Harness", "harness")],
  requestId,
};
const applied = await client.apply(equip);
const retried = await client.apply(equip);
for (const c of applied.changes) console.log(`  ${c.ref}: ${show(c.old)} → ${show(c.new)}`);
console.log(`applied: revision ${applied.revision} (the retry answered revision ${retried.revision})`);
const after = await ac(client, sheet.id);

// Why did AC change?
const why = await client.whyChanged({ sheetId: sheet.id, variable: "AC", fromRevision: sheet.revision });
const causes = why.causes.map((c) => ({
  description: c.description,
  before: show(c.before),
  after: show(c.after),
  paths: c.paths.map((p) => p.vars.join(" → ")),
}));
for (const c of causes) console.log(`AC because ${c.description}: ${c.before} → ${c.after} through ${c.paths.join("; ")}`);

// Two Applies the server refuses, and what their details say.
const rejected: Record<string, Problem> = {};
try {
  await client.apply({ sheetId: sheet.id, expectedRevision: sheet.revision, operations: [op.removeObject("harness")] });
} catch (e) {
  rejected.stale = problem(e);
}
try {
  await client.apply({ sheetId: sheet.id, operations: [op.addObject("EQUIPMENT", "Moon Boots")] });
} catch (e) {
  rejected.unknown = problem(e);
}
for (const [what, p] of Object.entries(rejected)) {
  const at = p.diagnostics.map((d) => `${d.code}: ${d.message}`).join("; ");
  console.log(`${what}: ${p.code} ${p.reason} ${p.violations.map((v) => `${v.type} ${v.subject}`).join(", ")} ${at}`);
}

const seen = await watched;
stop.abort();
for (const s of seen) console.log(`watched revision ${s.revision}: ${s.changes.join(", ")}`);

console.log(
  JSON.stringify({
    protocol,
    sheet: sheet.id,
    before,
    after,
    revision: String(applied.revision),
    retried: String(retried.revision),
    causes,
    rejected: Object.fromEntries(
      Object.entries(rejected).map(([k, p]) => [
        k,
        { code: p.code, reason: p.reason, violations: p.violations, diagnostics: p.diagnostics.map((d) => d.code) },
      ]),
    ),
    watched: seen,
  }),
);
