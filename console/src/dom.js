// A tiny element builder: text always goes in as text (no innerHTML with data, so no injection).

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().replace("T", " ").slice(0, 19);
}

export function short(id) {
  return id ? String(id).slice(0, 8) : "";
}

export function errorBox(err) {
  const code = err && err.code ? `${err.code}: ` : "";
  return h("p", { class: "error", role: "alert" }, code + (err && err.message ? err.message : String(err)));
}

/** A horizontal bar chart of {label: number}. */
export function barChart(values, { width = 360, unit = "" } = {}) {
  const entries = Object.entries(values || {});
  const max = Math.max(1, ...entries.map(([, v]) => Number(v) || 0));
  const row = 22;
  const svg = s("svg", { width, height: row * entries.length + 4, class: "chart", role: "img" });
  entries.forEach(([label, v], i) => {
    const w = ((Number(v) || 0) / max) * (width - 160);
    svg.append(
      s("text", { x: 0, y: i * row + 15 }, label),
      s("rect", { x: 100, y: i * row + 4, width: Math.max(1, w), height: 14, class: "bar" }),
      s("text", { x: 106 + w, y: i * row + 15 }, `${v}${unit}`),
    );
  });
  return svg;
}

/** A small line chart of per-day counts: days = [{day, writes, searches, rejections}], one polyline
 *  per series with a point per day (each point's title gives the exact count). */
export function trendChart(days, series, { width = 360, height = 140 } = {}) {
  const pad = { l: 28, r: 8, t: 8, b: 22 };
  const n = Math.max(1, days.length - 1);
  const max = Math.max(1, ...days.flatMap((d) => series.map(([key]) => Number(d[key]) || 0)));
  const x = (i) => pad.l + (i / n) * (width - pad.l - pad.r);
  const y = (v) => height - pad.b - (v / max) * (height - pad.t - pad.b);
  const svg = s("svg", { width, height, class: "chart trend", role: "img",
                         "aria-label": `Events per day over ${days.length} days` });
  svg.append(
    s("line", { x1: pad.l, y1: y(0), x2: width - pad.r, y2: y(0), class: "axis" }),
    s("text", { x: 0, y: y(max) + 4 }, String(max)),
    s("text", { x: 0, y: y(0) + 4 }, "0"));
  if (days.length) {
    svg.append(s("text", { x: pad.l, y: height - 6 }, days[0].day.slice(5)),
               s("text", { x: width - pad.r, y: height - 6, "text-anchor": "end" }, days[days.length - 1].day.slice(5)));
  }
  for (const [key, , cls] of series) {
    const pts = days.map((d, i) => `${x(i).toFixed(1)},${y(Number(d[key]) || 0).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points: pts, class: `line ${cls}`, "data-series": key }));
    days.forEach((d, i) => svg.append(
      s("circle", { cx: x(i).toFixed(1), cy: y(Number(d[key]) || 0).toFixed(1), r: 2.5, class: `pt ${cls}` },
        s("title", {}, `${d.day} ${key}: ${d[key]}`))));
  }
  return svg;
}
