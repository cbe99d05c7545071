/** A few DOM helpers: elements built from a tag, attributes and children; nothing else. */

export type Child = Node | string | number | null | undefined | false;

/** `<tag attrs…>children</tag>`; `on*` attributes that are functions become listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  set(el, attrs);
  el.append(...nodes(children));
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element. */
export function s(tag: string, attrs: Record<string, unknown> = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  set(el, attrs);
  el.append(...nodes(children));
  return el;
}

function set(el: Element, attrs: Record<string, unknown>) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v as EventListener);
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

function nodes(children: Child[]): (Node | string)[] {
  return children.filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false).map((c) => (typeof c === "number" ? String(c) : c));
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: Child[]) {
  el.replaceChildren(...nodes(children));
}

/** The element with this id (the page defines every one the code uses). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
}
