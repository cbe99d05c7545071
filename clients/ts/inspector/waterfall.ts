/**
 * A variable's waterfall: its default, then each modifier in the order it applies — source,
 * type, priority, the inputs it read, whether its condition held, when it expires — and the
 * value after it, with a bar for numbers so the climb and the drops show at a glance.
 */
import type { Trace, Value } from "../gen/sheetd/v1/sheetd_pb.js";
import { show } from "../src/values.js";
import { h } from "./dom.js";

function number(v: Value | undefined): number | undefined {
  return v?.kind.case === "number" ? Number(v.kind.value) : undefined;
}

/** The trace as a table (`onRead` is called with a read variable's ref when it is clicked). */
export function waterfall(t: Trace, onRead: (ref: string) => void): HTMLElement {
  const values = [t.default, ...t.steps.map((s) => s.after), t.value].map(number).filter((n): n is number => n !== undefined);
  const scale = Math.max(1, ...values.map(Math.abs));
  const bar = (v: Value | undefined) => {
    const n = number(v);
    if (n === undefined) return h("span", { class: "bar none" });
    const width = Math.round((Math.abs(n) / scale) * 100);
    return h("span", { class: n < 0 ? "bar negative" : "bar", style: `width:${width}%` });
  };
  const order = t.order === "applied" ? "in the order applied" : "by priority, then inherent priority, then as added";
  const rows = t.steps.map((s, i) => {
    const skipped = s.condition === false;
    const condition = s.condition === undefined ? "" : s.condition ? "held" : "did not hold: skipped";
    const reads = s.reads.map((r) =>
      h("button", { class: "link", type: "button", title: `open ${r.ref}`, onclick: () => onRead(r.ref) }, `${r.ref} = ${show(r.value)}`),
    );
    const priority = `${s.priority}${s.inherentPriority ? ` / ${s.inherentPriority}` : ""}`;
    return h(
      "tr",
      { class: skipped ? "step skipped" : "step", "data-modifier": s.modifier },
      h("td", {}, i + 1),
      h("td", { class: "kind" }, s.kind),
      h("td", { class: "instruction" }, h("code", {}, s.instruction)),
      h("td", {}, priority),
      h("td", { class: "source" }, s.source),
      h("td", {}, condition),
      h("td", { class: "reads" }, ...reads),
      h("td", { class: "expires" }, s.expires ? `until ${s.expires}` : ""),
      h("td", { class: "after" }, skipped ? "—" : show(s.after), bar(skipped ? undefined : s.after)),
    );
  });
  return h(
    "table",
    { class: "waterfall", "data-ref": t.ref },
    h("caption", {}, `${t.ref} (${t.format}): modifiers ${order}`),
    h(
      "thead",
      {},
      h("tr", {}, ...["#", "type", "modifier", "priority / inherent", "source", "condition", "reads", "expires", "value after"].map((c) => h("th", {}, c))),
    ),
    h(
      "tbody",
      {},
      h("tr", { class: "default" }, h("td", {}, "0"), h("td", { colspan: 7 }, "default"), h("td", { class: "after" }, show(t.default), bar(t.default))),
      ...rows,
      h("tr", { class: "total" }, h("td", {}, "="), h("td", { colspan: 7 }, "value"), h("td", { class: "after" }, show(t.value), bar(t.value))),
    ),
  );
}
