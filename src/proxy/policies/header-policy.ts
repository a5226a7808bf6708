// portico.dev/request-headers and portico.dev/response-headers in the proxy: the forwarding
// stage adds its fields to those the handler sets on the upstream request
// (flow.upstreamRequestHeaders) and on the relayed response (flow.upstreamResponseHeaders).
// Fields an earlier stage set there (external authentication's auth-response-headers, the CORS
// stage's) stay: these fixed values only fill in the names no policy computed for the request.
// src/annotations/headers.ts checked every field at compile time; they are checked again here.
import { checkHeader, type HeaderEntry } from "../../policy/headers.ts";
import type { StagePolicy } from "../../policy/stages.ts";
import type { KindOf, PolicyKind } from "./types.ts";
import * as K from "../../policy/kinds.ts";

/**
 * The entries of one side, checked again: the table crossed IPC as JSON to reach a worker,
 * and a field refused at compile time must not reach the wire from there either.
 */
function entriesOf(raw: StagePolicy["params"][string], side: "request" | "response"): HeaderEntry[] {
  if (!Array.isArray(raw)) throw new Error(`${side}: not a list`);
  return raw.map((e) => {
    if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== "string" || typeof e[1] !== "string") throw new Error(`${side}: not a [name, value] pair`);
    const bad = checkHeader(e[0], e[1], side);
    if (bad !== null) throw new Error(`${side}: ${bad}`);
    return [e[0], e[1]] as const;
  });
}

/**
 * The fields as one record (lowercased names): a repeated name becomes one field whose values
 * are joined with ", " (RFC 9110 §5.3), except Set-Cookie, which cannot be joined (§5.3) and
 * which a list takes once.
 */
function fieldsOf(entries: readonly HeaderEntry[]): Readonly<Record<string, string>> | null {
  if (entries.length === 0) return null;
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    if (key === "set-cookie" && out[key] !== undefined) throw new Error("Set-Cookie may be set once");
    out[key] = out[key] === undefined ? value : `${out[key]}, ${value}`;
  }
  return Object.freeze(out);
}

export const HEADERS_POLICY: KindOf<typeof K.HEADERS> = {
  contract: K.HEADERS,
  build(params) {
    const request = fieldsOf(entriesOf(params.request ?? [], "request"));
    const response = fieldsOf(entriesOf(params.response ?? [], "response"));
    return (flow) => {
      if (request !== null) flow.upstreamRequestHeaders = flow.upstreamRequestHeaders === null ? request : { ...request, ...flow.upstreamRequestHeaders };
      if (response !== null) flow.upstreamResponseHeaders = flow.upstreamResponseHeaders === null ? response : { ...response, ...flow.upstreamResponseHeaders };
      return null;
    };
  },
};
