// The REST client of the console: every call carries the signed-in key in the Authorization
// header (never in a URL), so the console can do exactly what that key can do.

const KEY = "stratamem.apiKey";

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    const err = body && typeof body === "object" ? body : {};
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.code = err.code || String(status);
    this.details = err.details;
  }
}

/** Query string of the non-empty values (arrays repeat the parameter). */
export function qs(params) {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => out.append(k, x));
    else out.append(k, String(v));
  }
  const s = out.toString();
  return s ? `?${s}` : "";
}

/** Call the API; resolves to {data, headers}, rejects with an ApiError carrying the coded error. */
export async function api(method, path, { body, query, headers } = {}) {
  const key = getKey();
  const init = { method, headers: { Accept: "application/json" }, credentials: "omit" };
  if (key) init.headers.Authorization = `Bearer ${key}`;
  Object.assign(init.headers, headers || {}); // a caller may search as another key
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path + qs(query), init);
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return { data, headers: resp.headers, status: resp.status };
}

/** "userId=alice, projectId=web" -> {userId: "alice", projectId: "web"} */
export function parseIds(text) {
  const ids = {};
  for (const part of (text || "").split(/[,;\s]+/)) {
    const i = part.indexOf("=");
    if (i > 0) ids[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return ids;
}

export function formatIds(ids) {
  return Object.entries(ids || {})
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}
