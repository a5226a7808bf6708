// The TLS options a host's own server entry carries (compile/host-tls.ts builds them; tls/sni.ts,
// explain and the routes view read them): a type the compiler, the listener and the table's
// text share, so it sits below all three.

/**
 * A host's own cipher list (the ssl-ciphers annotation, nginx's server-level ssl_ciphers), or
 * the listener's list pinned to a host a wildcard's own list would otherwise catch.
 */
export type HostTls =
  | {
      /** The suites the annotation's cipher string selects (config/cipher-list.ts), names BoringSSL has. */
      readonly ciphers: string;
      /** The Ingress (`namespace/name`) the list is from. */
      readonly ingress: string;
    }
  /**
   * The listener's list, on an entry of the host's own. nginx has one server per rule host, which
   * takes the ConfigMap's ssl_ciphers when none of its Ingresses sets one, so a `*.` host's list
   * must not reach it (compile/host-tls.ts).
   */
  | { readonly ciphers: null };
