/**
 * A variable's dependency graph drawn as SVG: what it reads to the left, what reads it to the
 * right, one column per step, each node `ref = value` and clickable. An edge goes from a
 * variable to one that reads it, the way values flow.
 */
import type { DependencyNode, ExplainResponse } from "../gen/sheetd/v1/sheetd_pb.js";
import { show } from "../src/values.js";
import { s } from "./dom.js";

const COLUMN = 250;
const ROW = 44;
const WIDTH = 200;
const HEIGHT = 30;

interface Placed {
  node: DependencyNode;
  level: number;
  x: number;
  y: number;
}

/** Each node's column: 0 for the variable, −n for what it reads n steps back, +n for readers. */
export function levels(x: ExplainResponse): Map<string, number> {
  const level = new Map<string, number>();
  const focus = x.nodes[0]?.ref;
  if (!focus) return level;
  level.set(focus, 0);
  // Upstream: breadth first along `reads`.
  const byRef = new Map(x.nodes.map((n) => [n.ref, n]));
  let frontier = [focus];
  for (let d = 1; frontier.length; d++) {
    const next: string[] = [];
    for (const r of frontier) {
      for (const dep of byRef.get(r)?.reads ?? []) {
        if (byRef.has(dep) && !level.has(dep)) {
          level.set(dep, -d);
          next.push(dep);
        }
      }
    }
    frontier = next;
  }
  // Downstream: a reader sits one column right of the furthest-right node it reads.
  const pending = [...x.readers];
  for (let guard = 0; pending.length && guard < x.readers.length + 1; guard++) {
    for (let i = pending.length - 1; i >= 0; i--) {
      const n = pending[i];
      const from = n.reads.map((r) => level.get(r)).filter((l): l is number => l !== undefined && l >= 0);
      if (from.length) {
        level.set(n.ref, Math.max(...from) + 1);
        pending.splice(i, 1);
      }
    }
  }
  return level;
}

/** The graph of an Explain reply as an SVG element; `pick` is called with a clicked node's ref. */
export function draw(x: ExplainResponse, pick: (ref: string) => void): SVGElement {
  const level = levels(x);
  const all = [...x.nodes, ...x.readers].filter((n) => level.has(n.ref));
  const min = Math.min(0, ...level.values());
  const rows = new Map<number, number>();
  const placed = new Map<string, Placed>();
  for (const node of all) {
    const l = level.get(node.ref)!;
    const row = rows.get(l) ?? 0;
    rows.set(l, row + 1);
    placed.set(node.ref, { node, level: l, x: 10 + (l - min) * COLUMN, y: 10 + row * ROW });
  }
  const width = 20 + (Math.max(0, ...level.values()) - min) * COLUMN + WIDTH;
  const height = 20 + Math.max(1, ...rows.values()) * ROW;
  const svg = s("svg", {
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    class: "graph",
    role: "img",
    "aria-label": `dependency graph of ${x.nodes[0]?.ref ?? ""}`,
  });
  svg.append(
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))),
  );
  // Edges first, under the nodes.
  for (const to of placed.values()) {
    for (const r of to.node.reads) {
      const from = placed.get(r);
      if (!from) continue;
      const [x1, y1, x2, y2] = [from.x + WIDTH, from.y + HEIGHT / 2, to.x, to.y + HEIGHT / 2];
      const bend = Math.max(30, (x2 - x1) / 2);
      svg.append(
        s("path", {
          d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
          class: "edge",
          "data-from": from.node.ref,
          "data-to": to.node.ref,
          "marker-end": "url(#arrow)",
        }),
      );
    }
  }
  for (const p of placed.values()) {
    const label = `${p.node.ref} = ${show(p.node.value)}`;
    const g = s(
      "g",
      {
        class: p.level === 0 ? "node focus" : p.level < 0 ? "node reads" : "node reader",
        "data-ref": p.node.ref,
        tabindex: 0,
        transform: `translate(${p.x},${p.y})`,
        onclick: () => pick(p.node.ref),
        onkeydown: (e: KeyboardEvent) => e.key === "Enter" && pick(p.node.ref),
      },
      s("title", {}, label),
      s("rect", { width: WIDTH, height: HEIGHT, rx: 5 }),
      s("text", { x: 8, y: 20 }, label.length > 30 ? `${label.slice(0, 29)}…` : label),
    );
    svg.append(g);
  }
  return svg;
}
