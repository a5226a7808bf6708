// Parameter shapes a policy kind's annotation family writes and its runner reads, where both
// sides name them (docs/design.md, "Annotations and policies").

/** What decides, per request, between main and the canary: plain JSON (it is a stage policy's params). */
// A type, not an interface: it must be assignable to StagePolicy params (an index signature).
export type CanaryRules = {
  /** Header name, lowercased; null = no header rule. */
  readonly header: string | null;
  /** Exact, case-sensitive value that selects the canary (replaces the always/never keywords). */
  readonly headerValue: string | null;
  /** PCRE source, unanchored; only when headerValue is null. */
  readonly headerPattern: string | null;
  readonly cookie: string | null;
  readonly weight: number;
  /** At least 100: ingress-nginx uses 100 for any smaller total. */
  readonly weightTotal: number;
};

/** One part of a hash key: literal text, the client address, the request URI, a header or a cookie. */
export type HashPart =
  | { readonly text: string }
  | { readonly var: "remote_addr" | "request_uri" }
  | { readonly header: string }
  | { readonly cookie: string };
