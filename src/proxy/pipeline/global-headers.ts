// add-headers and proxy-set-headers (RouteTable.globalHeaders, compile/global-headers.ts),
// expanded per request with the variables auth-proxy-set-headers uses (kinds/external-auth.ts
// `render`). proxy-set-headers is nginx's `proxy_set_header` in every location: it replaces
// the client's field of that name on the request to the pod, and a value empty once expanded
// sends no field at all. add-headers is headers-more's `more_set_headers` in the http block:
// every answer, whatever its status, Portico's own ones included (docs/design.md
// "ingress-nginx's ConfigMap").
import { headerVariableAllowed, render } from "../../kinds/external-auth.ts";
import { ASCII_FIELD_VALUE, refusedHeader, TOKEN } from "../../policy/headers.ts";
import type { GlobalHeader, GlobalHeaders } from "../../table/types.ts";
import type { Exchange } from "./context.ts";

/** One side's entries that pass the compiler's checks again (the table may have crossed IPC as JSON). */
function checkedSide(list: unknown, side: "request" | "response"): GlobalHeader[] {
  if (!Array.isArray(list)) return [];
  return list.filter((h): h is GlobalHeader => {
    if (h === null || typeof h !== "object" || typeof h.name !== "string" || !Array.isArray(h.value)) return false;
    if (!TOKEN.test(h.name) || refusedHeader(h.name, side) !== null) return false;
    return (h.value as unknown[]).every((p) => (typeof p === "string" ? ASCII_FIELD_VALUE.test(p) : p !== null && typeof p === "object" && headerVariableAllowed(String((p as { v?: unknown }).v), true)));
  });
}

const checked = new WeakMap<GlobalHeaders, { readonly request: GlobalHeader[]; readonly response: GlobalHeader[] }>();
function checkedOf(g: GlobalHeaders): { readonly request: GlobalHeader[]; readonly response: GlobalHeader[] } {
  let c = checked.get(g);
  if (c === undefined) checked.set(g, (c = { request: checkedSide(g.request, "request"), response: checkedSide(g.response, "response") }));
  return c;
}

/** One entry's value for this request, or null when it cannot be sent as a field. */
function valueOf(h: GlobalHeader, x: Exchange): string | null {
  const out = render(h.value, x);
  // A request's own fields and URI are valid field text already; anything else is not sent.
  return ASCII_FIELD_VALUE.test(out) ? out : null;
}

/** proxy-set-headers onto the request to the pod (route step, before the policies add theirs). */
export function setProxyHeaders(x: Exchange, g: GlobalHeaders): void {
  const list = checkedOf(g).request;
  if (list.length === 0) return;
  const out: Record<string, string | null> = { ...x.upstreamRequestHeaders };
  for (const h of list) {
    const v = valueOf(h, x);
    out[h.name] = v === null || v === "" ? null : v;
  }
  x.upstreamRequestHeaders = out;
}

/** add-headers onto an answer (undefined: a WebSocket took the request). */
export function addResponseHeaders(x: Exchange, g: GlobalHeaders, res: Response | undefined): Response | undefined {
  if (res === undefined) return res;
  const list = checkedOf(g).response;
  if (list.length === 0) return res;
  const values: [string, string][] = [];
  for (const h of list) {
    let v: string | null;
    try {
      v = valueOf(h, x);
    } catch {
      v = null;
    }
    // more_set_headers with an empty value removes the field.
    values.push([h.name, v ?? ""]);
  }
  const apply = (headers: Headers) => {
    for (const [n, v] of values) {
      if (v === "") headers.delete(n);
      else headers.set(n, v);
    }
  };
  try {
    apply(res.headers);
    return res;
  } catch {
    // Headers the Fetch standard makes immutable (Response.redirect's, Response.error's): a copy.
    const headers = new Headers(res.headers);
    apply(headers);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
