/**
 * sheetd's web inspector: served by `sheetd serve` at `/`, talking grpc-web to the same server.
 *
 * Sheets are listed and opened; a sheet's values are grouped by scope and searchable, and stay
 * live through Watch (changed values are highlighted). A variable opens its waterfall (Explain's
 * trace), its dependency graph both ways (SVG, clickable), why it changed between two revisions
 * (WhyChanged), and a what-if panel that previews adding or removing objects from the catalog
 * and setting inputs, committing nothing (Preview). The page state is in the address's hash
 * (`#sheet=ID&var=REF`), so a view can be linked.
 */
import type { Operation, SheetInfo, Trace, Value, WatchResponse } from "../gen/sheetd/v1/sheetd_pb.js";
import { Decimal, op, show } from "../src/values.js";
import { connect, readable, savedToken, saveToken, type Sheetd } from "./api.js";
import { byId, fill, h } from "./dom.js";
import { draw } from "./graph.js";
import { waterfall } from "./waterfall.js";

/** Timings the browser test reads (milliseconds since navigation start). */
interface Timings {
  valuesShown?: number;
}
declare global {
  interface Window {
    sheetdTimings: Timings;
  }
}
window.sheetdTimings = {};

const origin = location.origin;
let client: Sheetd = connect(origin, savedToken());

/** The sheet open: its values by ref, its revision, the variable chosen, the live stream. */
const open = {
  id: "",
  info: undefined as SheetInfo | undefined,
  revision: 0n,
  values: new Map<string, Value | undefined>(),
  selected: "",
  live: undefined as AbortController | undefined,
  pending: [] as { label: string; op: Operation }[],
};

// ---------------------------------------------------------------------------------------------
// Errors and status

function fail(e: unknown) {
  const box = byId("error");
  fill(box, h("span", {}, readable(e, origin)), h("button", { type: "button", class: "dismiss", onclick: () => (box.hidden = true) }, "×"));
  box.hidden = false;
}

function clearError() {
  byId("error").hidden = true;
}

/** Runs a call, showing its error instead of throwing. */
async function attempt<T>(f: () => Promise<T>): Promise<T | undefined> {
  try {
    const r = await f();
    return r;
  } catch (e) {
    fail(e);
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The address: #sheet=ID&var=REF

function route(): { sheet: string; variable: string } {
  const p = new URLSearchParams(location.hash.slice(1));
  return { sheet: p.get("sheet") ?? "", variable: p.get("var") ?? "" };
}

function setRoute(sheet: string, variable: string) {
  const p = new URLSearchParams();
  if (sheet) p.set("sheet", sheet);
  if (variable) p.set("var", variable);
  history.replaceState(null, "", `#${p}`);
}

// ---------------------------------------------------------------------------------------------
// Sheets

let nextPage = "";

async function listSheets(more = false) {
  if (!more) nextPage = "";
  const r = await attempt(() => client.listSheets({ idPrefix: byId<HTMLInputElement>("sheet-filter").value.trim(), pageSize: 50, pageToken: nextPage }));
  if (!r) return;
  clearError();
  byId("server").textContent = `connected to ${origin}: ${r.totalSize} sheet${r.totalSize === 1 ? "" : "s"}`;
  const items = r.sheets.map((s) =>
    h(
      "li",
      {},
      h("button", { type: "button", class: s.id === open.id ? "sheet current" : "sheet", "data-sheet": s.id, onclick: () => openSheet(s.id) }, s.id),
      h("span", { class: "meta" }, ` r${s.revision} · ${s.rulesetId} v${s.rulesetVersion}`),
    ),
  );
  const list = byId("sheet-list");
  if (more) list.append(...items);
  else fill(list, ...items);
  nextPage = r.nextPageToken;
  byId("more-sheets").hidden = !nextPage;
}

async function openSheet(id: string, variable = "") {
  open.live?.abort();
  Object.assign(open, { id, info: undefined, values: new Map(), selected: "", pending: [] });
  setRoute(id, variable);
  fill(byId("live-note"));
  fill(byId("tryit-result"));
  fill(byId("why-result"));
  const info = await attempt(() => client.getSheet({ sheetId: id }));
  if (!info?.sheet) return;
  const values = await attempt(() => client.values({ sheetId: id }));
  if (!values) return;
  clearError();
  open.info = info.sheet;
  open.revision = values.revision;
  for (const v of values.values) open.values.set(v.ref, v.value);
  document.querySelectorAll("button.sheet").forEach((b) => b.classList.toggle("current", b.getAttribute("data-sheet") === id));
  showSheetHead();
  showValues();
  window.sheetdTimings.valuesShown ??= performance.now();
  document.body.dataset.sheet = id;
  watch(id, values.revision);
  fillTryIt();
  byId("detail").hidden = false;
  if (variable) await select(variable);
  else fill(byId("var-title"), "Choose a variable");
}

function showSheetHead() {
  const s = open.info;
  if (!s) return;
  fill(
    byId("sheet-head"),
    h("h2", {}, s.id),
    h("span", { id: "revision", "data-revision": String(open.revision) }, `revision ${open.revision}`),
    ` · ruleset ${s.rulesetId} v${s.rulesetVersion} · ${s.contents.length} objects · `,
    h("span", { id: "live", class: open.live ? "live on" : "live" }, open.live ? "live" : "not live"),
  );
}

/** The scope a reference belongs to: its instance (`armor`), or the sheet's globals. */
function scopeOf(ref: string): string {
  const dot = ref.indexOf(".");
  return dot < 0 ? "(global)" : ref.slice(0, dot);
}

function showValues() {
  const query = byId<HTMLInputElement>("search").value.trim().toLowerCase();
  const groups = new Map<string, [string, Value | undefined][]>();
  for (const [ref, v] of open.values) {
    if (query && !ref.toLowerCase().includes(query) && !show(v).toLowerCase().includes(query)) continue;
    const g = scopeOf(ref);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g)!.push([ref, v]);
  }
  const order = [...groups.keys()].sort((a, b) => (a === "(global)" ? -1 : b === "(global)" ? 1 : a.localeCompare(b)));
  const shown = order.map((g) => {
    const rows = groups.get(g)!.map(([ref, v]) =>
      h(
        "tr",
        { "data-ref": ref, class: ref === open.selected ? "selected" : undefined },
        h("td", {}, h("button", { type: "button", class: "link", onclick: () => select(ref) }, ref)),
        h("td", { class: "value" }, show(v)),
      ),
    );
    const kind = open.info?.contents.find((o) => o.id === g);
    const title = kind ? `${g} — ${kind.kind} \`${kind.key}\`` : g;
    return h("details", { open: query !== "" || order.length <= 12 || g === "(global)", "data-scope": g }, h("summary", {}, `${title} (${rows.length})`), h("table", { class: "values" }, h("tbody", {}, ...rows)));
  });
  const count = [...groups.values()].reduce((n, g) => n + g.length, 0);
  fill(byId("values"), h("p", { class: "count" }, `${count} of ${open.values.size} variables`), ...shown);
}

// ---------------------------------------------------------------------------------------------
// Live: Watch

async function watch(id: string, from: bigint) {
  const stop = new AbortController();
  open.live = stop;
  showSheetHead();
  let part: { ref: string; value: Value | undefined }[] = [];
  try {
    for await (const m of client.watch({ sheetId: id, fromRevision: from }, { signal: stop.signal })) {
      part.push(...changed(m));
      if (m.continued) continue;
      if (m.event.case === "deleted") {
        fail(new Error(`sheet ${id} was deleted`));
        break;
      }
      applyLive(m.revision, part, m.event.case === "resync");
      part = [];
    }
  } catch (e) {
    if (!stop.signal.aborted) fail(e);
  }
  if (open.live === stop) {
    open.live = undefined;
    showSheetHead();
  }
}

function changed(m: WatchResponse): { ref: string; value: Value | undefined }[] {
  switch (m.event.case) {
    case "changes":
      return m.event.value.changes.map((c) => ({ ref: c.ref, value: c.new }));
    case "resync":
      return m.event.value.values.map((v) => ({ ref: v.ref, value: v.value }));
    default:
      return [];
  }
}

/** A revision's changes arrived: values updated and the changed ones highlighted. */
function applyLive(revision: bigint, changes: { ref: string; value: Value | undefined }[], resync: boolean) {
  if (resync) open.values.clear();
  for (const c of changes) {
    if (c.value === undefined && !resync) open.values.delete(c.ref);
    else open.values.set(c.ref, c.value);
  }
  open.revision = revision;
  showSheetHead();
  showValues();
  const listed = document.querySelector(`button[data-sheet="${CSS.escape(open.id)}"] + .meta`);
  if (listed && open.info) listed.textContent = ` r${revision} · ${open.info.rulesetId} v${open.info.rulesetVersion}`;
  for (const c of changes) {
    const row = document.querySelector(`#values tr[data-ref="${CSS.escape(c.ref)}"]`);
    row?.classList.add("changed");
  }
  const note = changes.map((c) => `${c.ref} = ${show(c.value)}`).slice(0, 6).join(", ");
  fill(byId("live-note"), `revision ${revision}: ${note}${changes.length > 6 ? ", …" : ""}`);
  if (open.selected && changes.some((c) => c.ref === open.selected)) void select(open.selected);
}

// ---------------------------------------------------------------------------------------------
// A variable: waterfall and graph

async function select(ref: string) {
  open.selected = ref;
  setRoute(open.id, ref);
  document.querySelectorAll("#values tr.selected").forEach((r) => r.classList.remove("selected"));
  document.querySelector(`#values tr[data-ref="${CSS.escape(ref)}"]`)?.classList.add("selected");
  const depth = Number(byId<HTMLSelectElement>("depth").value);
  const x = await attempt(() => client.explain({ sheetId: open.id, variable: ref, depth }));
  if (!x?.trace) return;
  clearError();
  fill(byId("var-title"), `${x.trace.ref} = ${show(x.trace.value)}`, h("span", { class: "meta" }, ` at revision ${x.revision}`));
  fill(byId("waterfall"), waterfall(x.trace, select));
  fill(byId("graph"), draw(x, select));
  const to = byId<HTMLInputElement>("why-to");
  const from = byId<HTMLInputElement>("why-from");
  to.value = String(open.revision);
  from.value = String(open.revision > 0n ? open.revision - 1n : 0n);
  fill(byId("why-result"));
  fill(byId("tryit-result"));
}

// ---------------------------------------------------------------------------------------------
// Why changed

async function whyChanged() {
  if (!open.selected) return;
  const fromRevision = BigInt(byId<HTMLInputElement>("why-from").value || "0");
  const to = byId<HTMLInputElement>("why-to").value;
  const r = await attempt(() => client.whyChanged({ sheetId: open.id, variable: open.selected, fromRevision, toRevision: to ? BigInt(to) : undefined }));
  if (!r) return;
  clearError();
  const causes = r.causes.map((c) =>
    h(
      "li",
      { class: "cause" },
      h("strong", {}, `revision ${c.revision}, operation ${c.operationIndex}: `),
      c.description,
      `: ${show(c.before)} → ${show(c.after)}`,
      c.paths.length ? h("div", { class: "paths" }, ...c.paths.map((p) => h("div", { class: "path" }, p.vars.join(" → ")))) : null,
    ),
  );
  const diff = r.diff
    .filter((d) => d.kind !== 1)
    .map((d) =>
      h(
        "tr",
        { class: `diff kind-${d.kind}` },
        h("td", {}, ["", "unchanged", "added", "removed", "changed"][d.kind] ?? ""),
        h("td", {}, d.modifier),
        h("td", {}, d.from ? `${d.from.kind} ${d.from.instruction} → ${show(d.from.after)}` : ""),
        h("td", {}, d.to ? `${d.to.kind} ${d.to.instruction} → ${show(d.to.after)}` : ""),
      ),
    );
  fill(
    byId("why-result"),
    h("p", {}, `${open.selected}: ${show(r.fromValue)} at revision ${r.fromRevision} → ${show(r.toValue)} at revision ${r.toRevision}`),
    causes.length ? h("ol", { class: "causes" }, ...causes) : h("p", {}, "No operation in that range changed it."),
    diff.length ? h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", {}, "step"), h("th", {}, "modifier"), h("th", {}, "before"), h("th", {}, "after"))), h("tbody", {}, ...diff)) : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Try it: what-if with Preview

async function fillTryIt() {
  const s = open.info;
  if (!s) return;
  const remove = byId<HTMLSelectElement>("remove-object");
  fill(remove, ...s.contents.filter((o) => o.listed).map((o) => h("option", { value: o.id }, `${o.id} (${o.kind} ${o.key})`)));
  const input = byId<HTMLSelectElement>("input-channel");
  fill(input, ...s.channels.filter((c) => c.kind === 1).map((c) => h("option", { value: c.ref }, `${c.ref} = ${show(c.value)}`)));
  const catalog = await attempt(() => client.listCatalog({ rulesetId: s.rulesetId, pageSize: 1 }));
  if (catalog) {
    const kind = byId<HTMLSelectElement>("catalog-kind");
    fill(kind, h("option", { value: "" }, "any kind"), ...catalog.kinds.filter((k) => k.presence === "listed").map((k) => h("option", { value: k.name }, `${k.name} (${k.objects})`)));
  }
  await searchCatalog();
  showPending();
}

async function searchCatalog() {
  const s = open.info;
  if (!s) return;
  const kind = byId<HTMLSelectElement>("catalog-kind").value;
  const text = byId<HTMLInputElement>("catalog-text").value.trim();
  const r = await attempt(() => client.listCatalog({ rulesetId: s.rulesetId, kind, text, pageSize: 25 }));
  if (!r) return;
  const items = r.objects.map((o) =>
    h(
      "li",
      {},
      h("button", { type: "button", class: "add", "data-key": o.key, onclick: () => addPending(`add ${o.kind} ${o.key}`, op.addObject(o.kind, o.key)) }, "Add"),
      ` ${o.kind} `,
      h("strong", {}, o.displayName || o.key),
      h("span", { class: "meta" }, o.modifies.length ? ` — ${o.modifies.map((m) => `${m.type} ${m.variable}`).slice(0, 4).join(", ")}` : ""),
    ),
  );
  fill(byId("catalog"), ...items, r.totalSize > items.length ? h("li", { class: "meta" }, `… ${r.totalSize - items.length} more: narrow the search`) : null);
}

function addPending(label: string, o: Operation) {
  open.pending.push({ label, op: o });
  showPending();
}

function showPending() {
  const items = open.pending.map((p, i) =>
    h("li", {}, p.label, " ", h("button", { type: "button", class: "link", onclick: () => (open.pending.splice(i, 1), showPending()) }, "drop")),
  );
  fill(byId("pending"), ...(items.length ? items : [h("li", { class: "meta" }, "Nothing yet: add or remove an object, or set an input.")]));
}

async function preview() {
  if (!open.pending.length) return;
  const explain = open.selected ? [open.selected] : [];
  const r = await attempt(() => client.preview({ sheetId: open.id, operations: open.pending.map((p) => p.op), explain }));
  if (!r) return;
  clearError();
  const changes = r.result?.changes ?? [];
  const traces: Trace[] = r.traces;
  fill(
    byId("tryit-result"),
    h("p", { class: "preview-note" }, `What-if at revision ${r.revision} (nothing committed): ${changes.length} value${changes.length === 1 ? "" : "s"} would change.`),
    h(
      "table",
      { class: "preview" },
      h("tbody", {}, ...changes.map((c) => h("tr", { "data-ref": c.ref }, h("td", {}, c.ref), h("td", {}, show(c.old)), h("td", {}, "→"), h("td", { class: "value" }, show(c.new))))),
    ),
    ...traces.map((t) => waterfall(t, select)),
  );
}

// ---------------------------------------------------------------------------------------------
// Wiring

function reconnect() {
  const token = byId<HTMLInputElement>("token").value.trim();
  saveToken(token);
  client = connect(origin, token);
  void listSheets().then(() => {
    const { sheet, variable } = route();
    if (sheet) void openSheet(sheet, variable);
  });
}

function start() {
  byId<HTMLInputElement>("token").value = savedToken();
  byId("connect").addEventListener("click", reconnect);
  byId("token").addEventListener("keydown", (e) => e.key === "Enter" && reconnect());
  byId("sheet-filter").addEventListener("input", () => void listSheets());
  byId("more-sheets").addEventListener("click", () => void listSheets(true));
  byId("search").addEventListener("input", showValues);
  byId("depth").addEventListener("change", () => open.selected && void select(open.selected));
  byId("why-go").addEventListener("click", () => void whyChanged());
  byId("catalog-kind").addEventListener("change", () => void searchCatalog());
  byId("catalog-text").addEventListener("input", () => void searchCatalog());
  byId("remove-go").addEventListener("click", () => {
    const id = byId<HTMLSelectElement>("remove-object").value;
    if (id) addPending(`remove ${id}`, op.removeObject(id));
  });
  byId("input-go").addEventListener("click", () => {
    const channel = byId<HTMLSelectElement>("input-channel").value;
    const raw = byId<HTMLInputElement>("input-value").value.trim();
    if (!channel || !raw) return;
    const dot = channel.indexOf(".");
    const [on, name] = dot < 0 ? [undefined, channel] : [channel.slice(0, dot), channel.slice(dot + 1)];
    const value = /^-?\d+(\.\d+)?$/.test(raw) ? new Decimal(raw) : raw === "true" || raw === "false" ? raw === "true" : raw;
    addPending(`set ${channel} = ${raw}`, op.setInput(name, value, on));
  });
  byId("preview-go").addEventListener("click", () => void preview());
  // A link or the address bar changed the hash: follow it.
  window.addEventListener("hashchange", () => {
    const { sheet, variable } = route();
    if (sheet && sheet !== open.id) void openSheet(sheet, variable);
    else if (variable && variable !== open.selected) void select(variable);
  });
  byId("clear-go").addEventListener("click", () => {
    open.pending = [];
    showPending();
    fill(byId("tryit-result"));
  });
  reconnect();
}

start();
