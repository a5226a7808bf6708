// The `certificate` stage: what nginx checks when it reads the request, before any phase (the
// client certificate, auth-tls-*), and ingress-nginx's server-level 403 for a CA it cannot use.
// Every kind of the stage is defined here or exported from here (docs/design.md, "Adding an
// ingress-nginx annotation"); the client-certificate check is long enough for its own file.
import { defineKind } from "./define.ts";
import { REFUSE } from "./denied.ts";

export { CLIENT_CERT } from "./client-cert.ts";

/**
 * `{ status: 403, reason }`: the host's auth-tls-secret cannot be used, and ingress-nginx's
 * server block answers 403 before anything else (nginx.tmpl SERVER `return 403`, ahead of
 * app-root); REFUSE in the first stage.
 */
export const CERTIFICATE_REFUSE = defineKind("certificate-refuse", "certificate", REFUSE.schema, REFUSE.build);
