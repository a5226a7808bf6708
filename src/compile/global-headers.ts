// ingress-nginx's ConfigMap keys add-headers and proxy-set-headers (--add-headers,
// --proxy-set-headers): each names a ConfigMap (`namespace/name`) whose entries become, for
// add-headers, `more_set_headers "Name: value";` in nginx.tmpl's http block (every answer of
// every server), and for proxy-set-headers, `proxy_set_header Name "value";` in every location
// after the template's own lines (internal/ingress/controller/nginx.go reads both with
// store.GetConfigMap; a missing one is a warning and no headers). nginx expands variables in
// both. Pure: the compiler reads the ConfigMaps from the snapshot and puts the entries on the
// table (RouteTable.globalHeaders); the proxy expands them per request
// (proxy/pipeline/global-headers.ts). docs/design.md "ingress-nginx's ConfigMap".
import type { NamespacedName } from "../config/types.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { ConfigMap } from "../model/schemas.ts";
import { headerVariableAllowed, headerVariableNames } from "../kinds/external-auth.ts";
import { ASCII_FIELD_VALUE, refusedHeader, TOKEN } from "../policy/headers.ts";
import { parseTemplate } from "../policy/template.ts";
import type { GlobalHeader, GlobalHeaders } from "../table/types.ts";

/** A variable the proxy can expand for a request: the auth-proxy-set-headers list, plus $uri, $args and $arg_<name>, which name the request here. */
const allowed = (v: string) => headerVariableAllowed(v, true);

export interface GlobalHeadersResult {
  readonly headers: GlobalHeaders | null;
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * The entries of one ConfigMap for one side, the entries left out (each a warning on the
 * ConfigMap: nginx would refuse the configuration, or send a field Portico sets itself twice),
 * sorted by name as Go's template ranges over a map.
 */
function entriesOf(cm: ConfigMap, key: string, side: "request" | "response", diag: (m: string) => void): GlobalHeader[] {
  const data = cm.data ?? {};
  const out: GlobalHeader[] = [];
  for (const name of Object.keys(data).sort()) {
    const value = data[name] as string;
    const what = `${key} (${side === "request" ? "proxy-set-headers" : "add-headers"}): ${name}`;
    if (!TOKEN.test(name)) {
      diag(`ConfigMap ${key}: ${JSON.stringify(name)} is not a header name; left out`);
      continue;
    }
    const refused = refusedHeader(name, side);
    if (refused !== null) {
      diag(`ConfigMap ${what} is left out: ${refused}`);
      continue;
    }
    if (!ASCII_FIELD_VALUE.test(value)) {
      diag(`ConfigMap ${what} is left out: its value holds a control or non-ASCII character`);
      continue;
    }
    const t = parseTemplate(value, allowed);
    if (!t.ok) {
      diag(`ConfigMap ${what} is left out: ${t.why} (variables: $${headerVariableNames(true).join(", $")}, $http_<name>, $cookie_<name>, $arg_<name>)`);
      continue;
    }
    out.push(Object.freeze({ name: name.toLowerCase(), value: Object.freeze(t.parts) }));
  }
  return out;
}

/** The headers the two keys name, from `configMaps`; null when neither names any entry. */
export function resolveGlobalHeaders(
  config: { readonly addHeaders: NamespacedName | null; readonly proxySetHeaders: NamespacedName | null },
  configMaps: ReadonlyMap<string, ConfigMap> | undefined,
): GlobalHeadersResult {
  const diagnostics: Diagnostic[] = [];
  const side = (ref: NamespacedName | null, s: "request" | "response"): GlobalHeader[] => {
    if (ref === null) return [];
    const key = `${ref.namespace}/${ref.name}`;
    const cm = configMaps?.get(key);
    const diag = (message: string) => diagnostics.push({ kind: "ConfigMap", namespace: ref.namespace, name: ref.name, reason: "InvalidConfigKey", message, severity: "warning" });
    if (cm === undefined) {
      // nginx.go: "Error reading ConfigMap": a warning, and no headers.
      diag(`ConfigMap ${key} (${s === "request" ? "proxy-set-headers" : "add-headers"}) not found: no headers are set from it`);
      return [];
    }
    return entriesOf(cm, key, s, diag);
  };
  const response = side(config.addHeaders, "response");
  const request = side(config.proxySetHeaders, "request");
  const headers = response.length === 0 && request.length === 0 ? null : Object.freeze({ response: Object.freeze(response), request: Object.freeze(request) });
  return { headers, diagnostics };
}
