// The stratamem web console: Browse, Search, Graph, Health and Actions over the REST API.
import { api, clearKey, formatIds, getKey, parseIds, setKey } from "./api.js";
import { barChart, clear, errorBox, fmtTime, h, s, short, trendChart } from "./dom.js";

const LAYERS = ["agent", "user", "session", "project", "team", "org", "company", "object"];
const TABS = [
  ["browse", "Browse"],
  ["search", "Search"],
  ["graph", "Graph"],
  ["health", "Health"],
  ["actions", "Actions"],
];
const app = document.getElementById("app");

// ------------------------------------------------------------------ shell and sign-in
function signIn() {
  const input = h("input", { id: "key", type: "password", autocomplete: "off", required: true,
                             "aria-label": "API key", placeholder: "sm_…" });
  const msg = h("div");
  const form = h("form", { id: "signin", class: "signin",
    onsubmit: async (ev) => {
      ev.preventDefault();
      setKey(input.value.trim());
      try {
        await api("GET", "/v1/scopes");
        route();
      } catch (err) {
        clearKey();
        clear(msg, errorBox(err));
      }
    } },
    h("h1", {}, "stratamem console"),
    h("label", { for: "key" }, "API key"),
    input,
    h("button", { type: "submit" }, "Sign in"),
    h("p", { class: "hint" }, "The key stays in this tab's session storage and is sent only in the Authorization header."),
    msg);
  clear(app, form);
  input.focus();
}

function shell(active) {
  const nav = h("nav", { "aria-label": "Panes" },
    TABS.map(([id, label], i) => h("a", { href: `#${id}`, id: `tab-${id}`, class: id === active ? "active" : "",
                                          "aria-current": id === active ? "page" : null,
                                          title: `${label} (Alt+${i + 1})` }, label)),
    h("button", { id: "signout", class: "link", onclick: () => { clearKey(); location.hash = ""; route(); } },
      "Sign out"));
  const main = h("main", { id: `pane-${active}` });
  clear(app, h("header", {}, h("strong", {}, "stratamem"), nav), main);
  return main;
}

function route() {
  if (!getKey()) return signIn();
  const tab = (location.hash || "#browse").slice(1).split("/")[0];
  const pane = TABS.some(([id]) => id === tab) ? tab : "browse";
  const main = shell(pane);
  ({ browse, search, graph, health, actions })[pane](main);
}

window.addEventListener("hashchange", route);
window.addEventListener("keydown", (ev) => {
  if (ev.altKey && ev.key >= "1" && ev.key <= String(TABS.length)) {
    location.hash = `#${TABS[Number(ev.key) - 1][0]}`;
    ev.preventDefault();
  }
});

function field(label, input) {
  return h("label", { class: "field" }, h("span", {}, label), input);
}

function layerSelect(id, value, allowEmpty = true) {
  return h("select", { id }, allowEmpty ? h("option", { value: "" }, "any") : null,
    LAYERS.map((l) => h("option", { value: l, selected: l === value ? "selected" : null }, l)));
}

// ------------------------------------------------------------------ Browse
const browseState = { layer: "", ids: "", tag: "", from: "", to: "", order: "", superseded: false, expiring: false,
                      soon: null, limit: 25, cursors: [null], page: 0, selected: null };

async function browse(main) {
  const tree = h("aside", { class: "tree", "aria-label": "Layers and scopes" }, "Loading…");
  const table = h("section", { class: "table" });
  const detail = h("section", { class: "detail", id: "detail", "aria-live": "polite" });
  const st = browseState;
  const f = {
    layer: layerSelect("f-layer", st.layer),
    ids: h("input", { id: "f-ids", value: st.ids, placeholder: "userId=alice" }),
    tag: h("input", { id: "f-tag", value: st.tag, placeholder: "tag" }),
    from: h("input", { id: "f-from", type: "date", value: st.from }),
    to: h("input", { id: "f-to", type: "date", value: st.to }),
    order: h("select", { id: "f-order" }, [["", "oldest first"], ["newest", "newest first"]].map(([v, label]) =>
      h("option", { value: v, selected: v === st.order ? "selected" : null }, label))),
    superseded: h("input", { id: "f-superseded", type: "checkbox", checked: st.superseded }),
    expiring: h("input", { id: "f-expiring", type: "checkbox", checked: st.expiring }),
  };
  const filters = h("form", { class: "filters", id: "filters",
    onsubmit: (ev) => {
      ev.preventDefault();
      Object.assign(st, { layer: f.layer.value, ids: f.ids.value, tag: f.tag.value, from: f.from.value,
                          to: f.to.value, order: f.order.value, superseded: f.superseded.checked,
                          expiring: f.expiring.checked,
                          cursors: [null], page: 0 });
      loadTable(table, detail);
    } },
    field("Layer", f.layer), field("Identifiers", f.ids), field("Tag", f.tag), field("From", f.from),
    field("To", f.to), field("Order", f.order), field("Include superseded", f.superseded), field("Expiring in 7 days", f.expiring),
    h("button", { type: "submit" }, "Apply"));
  clear(main, h("div", { class: "browse" }, tree, h("div", { class: "middle" }, filters, table), detail));
  loadTree(tree, table, detail);
  loadTable(table, detail);
  if (st.selected) showDetail(detail, st.selected);
}

async function loadTree(tree, table, detail) {
  try {
    const { data } = await api("GET", "/v1/scopes");
    const pick = (layer, ids) => {
      Object.assign(browseState, { layer, ids: formatIds(ids), cursors: [null], page: 0 });
      document.getElementById("f-layer").value = layer;
      document.getElementById("f-ids").value = browseState.ids;
      loadTable(table, detail);
    };
    clear(tree, h("h2", {}, "Layers"),
      h("button", { class: "link", onclick: () => pick("", {}) }, `All (${data.scanned})`),
      h("ul", {}, data.layers.map((l) => h("li", {},
        h("details", { open: true }, h("summary", {}, `${l.layer} `, h("span", { class: "count" }, l.count)),
          h("ul", {}, l.scopes.map((sc) => h("li", {},
            h("button", { class: "link scope", onclick: () => pick(l.layer, sc.identifiers) },
              formatIds(sc.identifiers) || "(tenant)", " ", h("span", { class: "count" }, sc.count))))))))),
      data.truncated ? h("p", { class: "hint" }, "Counts are partial (large tenant).") : null);
  } catch (err) {
    clear(tree, errorBox(err));
  }
}

// Each loadTable call takes a number; an answer that arrives after a later call started is dropped,
// so a slow first load cannot overwrite the table a filter, a scope or a page asked for since.
let tableLoads = 0;

async function loadTable(table, detail) {
  const st = browseState;
  const load = ++tableLoads;
  clear(table, "Loading…");
  // The created-time window is the API's (since inclusive, until exclusive: the day after "To", UTC).
  const nextDay = (d) => new Date(Date.parse(`${d}T00:00:00Z`) + 86400e3).toISOString();
  // "Expiring in 7 days" is the API's expiresBefore; the bound is fixed on the first page, so the
  // cursors of the next pages (which carry the filter) stay valid.
  if (st.page === 0) st.soon = new Date(Date.now() + 7 * 86400e3).toISOString();
  const query = { ...parseIds(st.ids), layer: st.layer || null, limit: st.limit,
                  cursor: st.cursors[st.page], tag: st.tag ? [st.tag] : null,
                  includeSuperseded: st.superseded ? "true" : null, order: st.order || null,
                  since: st.from ? `${st.from}T00:00:00Z` : null, until: st.to ? nextDay(st.to) : null,
                  expiresBefore: st.expiring ? st.soon : null };
  try {
    const { data } = await api("GET", "/v1/memories", { query });
    if (load !== tableLoads) return;
    const rows = data.memories;
    if (data.nextCursor) st.cursors[st.page + 1] = data.nextCursor;
    const columns = ["Id", "Layer", "Scope", "Content", "Created", ...(st.expiring ? ["Expires"] : []), "Status", "Imp."];
    clear(table,
      h("table", { id: "memories" },
        h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, rows.map((m) => h("tr", {
          tabindex: 0, "data-id": m.id, class: m.id === st.selected ? "selected" : "",
          onclick: () => showDetail(detail, m.id),
          onkeydown: (ev) => { if (ev.key === "Enter") showDetail(detail, m.id); } },
        h("td", { class: "mono" }, short(m.id)), h("td", {}, m.layer), h("td", {}, formatIds(m.identifiers)),
        h("td", { class: "content" }, m.content), h("td", {}, fmtTime(m.createdAt)),
        st.expiring ? h("td", { class: "expires" }, fmtTime(m.expiresAt)) : null, h("td", {}, m.status),
        h("td", {}, (m.importance ?? 0).toFixed(2)))))),
      h("div", { class: "pager" },
        h("button", { disabled: st.page === 0 ? true : null, onclick: () => { st.page -= 1; loadTable(table, detail); } },
          "Previous"),
        h("span", {}, `Page ${st.page + 1} · ${rows.length} shown of ${data.totalCount}`),
        h("button", { id: "next-page", disabled: data.nextCursor ? null : true,
                      onclick: () => { st.page += 1; loadTable(table, detail); } }, "Next")));
  } catch (err) {
    if (load === tableLoads) clear(table, errorBox(err));
  }
}

/** Reload the Browse table (after a delete or promote changed what it lists). */
function reloadTable() {
  const table = document.querySelector("section.table");
  const detail = document.getElementById("detail");
  if (table && detail) loadTable(table, detail);
}

function provLink(detail, label, id) {
  return id ? h("li", {}, `${label}: `, h("button", { class: "link mono", onclick: () => showDetail(detail, id) }, id))
            : null;
}

async function showDetail(detail, id) {
  browseState.selected = id;
  clear(detail, "Loading…");
  let m;
  try {
    ({ data: m } = await api("GET", `/v1/memories/${encodeURIComponent(id)}`));
  } catch (err) {
    clear(detail, errorBox(err));
    return;
  }
  const p = m.provenance || {};
  const content = h("textarea", { id: "edit-content", rows: 4 }, m.content);
  const msg = h("div", { id: "detail-msg", "aria-live": "polite" });
  const target = layerSelect("promote-layer", "", false);
  const promoteIds = h("input", { id: "promote-ids", placeholder: "projectId=web" });
  let armed = false;
  const events = h("div", { id: "detail-events" }, "Loading events…");
  const accesses = h("div", { id: "detail-access" }, "Loading access history…");
  // the access history: every search or get that returned this memory (who, how, the search's rank)
  api("GET", `/v1/memories/${encodeURIComponent(m.id)}/events`, { query: { limit: 20, event: ["access"] } }).then(
    ({ data }) => clear(accesses, data.events.length === 0 ? h("p", { class: "hint" }, "Not read yet.") :
      h("table", { class: "events" },
        h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Read by"), h("th", {}, "Through"))),
        h("tbody", {}, data.events.map((e) => h("tr", { class: `access via-${e.details.operation}` },
          h("td", {}, fmtTime(e.ts)), h("td", {}, e.principal || "—"),
          h("td", { title: e.details.search_id ? `search ${e.details.search_id}` : null },
            e.details.operation === "search" ? `search, rank ${e.details.rank}` : e.details.operation)))))),
    (err) => clear(accesses, errorBox(err)));
  api("GET", `/v1/memories/${encodeURIComponent(m.id)}/events`,
    { query: { limit: 20, event: ["create", "update", "delete", "dedupe"] } }).then(
    ({ data }) => clear(events, data.events.length === 0 ? h("p", { class: "hint" }, "No events logged.") :
      h("table", { class: "events" },
        h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Event"), h("th", {}, "By"), h("th", {}, "Outcome"))),
        h("tbody", {}, data.events.map((e) => h("tr", { class: `ev ev-${e.event}` },
          h("td", {}, fmtTime(e.ts)), h("td", {}, e.event), h("td", {}, e.principal || "—"),
          h("td", {}, e.code ? `${e.outcome} (${e.code})` : e.outcome)))))),
    (err) => clear(events, errorBox(err)));
  clear(detail,
    h("h2", {}, "Memory ", h("span", { class: "mono" }, m.id)),
    h("p", { class: "content-full", id: "detail-content" }, m.content),
    h("dl", {},
      h("dt", {}, "Layer"), h("dd", {}, `${m.layer} · ${formatIds(m.identifiers)}`),
      h("dt", {}, "Status"), h("dd", {}, m.status),
      h("dt", {}, "Version"), h("dd", { id: "detail-version" }, `${m.version} (etag ${m.etag})`),
      h("dt", {}, "Importance"), h("dd", {}, h("meter", { min: 0, max: 1, value: m.importance }),
                                        ` ${(m.importance ?? 0).toFixed(2)}`),
      h("dt", {}, "Created / updated"), h("dd", {}, `${fmtTime(m.createdAt)} / ${fmtTime(m.updatedAt)}`),
      h("dt", {}, "Expires"), h("dd", {}, fmtTime(m.expiresAt)),
      h("dt", {}, "Accesses"), h("dd", { id: "detail-access-count" },
        `${m.accessCount} before this view, last ${fmtTime(m.lastAccessedAt)}`),
      h("dt", {}, "Source"), h("dd", {}, `${p.source || "—"}${p.agentId ? ` by ${p.agentId}` : ""}` +
                                      `${p.confidence != null ? `, confidence ${p.confidence}` : ""}`)),
    h("h3", {}, "Provenance"),
    h("ul", { class: "prov" },
      provLink(detail, "Promoted from", p.promotedFromId),
      (p.compactedFromIds || []).map((x) => provLink(detail, "Compacted from", x)),
      provLink(detail, "Superseded by", p.supersededBy),
      provLink(detail, "Conflicts with", p.conflictOf),
      p.createdInSessionId ? h("li", {}, `Session ${p.createdInSessionId}`) : null,
      p.validTo ? h("li", {}, `Valid to ${fmtTime(p.validTo)}`) : null,
      p.threadId ? h("li", {}, `Thread ${p.threadId} #${p.position ?? "?"}`) : null),
    h("h3", {}, "Events"),
    events,
    h("h3", {}, "Access history"),
    accesses,
    h("div", { class: "row" }, h("button", { id: "detail-graph", class: "link",
      onclick: () => { location.hash = `#graph/${encodeURIComponent(m.id)}`; } }, "Show in the graph →")),
    h("h3", {}, "Metadata"),
    h("pre", {}, JSON.stringify(m.metadata, null, 2)),
    h("h3", {}, "Edit"),
    content,
    h("div", { class: "row" },
      h("button", { id: "save", onclick: async () => {
        try {
          const { data } = await api("PATCH", `/v1/memories/${encodeURIComponent(m.id)}`,
            { body: { content: content.value }, headers: { "If-Match": `"${m.etag}"` } });
          await showDetail(detail, data.memory.id);
          document.getElementById("detail-msg").append(h("p", { class: "ok" }, `Saved version ${data.memory.version}.`));
        } catch (err) {
          clear(msg, errorBox(err));
        }
      } }, "Save (If-Match)"),
      h("button", { id: "delete", class: "danger", onclick: async (ev) => {
        if (!armed) {
          armed = true;
          ev.target.textContent = "Confirm delete";
          return;
        }
        try {
          await api("DELETE", `/v1/memories/${encodeURIComponent(m.id)}`, { headers: { "If-Match": `"${m.etag}"` } });
          browseState.selected = null;
          clear(detail, h("p", { class: "ok", id: "deleted-msg" }, `Deleted ${m.id}.`));
          reloadTable();
        } catch (err) {
          clear(msg, errorBox(err));
        }
      } }, "Delete")),
    h("h3", {}, "Promote"),
    h("div", { class: "row" }, field("To layer", target), field("Identifiers", promoteIds),
      h("button", { id: "promote", onclick: async () => {
        try {
          const { data } = await api("POST", `/v1/memories/${encodeURIComponent(m.id)}/promote`,
            { body: { targetLayer: target.value, identifiers: parseIds(promoteIds.value) } });
          clear(msg, h("p", { class: "ok", id: "promoted-msg" }, `Promoted to ${data.layer} (${formatIds(data.identifiers)}): `,
            h("button", { class: "link mono", id: "promoted-link", onclick: () => showDetail(detail, data.id) }, data.id)));
          reloadTable();
        } catch (err) {
          clear(msg, errorBox(err));
        }
      } }, "Promote")),
    msg);
}

// ------------------------------------------------------------------ Search playground
function scoreBar(r, threshold) {
  const W = 240;
  const x = (v) => Math.max(0, Math.min(1, v)) * W;
  const p = r.parts;
  const lex = p.lexical ?? Math.max(0, p.relevance - p.dense);
  return s("svg", { width: W + 2, height: 18, class: "scorebar", role: "img",
                    "aria-label": `dense ${p.dense}, lexical ${lex}, threshold ${threshold}` },
    s("rect", { x: 0, y: 3, width: x(p.dense), height: 12, class: "dense" }),
    s("rect", { x: x(p.dense), y: 3, width: x(lex), height: 12, class: "lexical" }),
    s("line", { x1: x(r.score), x2: x(r.score), y1: 0, y2: 18, class: "final" }),
    s("line", { x1: x(threshold), x2: x(threshold), y1: 0, y2: 18, class: "threshold" }));
}

function search(main) {
  const q = h("input", { id: "s-query", placeholder: "What does the user prefer?", required: true });
  const ids = h("input", { id: "s-ids", placeholder: "userId=alice, projectId=web" });
  const asKey = h("input", { id: "s-key", type: "password", autocomplete: "off", placeholder: "signed-in key" });
  const threshold = h("input", { id: "s-threshold", type: "number", step: "0.05", min: 0, max: 1, placeholder: "0.7" });
  const weight = h("input", { id: "s-weight", type: "number", step: "0.1", min: 0, max: 1, placeholder: "1.0" });
  const limit = h("input", { id: "s-limit", type: "number", min: 1, max: 100, value: 10 });
  const layerBoxes = LAYERS.map((l) => h("label", { class: "check" }, h("input", { type: "checkbox", value: l }), l));
  const out = h("section", { id: "search-results", "aria-live": "polite" });
  const form = h("form", { id: "search-form", class: "filters", onsubmit: async (ev) => {
    ev.preventDefault();
    const layers = layerBoxes.map((b) => b.firstChild).filter((b) => b.checked).map((b) => b.value);
    const body = { query: q.value, identifiers: parseIds(ids.value), limit: Number(limit.value) || 10 };
    if (layers.length) body.layers = layers;
    if (threshold.value !== "") body.threshold = Number(threshold.value);
    if (weight.value !== "") body.hybridWeight = Number(weight.value);
    clear(out, "Searching…");
    try {
      // Another principal's key is used for this one request only (never stored).
      const headers = asKey.value.trim() ? { Authorization: `Bearer ${asKey.value.trim()}` } : undefined;
      const { data } = await api("POST", "/v1/memories/search/explain", { body, headers });
      renderSearch(out, data);
    } catch (err) {
      clear(out, errorBox(err));
    }
  } },
    field("Query", q), field("Identifiers", ids), field("As key (optional)", asKey), field("Threshold", threshold),
    field("Lexical weight", weight), field("Limit", limit), h("fieldset", {}, h("legend", {}, "Layers"), layerBoxes),
    h("button", { type: "submit" }, "Search"));
  clear(main, form, out);
  q.focus();
}

function sigmaText(floor) {
  if (!floor) return "—";
  if (floor.sigma == null) return "n/a";
  return `${floor.sigma.toFixed(2)}σ${floor.identifierException ? " (identifier)" : ""}`;
}

function sigmaTitle(floor) {
  if (!floor) return "no relevance floor applied (a threshold was given or the floor is off)";
  if (floor.sigma == null) return "the scope is too small or has no background: not floored";
  return `relevance ${floor.sigma.toFixed(2)} standard deviations above the scope's background; floor ${floor.floor}σ${
    floor.identifierException ? "; kept by its lexical match (identifier exception)" : ""}`;
}

function renderSearch(out, data) {
  const floorNote = data.relevanceFloor == null ? "" : ` · relevance floor ${data.relevanceFloor}σ`;
  const legend = h("p", { class: "legend" },
    h("span", { class: "sw dense" }), " dense ", h("span", { class: "sw lexical" }), " lexical ",
    h("span", { class: "sw threshold" }), ` threshold ${data.threshold} `,
    h("span", { class: "sw final" }), ` ranked score · lexical weight ${data.hybridWeight}${floorNote}`);
  const groups = data.searchedLayers.map((layer) => {
    const rows = data.results.filter((r) => r.layer === layer);
    return h("div", { class: "layer-group", "data-layer": layer },
      h("h3", {}, `${layer} (${rows.length})`),
      rows.length ? h("table", { class: "results" },
        h("thead", {}, h("tr", {}, h("th", {}, "score parts"), h("th", {}, "score"),
          h("th", { class: "sigma" }, "relevance σ"), h("th", {}, "memory"))),
        h("tbody", {}, rows.map((r) => h("tr", { class: "result" },
        h("td", {}, scoreBar(r, data.threshold)),
        h("td", { class: "num" }, h("span", { class: "score" }, r.score.toFixed(3)),
          h("small", { class: "parts" }, ` dense ${r.parts.dense.toFixed(3)} + lexical ${
            r.parts.lexical == null ? "n/a" : r.parts.lexical.toFixed(3)}${
            r.parts.boostFactor !== 1 ? ` × boost ${r.parts.boostFactor.toFixed(3)}` : ""}`)),
        h("td", { class: "num sigma", title: sigmaTitle(r.floor) }, sigmaText(r.floor)),
        h("td", { class: "content" }, r.memory.content))))) : h("p", { class: "hint" }, "No result above the threshold."));
  });
  const byMerge = data.removed.filter((r) => r.reason !== "relevance_floor");
  const byFloor = data.removed.filter((r) => r.reason === "relevance_floor");
  const removed = byMerge.length ? h("div", { id: "removed" }, h("h3", {}, "Removed by the merge"),
    h("ul", {}, byMerge.map((r) => h("li", {}, `${r.layer} · ${r.score.toFixed(3)} · ${r.reason}`,
      r.duplicateOf ? ` of ${short(r.duplicateOf)}` : "", ` — ${r.memory.content}`)))) : null;
  const floored = byFloor.length ? h("div", { id: "removed-floor" },
    h("h3", {}, `Removed by the relevance floor (${data.relevanceFloor}σ)`),
    h("ul", {}, byFloor.map((r) => h("li", { title: sigmaTitle(r.floor) },
      `${r.layer} · ${r.score.toFixed(3)} · ${sigmaText(r.floor)} — ${r.memory.content}`)))) : null;
  clear(out, legend, groups, removed, floored);
}

// ------------------------------------------------------------------ Graph view
function drawGraph(nodes, edges, centerIds) {
  const W = 760;
  const H = 460;
  const list = [...nodes.values()];
  const centre = list.filter((n) => centerIds.has(n.id));
  const ring = list.filter((n) => !centerIds.has(n.id));
  const pos = new Map();
  centre.forEach((n, i) => pos.set(n.id, [W / 2 + (i - (centre.length - 1) / 2) * 90, H / 2]));
  ring.forEach((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(1, ring.length);
    pos.set(n.id, [W / 2 + Math.cos(a) * (W / 2 - 190), H / 2 + Math.sin(a) * (H / 2 - 40)]);
  });
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "graph", id: "graph-svg", role: "img" });
  for (const e of edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    svg.append(s("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], class: "edge" }),
      s("text", { x: (a[0] + b[0]) / 2, y: (a[1] + b[1]) / 2 - 3, class: "rel" }, e.relType));
  }
  for (const n of list) {
    const [x, y] = pos.get(n.id);
    const label = n.label.length > 28 ? `${n.label.slice(0, 27)}…` : n.label;
    svg.append(s("g", { class: `node ${n.kind}${centerIds.has(n.id) ? " centre" : ""}` },
      s("title", {}, `${n.kind} ${n.type}: ${n.label}`),
      s("circle", { cx: x, cy: y, r: n.kind === "entity" ? 9 : 6 }),
      s("text", { x: x + 12, y: y + 4 }, label)));
  }
  return svg;
}

function graph(main) {
  const node = h("input", { id: "g-node", placeholder: "entity name or memory id", required: true });
  const hops = h("input", { id: "g-hops", type: "number", min: 1, max: 4, value: 2 });
  const a = h("input", { id: "g-a", placeholder: "from", required: true });
  const b = h("input", { id: "g-b", placeholder: "to", required: true });
  const out = h("section", { id: "graph-out", "aria-live": "polite" });
  const hood = h("form", { class: "filters", id: "graph-form", onsubmit: async (ev) => {
    ev.preventDefault();
    clear(out, "Loading…");
    try {
      const { data } = await api("GET", "/v1/graph/related",
        { query: { node: node.value, hops: hops.value, includeEntities: "true", limit: 60 } });
      const nodes = new Map();
      const edges = [];
      data.start.forEach((n) => nodes.set(n.id, n));
      for (const item of data.items) {
        item.nodes.forEach((n) => nodes.set(n.id, n));
        nodes.set(item.node.id, item.node);
        edges.push(...item.edges);
      }
      const uniq = [...new Map(edges.map((e) => [`${e.source}|${e.target}|${e.relType}`, e])).values()];
      clear(out, h("p", {}, `${data.items.length} related within ${data.hops} hops.`),
        drawGraph(nodes, uniq, new Set(data.start.map((n) => n.id))),
        h("ul", { class: "reasons" }, data.items.slice(0, 20).map((it) => h("li", {}, it.reasoning))));
    } catch (err) {
      clear(out, errorBox(err));
    }
  } }, field("Node", node), field("Hops", hops), h("button", { type: "submit" }, "Neighbourhood"));
  const path = h("form", { class: "filters", id: "path-form", onsubmit: async (ev) => {
    ev.preventDefault();
    clear(out, "Loading…");
    try {
      const { data } = await api("GET", "/v1/graph/path", { query: { a: a.value, b: b.value } });
      if (!data.found) return clear(out, h("p", {}, "No path found."));
      const nodes = new Map(data.nodes.map((n) => [n.id, n]));
      clear(out, h("p", { id: "path-reasoning" }, data.reasoning),
        drawGraph(nodes, data.edges, new Set([data.nodes[0].id, data.nodes[data.nodes.length - 1].id])));
    } catch (err) {
      clear(out, errorBox(err));
    }
  } }, field("From", a), field("To", b), h("button", { type: "submit" }, "Path"));
  clear(main, hood, path, out);
  const start = location.hash.split("/").slice(1).join("/");
  if (start) {
    node.value = decodeURIComponent(start);
    hood.requestSubmit();
  }
}

// ------------------------------------------------------------------ Health
/** "purged 2 · archived 1 (0.03 s)": the non-zero counts of one maintenance run. */
function runSummary(r) {
  const parts = [["purged", r.purged], ["archived", r.archived], ["reflected", r.reflected], ["merged", r.consolidated],
                 ["pruned", r.pruned], ["prune candidates", r.prune_candidates], ["repaired", r.integrity_repaired],
                 ["old access events deleted", r.access_events_pruned]]
    .filter(([, n]) => n).map(([label, n]) => `${label} ${n}`);
  const errors = Object.keys(r.errors || {});
  if (errors.length) parts.push(`failed: ${errors.join(", ")}`);
  return `${parts.length ? parts.join(" · ") : "nothing to do"} (${Number(r.duration_s).toFixed(2)} s)`;
}

async function health(main) {
  clear(main, "Loading…");
  const get = (path) => api("GET", path).then((r) => r.data, (err) => ({ error: err }));
  const [live, stats, report, graphHealth, snapStatus, trends, runs] = await Promise.all(
    ["/health", "/v1/stats", "/v1/health-report", "/health/graph", "/v1/snapshots/status",
     "/v1/health-report/trends?days=14", "/v1/maintenance/runs?limit=10"].map(get));
  // the list of snapshots only when a target is configured (unconfigured, the status says so)
  const snapshots = snapStatus.configured ? await get("/v1/snapshots") : [];
  const series = [["writes", "Writes", "writes"], ["searches", "Searches", "searches"],
                  ["rejections", "Rejected writes", "rejections"]];
  const total = (key) => (trends.days || []).reduce((a, d) => a + (Number(d[key]) || 0), 0);
  const card = (title, body) => h("section", { class: "card" }, h("h2", {}, title), body);
  const status = (d) => (d.error ? errorBox(d.error) : h("p", { class: `status ${d.status}` }, d.status));
  const comps = (d) => (d.components ? h("ul", {}, Object.entries(d.components).map(([k, c]) =>
    h("li", {}, `${k}: ${c.status}${c.message ? ` — ${c.message}` : ""}`))) : null);
  clear(main, h("div", { class: "cards", id: "health" },
    card("Service", [status(live), comps(live)]),
    card("Trends (14 days)", trends.error ? errorBox(trends.error) : h("div", { id: "trends" },
      trendChart(trends.days, series),
      h("p", { class: "legend" }, series.map(([key, label, cls]) =>
        h("span", { class: "check" }, h("span", { class: `sw ${cls}` }), ` ${label} `,
          h("span", { class: "count", "data-total": key }, total(key))))))),
    card("Write gate (14 days)", trends.error ? errorBox(trends.error) : writeGate(trends.days)),
    card("Storage per layer", stats.error ? errorBox(stats.error) : [
      h("p", {}, `${stats.total} memories · ${stats.provider} · ${stats.embeddingModel} (${stats.embeddingDimensions}d)`),
      barChart(stats.byLayer)]),
    card("Memory health", report.error ? errorBox(report.error) : [
      h("dl", {},
        h("dt", {}, "Duplicate rate"), h("dd", {}, report.duplicate_rate),
        h("dt", {}, "Write-gate rejection rate"), h("dd", { id: "gate-rate" }, report.write_rejection_rate),
        h("dt", {}, "Search hit rate"), h("dd", {}, report.search_hit_rate),
        h("dt", {}, "Average age (days)"), h("dd", {}, report.average_age_days)),
      h("h3", {}, "Events"), barChart(report.events || {}),
      h("h3", {}, "By source"), barChart(report.memories_by_source || {})]),
    card("Maintenance runs", runs.error ? errorBox(runs.error) : runs.runs.length === 0 ?
      h("p", { id: "maintenance-runs" }, "No maintenance run recorded yet.") :
      h("table", { id: "maintenance-runs" },
        h("thead", {}, h("tr", {}, ["When", "Outcome", "What it did"].map((x) => h("th", {}, x)))),
        h("tbody", {}, runs.runs.map((r) => h("tr", {},
          h("td", {}, fmtTime(r.ts)),
          h("td", { class: r.outcome === "ok" ? "ok" : "error", title: Object.entries(r.errors || {}).map(
            ([k, v]) => `${k}: ${v}`).join("\n") || null }, r.outcome),
          h("td", {}, runSummary(r))))))),
    card("Knowledge graph", [status(graphHealth), comps(graphHealth)]),
    card("Snapshots", snapshotCard(snapStatus, snapshots))));
}

const GATE = [["created", "Created", "created"], ["deduplicated", "Merged (dedupe)", "deduplicated"],
              ["updated", "Updated", "updated"], ["deleted", "Deleted", "deleted"],
              ["ignored", "Ignored", "ignored"], ["rejected", "Rejected", "rejected"]];

/** The write gate's decisions over the trend window: totals as bars, and a line per decision. */
function writeGate(days) {
  const totals = Object.fromEntries(GATE.map(([key, label]) =>
    [label, days.reduce((a, d) => a + (Number(d[key]) || 0), 0)]));
  const sum = Object.values(totals).reduce((a, b) => a + b, 0);
  return h("div", { id: "write-gate" },
    h("p", { class: "hint" }, `${sum} write decisions: what process(), add, update and delete did, per UTC day.`),
    barChart(totals),
    trendChart(days, GATE),
    h("p", { class: "legend" }, GATE.map(([key, label, cls]) =>
      h("span", { class: "check" }, h("span", { class: `sw ${cls}` }), ` ${label} `,
        h("span", { class: "count", "data-gate": key }, days.reduce((a, d) => a + (Number(d[key]) || 0), 0))))));
}

/** Snapshot status: not configured (a hint, no error), or the bucket, count, newest and the list. */
function snapshotCard(status, snapshots) {
  if (status.error) {
    if (status.error.status === 403) return h("p", { id: "snapshots-status", class: "hint" }, "Snapshots need an admin key.");
    return errorBox(status.error);
  }
  if (!status.configured) {
    return h("div", { id: "snapshots-status", "data-state": "unconfigured" },
      h("p", {}, "Snapshots are not configured."),
      h("p", { class: "hint" }, "Set STRATAMEM_S3_URL (or STRATAMEM_S3_BUCKET) and the AWS_* credentials " +
        "for the server to publish snapshots of the store; see docs/snapshots.md."));
  }
  const l = status.latest;
  return h("div", { id: "snapshots-status", "data-state": "configured" },
    h("p", {}, `Bucket ${status.bucket} · ${status.count} snapshot${status.count === 1 ? "" : "s"}`),
    l ? h("p", { id: "snapshot-latest" }, `Newest: ${fmtTime(l.created_at)} · ${l.rows} rows · ${l.bytes} bytes`)
      : h("p", { class: "hint" }, "None published yet."),
    snapshots.error ? errorBox(snapshots.error) :
      h("ul", {}, snapshots.slice(0, 10).map((x) =>
        h("li", {}, `${fmtTime(x.created_at)} · ${x.rows} rows · ${x.bytes} bytes`))));
}

// ------------------------------------------------------------------ Actions (admin)
async function actions(main) {
  const keys = h("section", { id: "keys" }, "Loading keys…");
  const out = h("div", { id: "action-msg", "aria-live": "polite" });
  const say = (node) => clear(out, node);
  const name = h("input", { id: "k-name", placeholder: "ci-reader" });
  const role = h("select", { id: "k-role" }, ["reader", "writer", "admin"].map((r) => h("option", { value: r }, r)));
  const kids = h("input", { id: "k-ids", placeholder: "userId=alice" });
  const user = h("input", { id: "forget-user", placeholder: "alice" });
  let forgetArmed = false;
  const loadKeys = async () => {
    try {
      const { data } = await api("GET", "/v1/keys");
      const list = Array.isArray(data) ? data : data.keys || [];
      clear(keys, h("table", {}, h("thead", {}, h("tr", {}, ["Key id", "Name", "Roles", "Identifiers", "Created",
                                                             "Revoked", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, list.map((k) => h("tr", {},
          h("td", { class: "mono" }, k.keyId), h("td", {}, k.name), h("td", {}, (k.roles || []).join(", ")),
          h("td", {}, formatIds(k.identifiers)), h("td", {}, fmtTime(k.createdAt)), h("td", {}, fmtTime(k.revokedAt)),
          h("td", {}, k.revokedAt ? "" : h("button", { class: "danger", onclick: async () => {
            try {
              await api("DELETE", `/v1/keys/${encodeURIComponent(k.keyId)}`);
              say(h("p", { class: "ok" }, `Revoked ${k.keyId}.`));
              loadKeys();
            } catch (err) {
              say(errorBox(err));
            }
          } }, "Revoke")))))));
    } catch (err) {
      clear(keys, errorBox(err));
    }
  };
  clear(main, out,
    h("h2", {}, "API keys"), keys,
    h("form", { class: "filters", id: "key-form", onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const body = { role: role.value, identifiers: parseIds(kids.value) };
        if (name.value) body.name = name.value;
        const { data } = await api("POST", "/v1/keys", { body });
        say(h("p", { class: "ok" }, "New key (shown once): ", h("code", { id: "new-key" }, data.key)));
        loadKeys();
      } catch (err) {
        say(errorBox(err));
      }
    } }, field("Name", name), field("Role", role), field("Identifiers", kids), h("button", { type: "submit" }, "Create key")),
    h("h2", {}, "Forget a user"),
    h("form", { class: "filters", id: "forget-form", onsubmit: async (ev) => {
      ev.preventDefault();
      const btn = ev.target.querySelector("button");
      if (!forgetArmed) {
        forgetArmed = true;
        btn.textContent = `Confirm: erase everything about ${user.value}`;
        return;
      }
      forgetArmed = false;
      btn.textContent = "Forget user";
      try {
        const { data } = await api("DELETE", `/v1/admin/users/${encodeURIComponent(user.value)}`);
        say(h("pre", {}, JSON.stringify(data, null, 2)));
      } catch (err) {
        say(errorBox(err));
      }
    } }, field("User id", user), h("button", { type: "submit", class: "danger" }, "Forget user")),
    h("h2", {}, "Maintenance"),
    h("button", { id: "run-maintenance", onclick: async () => {
      try {
        const { data } = await api("POST", "/v1/maintenance");
        say(h("pre", {}, JSON.stringify(data, null, 2)));
      } catch (err) {
        say(errorBox(err));
      }
    } }, "Run maintenance now"));
  loadKeys();
}

route();
